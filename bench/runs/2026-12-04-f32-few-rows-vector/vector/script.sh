#!/bin/bash
# The few-row f32 kernel with its lhs tile read as 16-byte vectors (a quarter of the shared-memory
# reads per FMA) and rows up to 32 (hb_vec, t_vec) against main's 724c35d (hb_new: scalar tile
# reads, rows up to 16, the copy + TF32 MMAs above): correctness first, then time.
set -u
. bench/scripts/device-lib.sh
unpack hb_vec hb_new t_vec
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
run ragged 120 /tmp/hb_vec --variants launch --dtypes f32 --lhs k,m --rhs n --reps 1 1,1,4096,4096 1,3,1000,2056 3,5,2048,1000 1,4,517,1032 1,9,4096,4096 1,16,4096,4096 1,17,2048,2048 2,24,1288,520 1,29,1001,2055 1,32,4096,4096 1,33,4096,4096
run ragged_mask 60 /tmp/hb_vec --variants launch --mask --dtypes f32 --lhs k --rhs n --reps 1 1,1,4096,4096 2,24,1288,520 1,32,4096,4096
run tests 150 /tmp/t_vec hopper mask few_row --test-threads 1
run memcheck 90 compute-sanitizer --tool memcheck /tmp/hb_vec --variants launch --mask --dtypes f32 --lhs k,m --rhs n --reps 1 1,1,4096,4096 3,5,2048,1000 2,29,1001,2055
L="1,1,4096,4096 1,4,4096,4096 1,16,4096,4096 1,24,4096,4096 1,32,4096,4096 1,1,8192,8192 1,8,4096,16384 1,32,8192,8192"
run time_new 90 /tmp/hb_new --variants launch --outputs 1 --dtypes f32 --rhs n --reps 300 $L
run time_vec 90 /tmp/hb_vec --variants launch --outputs 1 --dtypes f32 --rhs n --reps 300 $L
run time_vec_mask 60 /tmp/hb_vec --variants launch --mask --outputs 1 --dtypes f32 --rhs n --reps 300 1,1,4096,4096 1,16,4096,4096 1,32,4096,4096
{
for f in /tmp/logs/ragged.log /tmp/logs/ragged_mask.log /tmp/logs/memcheck.log; do echo "== $f"; grep -h "RESULT\|panic\|ERROR SUMMARY" $f | grep -v " ok (" | head -30; echo "ok: $(grep -c ' ok (' $f)"; done
grep -h "^test \|test result\|panicked" /tmp/logs/tests.log | head -20
for f in /tmp/logs/time_*; do echo "== $f"; grep -h RESULT $f | cut -c1-150; done
} >> $OUT/summary.txt
save
