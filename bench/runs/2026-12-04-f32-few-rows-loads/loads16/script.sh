#!/bin/bash
# The few-row f32 kernel with 16 weight loads in flight a unit (was 8) and its second kernel
# loading 8 partial sums before adding them (hb_u16, t_u16) against the tree of 4d17a85 (hb_vec):
# correctness first, then time, then ncu at 1 and 16 rows.
set -u
. bench/scripts/device-lib.sh
unpack hb_u16 hb_vec t_u16
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
run ragged 120 /tmp/hb_u16 --variants launch --dtypes f32 --lhs k,m --rhs n --reps 1 1,1,4096,4096 1,3,1000,2056 3,5,2048,1000 1,4,517,1032 1,9,4096,4096 1,16,4096,4096 1,17,2048,2048 2,24,1288,520 1,29,1001,2055 1,32,4096,4096 1,7,3000,500 1,2,136,72
run ragged_mask 60 /tmp/hb_u16 --variants launch --mask --dtypes f32 --lhs k --rhs n --reps 1 1,1,4096,4096 2,24,1288,520 1,32,4096,4096
run tests 150 /tmp/t_u16 mask few_row --test-threads 1
run memcheck 90 compute-sanitizer --tool memcheck /tmp/hb_u16 --variants launch --mask --dtypes f32 --lhs k,m --rhs n --reps 1 1,1,4096,4096 3,5,2048,1000 2,29,1001,2055
L="1,1,4096,4096 1,4,4096,4096 1,16,4096,4096 1,24,4096,4096 1,32,4096,4096 1,1,8192,8192 1,8,4096,16384 1,32,8192,8192"
run time_vec 90 /tmp/hb_vec --variants launch --outputs 1 --dtypes f32 --rhs n --reps 300 $L
run time_u16 90 /tmp/hb_u16 --variants launch --outputs 1 --dtypes f32 --rhs n --reps 300 $L
run time_u16_mask 60 /tmp/hb_u16 --variants launch --mask --outputs 1 --dtypes f32 --rhs n --reps 300 1,1,4096,4096 1,16,4096,4096 1,32,4096,4096
NCU="ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats --section Occupancy --import-source no"
for m in 1 16; do
  run ncu_$m 60 $NCU -k regex:few_rows --launch-skip 4 --launch-count 2 -o /tmp/u16_$m /tmp/hb_u16 --variants launch --outputs 1 --rhs n --dtypes f32 --reps 5 1,$m,4096,4096
  ncu -i /tmp/u16_$m.ncu-rep --page details > /tmp/logs/details_u16_$m.txt 2>&1
done
{
for f in /tmp/logs/ragged.log /tmp/logs/ragged_mask.log /tmp/logs/memcheck.log; do echo "== $f"; grep -h "RESULT\|panic\|ERROR SUMMARY" $f | grep -v " ok (" | head -30; echo "ok: $(grep -c ' ok (' $f)"; done
grep -h "^test \|test result\|panicked" /tmp/logs/tests.log | head -20
for f in /tmp/logs/time_*; do echo "== $f"; grep -h RESULT $f | cut -c1-150; done
for f in /tmp/logs/details_*.txt; do echo "== $f"; grep -hE "^  [a-zA-Z_0-9]+.*\(|Duration|DRAM Throughput|Registers Per|Block Limit Registers|Achieved Occupancy" $f | head -20; done
} >> $OUT/summary.txt
save
