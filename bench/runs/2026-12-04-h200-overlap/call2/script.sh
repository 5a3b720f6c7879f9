#!/bin/bash
# Store overlap (hopper-epilogue-overlap 52260f2: no producer warp, unit 0 fills the ring, a
# tile's stores under the next tile's first MMAs) against main's kernel (4c28ee7): ncu device
# durations, short, sustained and TF32 bursts, correctness (ragged shapes, the contract's Hopper
# tests, memcheck, racecheck).
set -u
mkdir -p /tmp/logs; rm -f /tmp/logs/*
save() { (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
for f in hb_main hb_ovl against_ovl; do xz -dc .gpu/$f.xz > /tmp/$f && chmod +x /tmp/$f; done
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > /tmp/logs/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; save; }
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
OVL="/tmp/hb_ovl --variants hopper --outputs 1"
BASE="/tmp/hb_main --variants hopper --outputs 1"
NCU="ncu --clock-control none --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second -k regex:fused_matmul --launch-skip 3 --launch-count 3"
for s in 1,4096,4096,4096 1,16384,1024,4096 1,8192,8192,8192; do
  run ncu_base_$s 60 $NCU $BASE --rhs n --dtypes bf16 --reps 10 $s
  run ncu_ovl_$s 60 $NCU $OVL --rhs n --dtypes bf16 --reps 10 $s
done
L="1,4096,4096,4096 1,16384,1024,4096 1,8192,8192,8192"
for r in 1 2; do
  run short_base_$r 60 $BASE --rhs n --dtypes bf16,f16 --reps 200 $L
  run short_ovl_$r 60 $OVL --rhs n --dtypes bf16,f16 --reps 200 $L
done
run tf32_base 40 $BASE --rhs k --dtypes f32 --reps 100 1,4096,4096,4096
run tf32_ovl 40 $OVL --rhs k --dtypes f32 --reps 100 1,4096,4096,4096
for r in 1 2; do
  run sus_base_$r 40 $BASE --rhs n --dtypes bf16 --reps 3000 1,4096,4096,4096 1,16384,1024,4096
  run sus_ovl_$r 40 $OVL --rhs n --dtypes bf16 --reps 3000 1,4096,4096,4096 1,16384,1024,4096
done
run ragged_ovl 60 $OVL --dtypes bf16,f16,f32 --lhs k,m --rhs n,k --reps 1 1,1600,328,3104 2,1000,264,2104 1,4000,520,4104 3,130,72,264
run memcheck_ovl 120 compute-sanitizer --tool memcheck /tmp/hb_ovl --variants hopper --dtypes bf16 --lhs k --rhs n,k --reps 2 1,1600,328,3104 2,1000,264,2104
run racecheck_ovl 150 compute-sanitizer --tool racecheck /tmp/hb_ovl --variants hopper --dtypes bf16,f16 --lhs k --rhs n --reps 1 1,600,136,1040
run tests_ovl 240 /tmp/against_ovl hopper --test-threads 1
save
{
for f in /tmp/logs/short* /tmp/logs/tf32* /tmp/logs/sus* /tmp/logs/ragged*; do echo "== $f"; grep -h "RESULT\|error\|panic\|mismatch" $f | grep -v UNAVAILABLE | head -60; done
for f in /tmp/logs/ncu*; do echo "== $f"; grep -h "gpu__time_duration\|cycles_elapsed" $f; done
echo "== memcheck"; grep -h "ERROR SUMMARY\|RESULT" /tmp/logs/memcheck_ovl.log
echo "== racecheck"; grep -h "ERROR SUMMARY\|RACECHECK SUMMARY\|hazard" /tmp/logs/racecheck_ovl.log | head
grep -h "test \|test result\|panicked" /tmp/logs/tests_ovl.log | head -60
} >> $OUT/summary.txt
save
