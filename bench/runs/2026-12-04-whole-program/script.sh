#!/bin/bash
# The store overlap as first designed (hopper-epilogue-overlap 4d903df: producer warpgroup with
# 40 registers, consumers with 232 through setmaxnreg), with cubecl-cuda patched to load the PTX
# as a whole program (cuModuleLoadData on the PTX, which honours setmaxnreg) instead of the
# linker's relocatable cubin; main's kernel (4c28ee7) built and loaded the same way, as the
# reference: ncu device durations, short and sustained bursts, correctness (ragged shapes, the
# contract's Hopper tests, memcheck), registers per thread.
set -u
mkdir -p /tmp/logs; rm -f /tmp/logs/*
save() { (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
for f in hb_smr hb_mainwp against_smr; do xz -dc .gpu/$f.xz > /tmp/$f && chmod +x /tmp/$f; done
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > /tmp/logs/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; save; }
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
SMR="/tmp/hb_smr --variants hopper --outputs 1"
BASE="/tmp/hb_mainwp --variants hopper --outputs 1"
run ragged_smr 60 $SMR --dtypes bf16,f16 --lhs k,m --rhs n,k --reps 1 1,1600,328,3104 2,1000,264,2104 3,130,72,264 1,4000,2056,4104
NCU="ncu --clock-control none --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,launch__registers_per_thread,launch__block_size -k regex:fused_matmul --launch-skip 3 --launch-count 3"
for s in 1,4096,4096,4096 1,16384,1024,4096 1,8192,8192,8192; do
  run ncu_base_$s 60 $NCU $BASE --rhs n --dtypes bf16 --reps 10 $s
  run ncu_smr_$s 60 $NCU $SMR --rhs n --dtypes bf16 --reps 10 $s
done
L="1,4096,4096,4096 1,16384,1024,4096 1,8192,8192,8192"
for r in 1; do
  run short_base_$r 60 $BASE --rhs n --dtypes bf16,f16 --reps 200 $L
  run short_smr_$r 60 $SMR --rhs n --dtypes bf16,f16 --reps 200 $L
done
run sus_base 40 $BASE --rhs n --dtypes bf16 --reps 3000 1,4096,4096,4096 1,16384,1024,4096
run sus_smr 40 $SMR --rhs n --dtypes bf16 --reps 3000 1,4096,4096,4096 1,16384,1024,4096
run memcheck_smr 120 compute-sanitizer --tool memcheck /tmp/hb_smr --variants hopper --dtypes bf16 --lhs k --rhs n,k --reps 2 1,1600,328,3104 2,1000,264,2104
run tests_smr 200 /tmp/against_smr hopper --test-threads 1
save
{
for f in /tmp/logs/short* /tmp/logs/sus* /tmp/logs/ragged*; do echo "== $f"; grep -h "RESULT\|error\|panic\|mismatch" $f | grep -v UNAVAILABLE | head -60; done
for f in /tmp/logs/ncu*; do echo "== $f"; grep -h "gpu__time_duration\|cycles_elapsed\|registers\|block_size" $f; done
echo "== memcheck"; grep -h "ERROR SUMMARY\|RESULT" /tmp/logs/memcheck_smr.log
grep -h "test \|test result\|panicked" /tmp/logs/tests_smr.log | head -60
} >> $OUT/summary.txt
save
