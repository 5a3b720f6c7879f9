#!/bin/bash
# Stream-K with 32-bit run bounds (hopper-stream-k 1254419) against main (e8ef9b2): the driver's
# own assembly log for the stream-K kernel (C75xx gone?), ncu device durations, short, sustained
# and TF32 bursts, then correctness: ragged shapes, the contract's Hopper tests, memcheck.
set -u
mkdir -p /tmp/logs; rm -f /tmp/logs/*
save() { (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
for f in hb_main hb_sk against_sk; do xz -dc .gpu/$f.xz > /tmp/$f && chmod +x /tmp/$f; done
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > /tmp/logs/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; save; }
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
nvidia-smi -L > $OUT/gpu.txt
SK="/tmp/hb_sk --variants hopper --outputs 1"
BASE="/tmp/hb_main --variants hopper --outputs 1"
mkdir -p /tmp/ptx_sk /tmp/ptx_main
run dump_sk 60 env CUBECL_CUDA_DUMP_PTX=/tmp/ptx_sk $SK --rhs n --dtypes bf16 --reps 1 1,4096,4096,4096 1,16384,1024,4096
run dump_main 60 env CUBECL_CUDA_DUMP_PTX=/tmp/ptx_main $BASE --rhs n --dtypes bf16 --reps 1 1,4096,4096,4096
run jitlog_sk 120 python3 bench/scripts/jit_log.py /tmp/ptx_sk/*.ptx
run jitlog_main 120 python3 bench/scripts/jit_log.py /tmp/ptx_main/*.ptx
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
run memcheck_sk 120 compute-sanitizer --tool memcheck /tmp/hb_sk --variants hopper --dtypes bf16 --lhs k --rhs n,k --reps 2 1,1600,328,3104 2,1000,264,2104
run tests_sk 240 /tmp/against_sk hopper --test-threads 1
{
for f in /tmp/logs/jitlog*; do echo "== $f"; grep -hi "C75\|registers\|spill\|error" $f | sort | uniq -c | head -20; done
for f in /tmp/logs/short* /tmp/logs/tf32* /tmp/logs/sus* /tmp/logs/ragged*; do echo "== $f"; grep -h "RESULT\|error\|panic\|mismatch" $f | grep -v UNAVAILABLE | head -60; done
for f in /tmp/logs/ncu*; do echo "== $f"; grep -h "gpu__time_duration\|cycles_elapsed" $f; done
echo "== memcheck"; grep -h "ERROR SUMMARY\|RESULT" /tmp/logs/memcheck_sk.log
grep -h "test \|test result\|panicked" /tmp/logs/tests_sk.log | head -60
} >> $OUT/summary.txt
save
