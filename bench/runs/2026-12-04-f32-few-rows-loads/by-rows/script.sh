#!/bin/bash
# The few-row f32 kernel with the loads in flight chosen by row count (16 at 8 and 16 rows, 8
# at 4 and 32) and the second kernel batching its loads (hb_sel, t_sel) against the tree of
# 4d17a85 (hb_vec): correctness first, then time.
set -u
. bench/scripts/device-lib.sh
unpack hb_sel hb_vec t_sel
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
run ragged 120 /tmp/hb_sel --variants launch --dtypes f32 --lhs k,m --rhs n --reps 1 1,1,4096,4096 1,3,1000,2056 3,5,2048,1000 1,4,517,1032 1,9,4096,4096 1,16,4096,4096 1,17,2048,2048 2,24,1288,520 1,29,1001,2055 1,32,4096,4096 1,7,3000,500 1,2,136,72
run ragged_mask 60 /tmp/hb_sel --variants launch --mask --dtypes f32 --lhs k --rhs n --reps 1 1,1,4096,4096 2,24,1288,520 1,32,4096,4096
run tests 150 /tmp/t_sel mask few_row --test-threads 1
run memcheck 90 compute-sanitizer --tool memcheck /tmp/hb_sel --variants launch --mask --dtypes f32 --lhs k,m --rhs n --reps 1 1,1,4096,4096 3,5,2048,1000 2,29,1001,2055
L="1,1,4096,4096 1,4,4096,4096 1,16,4096,4096 1,24,4096,4096 1,32,4096,4096 1,1,8192,8192 1,8,4096,16384 1,32,8192,8192"
run time_vec 90 /tmp/hb_vec --variants launch --outputs 1 --dtypes f32 --rhs n --reps 300 $L
run time_sel 90 /tmp/hb_sel --variants launch --outputs 1 --dtypes f32 --rhs n --reps 300 $L
run time_sel_mask 60 /tmp/hb_sel --variants launch --mask --outputs 1 --dtypes f32 --rhs n --reps 300 1,1,4096,4096 1,16,4096,4096 1,32,4096,4096
{
for f in /tmp/logs/ragged.log /tmp/logs/ragged_mask.log /tmp/logs/memcheck.log; do echo "== $f"; grep -h "RESULT\|panic\|ERROR SUMMARY" $f | grep -v " ok (" | head -30; echo "ok: $(grep -c ' ok (' $f)"; done
grep -h "^test \|test result\|panicked" /tmp/logs/tests.log | head -20
for f in /tmp/logs/time_*; do echo "== $f"; grep -h RESULT $f | cut -c1-150; done
for f in /tmp/logs/details_*.txt; do echo "== $f"; grep -hE "^  [a-zA-Z_0-9]+.*\(|Duration|DRAM Throughput|Registers Per|Block Limit Registers|Achieved Occupancy" $f | head -20; done
} >> $OUT/summary.txt
save
