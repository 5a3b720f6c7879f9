#!/bin/bash
# Ping-pong consumers (FMAR_HOPPER_PINGPONG=1: two warpgroups taking turns on 64x256 tiles, each
# stage's MMAs left running while the next are issued). Correctness first (ragged shapes in every
# layout and dtype, the contract's Hopper tests, memcheck, racecheck), then kernel time A/B against
# the 128x256 cooperative tile: short bursts and sustained.
set -u
mkdir -p /tmp/logs
save() { (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
xz -dc .gpu/hopper_bench.xz > /tmp/hopper_bench && chmod +x /tmp/hopper_bench
xz -dc .gpu/against_f64-93051e67efe9e162.xz > /tmp/against_f64 && chmod +x /tmp/against_f64
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > /tmp/logs/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; save; }
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
HB="/tmp/hopper_bench --variants hopper --outputs 1"
PP="env FMAR_HOPPER_PINGPONG=1"
run ragged_pp 90 $PP $HB --dtypes bf16,f16,f32 --lhs k,m --rhs n,k --reps 1 1,4000,520,4104 2,2100,264,2056 1,4096,64,4096 1,4096,200,4096 3,1000,1000,3000
run memcheck_pp 120 $PP compute-sanitizer --tool memcheck $HB --dtypes bf16,f32 --reps 1 --lhs k,m --rhs n,k 1,4000,520,4104 2,2100,200,2056
run racecheck_pp 90 $PP compute-sanitizer --tool racecheck $HB --dtypes bf16 --reps 1 --rhs n 1,4000,520,4104
run tests_pp 150 $PP /tmp/against_f64 hopper mask_follows --test-threads 1
L="1,4096,4096,4096 1,16384,1024,4096 1,8192,8192,8192"
for r in 1 2; do
  run short_base_$r 60 $HB --rhs n --dtypes bf16,f16 --reps 200 $L
  run short_pp_$r 60 $PP $HB --rhs n --dtypes bf16,f16 --reps 200 $L
done
run tf32_base 40 $HB --rhs k --dtypes f32 --reps 100 1,4096,4096,4096
run tf32_pp 40 $PP $HB --rhs k --dtypes f32 --reps 100 1,4096,4096,4096
Q=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active
timeout 100 nvidia-smi --query-gpu=$Q --format=csv -lms 200 > /tmp/logs/smi.csv 2>&1 &
for r in 1 2; do
  run sus_base_$r 40 $HB --rhs n --dtypes bf16 --reps 3000 1,4096,4096,4096 1,16384,1024,4096
  run sus_pp_$r 40 $PP $HB --rhs n --dtypes bf16 --reps 3000 1,4096,4096,4096 1,16384,1024,4096
done
wait
for f in /tmp/logs/ragged* /tmp/logs/short* /tmp/logs/tf32* /tmp/logs/sus*; do echo "== $f"; grep -h "RESULT\|error\|panic\|mismatch" $f | grep -v UNAVAILABLE | head -40; done >> $OUT/summary.txt
grep -h "test \|test result\|ERROR SUMMARY\|RACECHECK SUMMARY" /tmp/logs/tests_pp.log /tmp/logs/memcheck_pp.log /tmp/logs/racecheck_pp.log >> $OUT/summary.txt
save
