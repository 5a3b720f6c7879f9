#!/bin/bash
# Each warp stores its own 16 rows of a chunk (branch hopper-warp-stores: no warpgroup barriers
# in the epilogue, a 16-row TMA box) against main's kernel (cf27220): correctness first (ragged
# shapes in every dtype and layout, split-K shapes, the contract's Hopper tests, memcheck,
# racecheck), then ncu device times, short and sustained bursts.
set -u
mkdir -p /tmp/logs; rm -f /tmp/logs/*
save() { (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
for f in hb_ws hb_main against_ws; do xz -dc .gpu/$f.xz > /tmp/$f && chmod +x /tmp/$f; done
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > /tmp/logs/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; save; }
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
WS="/tmp/hb_ws --variants hopper --outputs 1"
BASE="/tmp/hb_main --variants hopper --outputs 1"
run ragged_ws 90 $WS --dtypes bf16,f16,f32 --lhs k,m --rhs n,k --reps 1 1,1600,328,3104 2,1000,264,2104 3,136,72,264 1,4000,2056,4104 1,1,4096,4096 1,16,4096,4096 1,128,4096,4096 1,100,1000,1000
NCU="ncu --clock-control none --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__cycles_elapsed.max -k regex:fused_matmul --launch-skip 3 --launch-count 3"
for s in 1,4096,4096,4096 1,16384,1024,4096 1,8192,8192,8192; do
  run ncu_base_$s 60 $NCU $BASE --rhs n --dtypes bf16 --reps 10 $s
  run ncu_ws_$s 60 $NCU $WS --rhs n --dtypes bf16 --reps 10 $s
done
L="1,4096,4096,4096 1,16384,1024,4096 1,8192,8192,8192"
run short_base 60 $BASE --rhs n --dtypes bf16,f16 --reps 200 $L
run short_ws 60 $WS --rhs n --dtypes bf16,f16 --reps 200 $L
run short_base_tf32 30 $BASE --rhs k --dtypes f32 --reps 200 1,4096,4096,4096
run short_ws_tf32 30 $WS --rhs k --dtypes f32 --reps 200 1,4096,4096,4096
run sus_base 40 $BASE --rhs n --dtypes bf16 --reps 3000 1,4096,4096,4096 1,16384,1024,4096
run sus_ws 40 $WS --rhs n --dtypes bf16 --reps 3000 1,4096,4096,4096 1,16384,1024,4096
run memcheck_ws 120 compute-sanitizer --tool memcheck /tmp/hb_ws --variants hopper --dtypes bf16,f32 --lhs k --rhs n,k --reps 2 1,1600,328,3104 2,1000,264,2104 1,16,4096,4096
run racecheck_ws 150 compute-sanitizer --tool racecheck /tmp/hb_ws --variants hopper --dtypes bf16 --lhs k --rhs n --reps 1 1,600,136,1040
run tests_ws 200 /tmp/against_ws hopper --test-threads 1
{
for f in /tmp/logs/short* /tmp/logs/sus* /tmp/logs/ragged*; do echo "== $f"; grep -h "RESULT\|error\|panic\|mismatch" $f | grep -v UNAVAILABLE | head -80; done
for f in /tmp/logs/ncu*; do echo "== $f"; grep -h "gpu__time_duration\|cycles_elapsed" $f; done
echo "== memcheck"; grep -h "ERROR SUMMARY\|RESULT" /tmp/logs/memcheck_ws.log
echo "== racecheck"; grep -h "ERROR SUMMARY\|RACECHECK SUMMARY\|hazard" /tmp/logs/racecheck_ws.log | head
grep -h "test \|test result\|panicked" /tmp/logs/tests_ws.log | head -60
} >> $OUT/summary.txt
save
