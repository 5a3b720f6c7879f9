#!/bin/bash
# The few-row f32 kernel as in s3 (vector tile reads, rows up to 32), its next weight rows now
# loaded before the FMAs of the current ones (hb_pre, t_pre), against the same without (hb_vec):
# correctness first, then time.
set -u
. bench/scripts/device-lib.sh
unpack hb_pre hb_vec t_pre
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
run ragged 120 /tmp/hb_pre --variants launch --dtypes f32 --lhs k,m --rhs n --reps 1 1,1,4096,4096 1,3,1000,2056 3,5,2048,1000 1,4,517,1032 1,9,4096,4096 1,16,4096,4096 1,17,2048,2048 2,24,1288,520 1,29,1001,2055 1,32,4096,4096 1,33,4096,4096
run ragged_mask 60 /tmp/hb_pre --variants launch --mask --dtypes f32 --lhs k --rhs n --reps 1 1,1,4096,4096 2,24,1288,520 1,32,4096,4096
run tests 150 /tmp/t_pre mask few_row --test-threads 1
run memcheck 90 compute-sanitizer --tool memcheck /tmp/hb_pre --variants launch --mask --dtypes f32 --lhs k,m --rhs n --reps 1 1,1,4096,4096 3,5,2048,1000 2,29,1001,2055
L="1,1,4096,4096 1,4,4096,4096 1,16,4096,4096 1,24,4096,4096 1,32,4096,4096 1,1,8192,8192 1,8,4096,16384 1,32,8192,8192"
run time_vec 90 /tmp/hb_vec --variants launch --outputs 1 --dtypes f32 --rhs n --reps 300 $L
run time_pre 90 /tmp/hb_pre --variants launch --outputs 1 --dtypes f32 --rhs n --reps 300 $L
run time_pre_mask 60 /tmp/hb_pre --variants launch --mask --outputs 1 --dtypes f32 --rhs n --reps 300 1,1,4096,4096 1,16,4096,4096 1,32,4096,4096
{
for f in /tmp/logs/ragged.log /tmp/logs/ragged_mask.log /tmp/logs/memcheck.log; do echo "== $f"; grep -h "RESULT\|panic\|ERROR SUMMARY" $f | grep -v " ok (" | head -30; echo "ok: $(grep -c ' ok (' $f)"; done
grep -h "^test \|test result\|panicked" /tmp/logs/tests.log | head -20
for f in /tmp/logs/time_*; do echo "== $f"; grep -h RESULT $f | cut -c1-150; done
} >> $OUT/summary.txt
save
