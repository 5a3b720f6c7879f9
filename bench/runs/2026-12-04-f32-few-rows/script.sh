#!/bin/bash
# f32 at few rows with an N-major weight read as it is (branch f32-few-rows: split-K with f32
# FMAs, then a kernel that adds the slices, the bias and the ReLU) against main's head
# (hb_head, which copies the weight K-major for TF32 MMAs): correctness first (m of 1 to 32,
# ragged n and k, batches, lhs K- and M-major; the contract's Hopper tests; memcheck), then time.
set -u
. bench/scripts/device-lib.sh
unpack hb_few hb_head against_few
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
FEW="/tmp/hb_few --variants hopper --outputs 1"
run ragged 150 $FEW --dtypes f32 --lhs k,m --rhs n --reps 1 1,1,4096,4096 1,3,1000,2056 3,5,2048,1000 1,4,517,1032 1,8,4096,4096 1,9,4096,4096 1,16,4096,4096 1,17,2048,2048 1,32,4096,4096 2,24,1288,520 1,33,4096,4096
run tests 200 /tmp/against_few hopper --test-threads 1
run memcheck 120 compute-sanitizer --tool memcheck /tmp/hb_few --variants hopper --dtypes f32 --lhs k --rhs n --reps 2 1,1,4096,4096 3,5,2048,1000 1,20,1000,2056
L="1,1,4096,4096 1,4,4096,4096 1,16,4096,4096 1,32,4096,4096 1,1,8192,8192 1,8,4096,16384"
run time_head 90 /tmp/hb_head --variants hopper --outputs 1 --dtypes f32 --rhs n --reps 300 $L
run time_few 90 $FEW --dtypes f32 --rhs n --reps 300 $L
{
for f in /tmp/logs/ragged.log /tmp/logs/memcheck.log; do echo "== $f"; grep -h "RESULT\|panic\|ERROR SUMMARY" $f | grep -v " ok (" | head -30; echo "ok: $(grep -c ' ok (' $f)"; done
grep -h "test \|test result\|panicked" /tmp/logs/tests.log | head -30
for f in /tmp/logs/time_*; do echo "== $f"; grep -h RESULT $f | cut -c1-120; done
} >> $OUT/summary.txt
save
