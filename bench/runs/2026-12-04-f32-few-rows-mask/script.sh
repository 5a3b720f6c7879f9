#!/bin/bash
# The few-row f32 path for the tracked forward (its second kernel writes the ReLU mask):
# the kernel crate's tests on the H200 (mask test with a batched few-row case), a mutant
# (plane OR cut short) that the mask test must catch, memcheck, then time against bf16.
set -u
. bench/scripts/device-lib.sh
unpack hb_mask t_mask t_mut
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
run tests 240 /tmp/t_mask --test-threads 1
run mutant 120 /tmp/t_mut mask_follows --test-threads 1
run memcheck 150 compute-sanitizer --tool memcheck /tmp/t_mask mask_follows --test-threads 1
run memcheck_hb 120 compute-sanitizer --tool memcheck /tmp/hb_mask --variants launch --mask --dtypes f32 --lhs k,m --rhs n --reps 2 1,1,4096,4096 3,5,2048,1000 1,16,1000,2056
L="1,1,4096,4096 1,4,4096,4096 1,16,4096,4096 3,5,1000,2056 1,1,8192,8192 1,8,4096,16384"
run ragged 150 /tmp/hb_mask --variants launch --mask --dtypes f32 --lhs k,m --rhs n --reps 1 1,1,4096,4096 1,3,1000,2056 3,5,2048,1000 1,4,517,1032 1,9,4096,4096 1,16,4096,4096 2,13,1288,520
run time_plain 90 /tmp/hb_mask --variants launch --outputs 1 --dtypes f32 --rhs n --reps 300 $L
run time_mask 90 /tmp/hb_mask --variants launch --mask --outputs 1 --dtypes f32 --rhs n --reps 300 $L
run time_mask_bf16 90 /tmp/hb_mask --variants launch --mask --outputs 1 --dtypes bf16 --rhs n --reps 300 $L
{
grep -h "test \|test result\|panicked" /tmp/logs/tests.log | grep -v " ok$" | head -30
echo "== mutant"; grep -h "test result\|panicked\|mask word" /tmp/logs/mutant.log | head -5
for f in /tmp/logs/memcheck.log /tmp/logs/memcheck_hb.log /tmp/logs/ragged.log; do echo "== $f"; grep -h "RESULT\|panic\|ERROR SUMMARY\|test result" $f | grep -v " ok (" | head -30; echo "ok: $(grep -c ' ok (' $f)"; done
for f in /tmp/logs/time_*; do echo "== $f"; grep -h RESULT $f | cut -c1-150; done
} >> $OUT/summary.txt
save
