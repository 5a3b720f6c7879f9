#!/bin/bash
# Why bf16 at 16 and 32 rows ran slower with short lhs stages where f16 ran faster: the
# registers and the occupancy each split-K kernel launched with (ncu's launch statistics), for
# hb_short (56a0e57), hb_loop (56a0e57 with the slots added in a loop), hb_main (a0cc4e9).
set -u
. bench/scripts/device-lib.sh
unpack hb_short hb_loop hb_main
M="gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,launch__occupancy_limit_warps,launch__occupancy_limit_barriers,launch__shared_mem_per_block_static,launch__shared_mem_per_block_dynamic,sm__warps_active.avg.pct_of_peak_sustained_active,launch__occupancy_per_cluster_size,launch__cluster_max_active_per_gpu"
NCU="ncu --clock-control none --metrics $M -k regex:fused_matmul --launch-skip 3 --launch-count 1"
for b in hb_short hb_loop hb_main; do
  for d in bf16 f16; do
    for s in 1,1,4096,4096 1,16,4096,4096 1,32,4096,4096; do
      run ncu_${b}_${d}_$s 60 $NCU /tmp/$b --variants hopper --outputs 1 --rhs n --dtypes $d --reps 5 $s
    done
  done
done
L="1,1,4096,4096 1,16,4096,4096 1,32,4096,4096 1,4,8192,8192"
for b in hb_main hb_short hb_loop; do
  run time_$b 60 /tmp/$b --variants hopper --outputs 1 --rhs n --dtypes bf16,f16 --reps 500 $L
done
{
for f in /tmp/logs/ncu*; do echo "== $f"; grep -h "registers_per\|occupancy_limit\|warps_active\|gpu__time\|dram__\|shared_mem_per\|cluster" $f | sed 's/  */ /g'; done
for f in /tmp/logs/time_*; do echo "== $f"; grep -h RESULT $f | cut -c1-120; done
} >> $OUT/summary.txt
save
