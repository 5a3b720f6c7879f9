#!/bin/bash
# Split-K at few rows with short lhs stages (branch hopper-short-lhs 56a0e57: 8, 16 or 32 rows
# of lhs a stage, 9, 9 or 7 stages a cube) against main's kernel (a0cc4e9): correctness first (m <= 8
# in every dtype and layout, ragged n and k, batches, the rows either side of 8, 16, 32, the contract's
# Hopper tests, memcheck), then ncu device time and DRAM throughput, short bursts.
set -u
. bench/scripts/device-lib.sh
unpack hb_short hb_main against_short
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
SHORT="/tmp/hb_short --variants hopper --outputs 1"
BASE="/tmp/hb_main --variants hopper --outputs 1"
run ragged_short 180 $SHORT --dtypes bf16,f16,f32 --lhs k,m --rhs n,k --reps 1 1,1,4096,4096 1,8,4096,4096 1,3,1000,2056 3,5,2048,1000 1,1,4096,512 1,9,4096,4096 1,16,4096,4096 1,17,2048,2048 1,32,4096,4096 1,33,4096,4096
run tests_short 200 /tmp/against_short hopper --test-threads 1
run memcheck_short 120 compute-sanitizer --tool memcheck /tmp/hb_short --variants hopper --dtypes bf16,f32 --lhs k --rhs n,k --reps 2 1,1,4096,4096 3,5,2048,1000 1,20,2048,2048
NCU="ncu --clock-control none --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size -k regex:fused_matmul --launch-skip 3 --launch-count 3"
for s in 1,1,4096,4096 1,16,4096,4096 1,32,4096,4096 1,1,8192,8192; do
  run ncu_base_$s 60 $NCU $BASE --rhs n --dtypes bf16 --reps 10 $s
  run ncu_short_$s 60 $NCU $SHORT --rhs n --dtypes bf16 --reps 10 $s
done
L="1,1,4096,4096 1,16,4096,4096 1,32,4096,4096 1,4,8192,8192"
run short_base 60 $BASE --rhs n,k --dtypes bf16,f16 --reps 500 $L
run short_short 60 $SHORT --rhs n,k --dtypes bf16,f16 --reps 500 $L
{
for f in /tmp/logs/short_* /tmp/logs/ragged*; do echo "== $f"; grep -h "RESULT\|error\|panic\|mismatch" $f | grep -v UNAVAILABLE | head -90; done
for f in /tmp/logs/ncu*; do echo "== $f"; grep -h "gpu__time_duration\|dram__throughput\|grid_size" $f; done
echo "== memcheck"; grep -h "ERROR SUMMARY\|RESULT" /tmp/logs/memcheck_short.log
grep -h "test \|test result\|panicked" /tmp/logs/tests_short.log | head -60
} >> $OUT/summary.txt
save
