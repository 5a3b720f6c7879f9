#!/bin/bash
# Split-K's 64-row cube with 6 stages instead of 5 (branch hopper-split-six f70c76c, which also
# holds the short lhs stages and the slot loop of 8a57841) against 8a57841 (hb_loop) and main
# (a0cc4e9): correctness of the whole branch first (every dtype and layout, m either side of 8,
# 16, 32 and 64, ragged n and k, batches; the contract's Hopper tests; memcheck), then ncu's
# device time, registers and occupancy, and 500 timed launches, at the shapes that take the
# 64-row split-K cube.
set -u
. bench/scripts/device-lib.sh
unpack hb_six hb_loop hb_main against_six
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
SIX="/tmp/hb_six --variants hopper --outputs 1"
run ragged_six 200 $SIX --dtypes bf16,f16,f32 --lhs k,m --rhs n,k --reps 1 1,1,4096,4096 1,8,4096,4096 1,3,1000,2056 3,5,2048,1000 1,1,4096,512 1,9,4096,4096 1,16,4096,4096 1,17,2048,2048 1,32,4096,4096 1,33,4096,4096 1,64,4096,4096 1,65,2048,2048 2,100,2048,1000 1,128,4096,4096
run tests_six 200 /tmp/against_six hopper --test-threads 1
run memcheck_six 120 compute-sanitizer --tool memcheck /tmp/hb_six --variants hopper --dtypes bf16,f32 --lhs k,m --rhs n,k --reps 2 1,1,4096,4096 3,8,2048,1000 1,20,2048,2048 1,64,2048,2048 2,100,2048,1000
M="gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,launch__occupancy_limit_registers,launch__grid_size"
NCU="ncu --clock-control none --metrics $M -k regex:fused_matmul --launch-skip 3 --launch-count 2"
for b in hb_main hb_loop hb_six; do
  for s in 1,64,4096,4096 1,128,4096,4096 4,64,2048,2048 1,1,4096,4096; do
    run ncu_${b}_$s 60 $NCU /tmp/$b --variants hopper --outputs 1 --rhs n --dtypes bf16,f16 --reps 5 $s
  done
done
L="1,64,4096,4096 1,128,4096,4096 4,64,2048,2048 1,48,8192,2048 1,1,4096,4096"
for b in hb_main hb_loop hb_six; do
  run time_$b 60 /tmp/$b --variants hopper --outputs 1 --rhs n --dtypes bf16,f16 --reps 500 $L
done
{
for f in /tmp/logs/ragged* /tmp/logs/memcheck*; do echo "== $f"; grep -h "RESULT\|error\|panic\|mismatch\|ERROR SUMMARY" $f | grep -v "UNAVAILABLE\| ok (" | head -40; echo "ok: $(grep -c ' ok (' $f)"; done
grep -h "test \|test result\|panicked" /tmp/logs/tests_six.log | head -30
for f in /tmp/logs/ncu*; do echo "== $f"; grep -h "registers_per\|occupancy_limit_reg\|gpu__time\|dram__" $f | sed 's/  */ /g'; done
for f in /tmp/logs/time_*; do echo "== $f"; grep -h RESULT $f | cut -c1-110; done
} >> $OUT/summary.txt
save
