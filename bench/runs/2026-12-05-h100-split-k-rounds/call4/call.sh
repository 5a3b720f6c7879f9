#!/bin/bash
# ncu of b1c4ecb's kernels (hb_new): the split-K partial sums and second kernel at 1 and 128
# rows, and what each takes of the call.
set -u
. bench/scripts/device-lib.sh
unpack hb_new
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv >> $OUT/summary.txt
NCU="ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy --section WarpStateStats --import-source no"
for s in 1,1,4096,4096 1,128,4096,4096 1,16,4096,4096; do
  run ncu_$s 60 $NCU --launch-skip 0 --launch-count 2 -o /tmp/ncu_$s /tmp/hb_new --variants launch --dtypes f32 --lhs k --rhs n --reps 2 $s
  ncu -i /tmp/ncu_$s.ncu-rep --page details > /tmp/logs/details_$s.txt 2>&1
done
run nsys 60 nsys profile -o /tmp/nsys_new --stats=false /tmp/hb_new --variants launch --dtypes f32 --lhs k --rhs n --reps 50 1,1,4096,4096 1,128,4096,4096
nsys stats -r cuda_gpu_kern_sum /tmp/nsys_new.nsys-rep > /tmp/logs/nsys_kern.txt 2>&1
{
grep -hE "^  [a-zA-Z_0-9]+.*\(|Duration|DRAM Throughput|L2 Cache Throughput|Registers Per|Achieved Occupancy|Grid Size|Block Limit" /tmp/logs/details_*.txt | head -60
cat /tmp/logs/nsys_kern.txt | head -30
} >> $OUT/summary.txt
save
