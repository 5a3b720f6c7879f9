#!/usr/bin/env bash
# Kernel-level call: contract suite (hopper pinned), sanitizer, bench, mini anchor.
set -u
out=${OUT:-/tmp/out}
mkdir -p /tmp/bin "$out"
for f in hopper_bench against_f64; do xz -dc .gpu/$f.xz > /tmp/bin/$f && chmod +x /tmp/bin/$f; done
export RUST_BACKTRACE=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$out/gpu.txt"
step() { local name=$1 limit=$2; shift 2; local s=$(date +%s)
  timeout "$limit" "$@" > "$out/$name.log" 2>&1
  echo "=== $name: exit $? after $(( $(date +%s) - s )) s" | tee -a "$out/summary.txt"; }
B=/tmp/bin/hopper_bench
step sanitizer 150 compute-sanitizer --tool memcheck --print-limit 20 $B --variants hopper --reps 1 --rhs n,k \
  1,130,72,264 2,500,136,2000 1,1,4104,1000 1,1000,200,4000 1,1000,136,2000
grep -E "RESULT|ERROR SUMMARY|Invalid|error" "$out/sanitizer.log" | head -40 | tee -a "$out/summary.txt"
step bench_large 200 $B --variants hopper --rhs n,k --reps 30 1,4096,4096,4096 1,16384,1024,4096 1,8192,8192,8192
grep -E "^RESULT|panicked" "$out/bench_large.log" | tee -a "$out/summary.txt"
step bench_small 150 $B --variants hopper,launch,double_mma --rhs n --reps 200 \
  1,1,4096,4096 1,16,4096,4096 1,128,4096,4096 8,1024,1024,1024 64,128,128,128 1,64,64,64 1,2048,2048,2048
grep -E "^RESULT|panicked" "$out/bench_small.log" | tee -a "$out/summary.txt"
FMAR_TEST_DEVICE=cuda FMAR_TEST_VARIANTS=hopper FMAR_KERNEL=hopper step contract 200 /tmp/bin/against_f64 --test-threads 1
grep -E "^test |test result|panicked" "$out/contract.log" | tail -30 | tee -a "$out/summary.txt"
step anchor 120 python3 .gpu/mini_anchor.py 1,4096,4096,4096 1,16384,1024,4096 1,8192,8192,8192 1,1,4096,4096 1,16,4096,4096 1,128,4096,4096 1,1024,1024,1024 1,2048,2048,2048
grep ANCHOR "$out/anchor.log" | tee -a "$out/summary.txt"
