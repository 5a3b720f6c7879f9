#!/bin/bash
# Stream-K, second build: the flags zeroed by a kernel on the stream (call 1 zeroed them with a
# copy from the host, which synchronised the stream every launch). ncu's kernel durations (device
# time alone) and kernel time A/B against main, short bursts and sustained; then ragged shapes
# and the contract's Hopper tests (the stream-K problem whose rhs had the wrong rank is fixed).
set -u
mkdir -p /tmp/logs; rm -f /tmp/logs/*
save() { (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
for f in hb_main hb_sk against_sk; do xz -dc .gpu/$f.xz > /tmp/$f && chmod +x /tmp/$f; done
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > /tmp/logs/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; save; }
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
nvidia-smi -L > $OUT/gpu.txt
SK="/tmp/hb_sk --variants hopper --outputs 1"
BASE="/tmp/hb_main --variants hopper --outputs 1"
NCU="ncu --clock-control none --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second -k regex:fused_matmul --launch-skip 3 --launch-count 3"
for s in 1,4096,4096,4096 1,16384,1024,4096 1,8192,8192,8192; do
  run ncu_base_$s 60 $NCU $BASE --rhs n --dtypes bf16 --reps 10 $s
  run ncu_sk_$s 60 $NCU $SK --rhs n --dtypes bf16 --reps 10 $s
done
L="1,4096,4096,4096 1,16384,1024,4096 1,8192,8192,8192"
for r in 1 2; do
  run short_base_$r 60 $BASE --rhs n --dtypes bf16,f16 --reps 200 $L
  run short_sk_$r 60 $SK --rhs n --dtypes bf16,f16 --reps 200 $L
done
run tf32_base 40 $BASE --rhs k --dtypes f32 --reps 100 1,4096,4096,4096
run tf32_sk 40 $SK --rhs k --dtypes f32 --reps 100 1,4096,4096,4096
for r in 1 2; do
  run sus_base_$r 40 $BASE --rhs n --dtypes bf16 --reps 3000 1,4096,4096,4096 1,16384,1024,4096
  run sus_sk_$r 40 $SK --rhs n --dtypes bf16 --reps 3000 1,4096,4096,4096 1,16384,1024,4096
done
run ragged_sk 60 $SK --dtypes bf16,f16,f32 --lhs k,m --rhs n,k --reps 1 1,1600,328,3104 2,1000,264,2104 1,4000,520,4104
run tests_sk 240 /tmp/against_sk hopper_runs --test-threads 1
for f in /tmp/logs/short* /tmp/logs/tf32* /tmp/logs/sus* /tmp/logs/ragged*; do echo "== $f"; grep -h "RESULT\|error\|panic\|mismatch" $f | grep -v UNAVAILABLE | head -60; done >> $OUT/summary.txt
for f in /tmp/logs/ncu*; do echo "== $f"; grep -h "gpu__time_duration\|cycles_elapsed" $f; done >> $OUT/summary.txt
grep -h "test \|test result\|panicked" /tmp/logs/tests_sk.log | head -40 >> $OUT/summary.txt
save
