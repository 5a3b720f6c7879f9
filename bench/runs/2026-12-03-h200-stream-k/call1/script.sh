#!/bin/bash
# Stream-K for the last round of tiles (hb_sk, against_sk) against main (hb_main): correctness
# first (ragged shapes in every dtype and layout, the contract's Hopper tests with stream-K
# problems, the same tests on a build whose finishing cubes drop the other cubes' sums, which
# must fail, memcheck, racecheck), then kernel time A/B: short bursts and sustained.
set -u
mkdir -p /tmp/logs; rm -f /tmp/logs/*
save() { (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
for f in hb_main hb_sk against_sk against_sk_broken; do xz -dc .gpu/$f.xz > /tmp/$f && chmod +x /tmp/$f; done
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > /tmp/logs/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; save; }
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
nvidia-smi -L > $OUT/gpu.txt
SK="/tmp/hb_sk --variants hopper --outputs 1"
BASE="/tmp/hb_main --variants hopper --outputs 1"
run ragged_sk 120 $SK --dtypes bf16,f16,f32 --lhs k,m --rhs n,k --reps 1 1,4000,520,4104 3,1000,1000,3000 1,1600,328,3104 2,1000,264,2104 1,4096,4096,4096 1,16384,1024,4096
run tests_sk 240 /tmp/against_sk hopper mask_follows --test-threads 1
run tests_broken 240 /tmp/against_sk_broken hopper_runs --test-threads 1
run memcheck_sk 150 compute-sanitizer --tool memcheck $SK --dtypes bf16,f32 --reps 1 --lhs k,m --rhs n,k 1,1600,328,3104 2,1000,264,2104
run racecheck_sk 120 compute-sanitizer --tool racecheck $SK --dtypes bf16 --reps 1 --rhs n 1,1600,328,3104
L="1,4096,4096,4096 1,16384,1024,4096 1,8192,8192,8192"
for r in 1 2; do
  run short_base_$r 60 $BASE --rhs n --dtypes bf16,f16 --reps 200 $L
  run short_sk_$r 60 $SK --rhs n --dtypes bf16,f16 --reps 200 $L
done
run tf32_base 40 $BASE --rhs k --dtypes f32 --reps 100 1,4096,4096,4096
run tf32_sk 40 $SK --rhs k --dtypes f32 --reps 100 1,4096,4096,4096
Q=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active
timeout 100 nvidia-smi --query-gpu=$Q --format=csv -lms 200 > /tmp/logs/smi.csv 2>&1 &
for r in 1 2; do
  run sus_base_$r 40 $BASE --rhs n --dtypes bf16 --reps 3000 1,4096,4096,4096 1,16384,1024,4096
  run sus_sk_$r 40 $SK --rhs n --dtypes bf16 --reps 3000 1,4096,4096,4096 1,16384,1024,4096
done
wait
for f in /tmp/logs/ragged* /tmp/logs/short* /tmp/logs/tf32* /tmp/logs/sus*; do echo "== $f"; grep -h "RESULT\|error\|panic\|mismatch" $f | grep -v UNAVAILABLE | head -60; done >> $OUT/summary.txt
grep -h "test \|test result\|ERROR SUMMARY\|RACECHECK SUMMARY\|panicked\|mismatch" /tmp/logs/tests_sk.log /tmp/logs/tests_broken.log /tmp/logs/memcheck_sk.log /tmp/logs/racecheck_sk.log | head -80 >> $OUT/summary.txt
save
