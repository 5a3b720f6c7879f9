#!/usr/bin/env bash
# Split-K for few-row problems: contract tests (hopper pinned), sanitizer on the hopper test,
# hopper_bench on small m and the large shapes, ncu on the small-m launches, PyTorch anchor.
set -u
out=${OUT:?}
mkdir -p /tmp/bin
for f in against_f64 hopper_bench; do xz -dc .gpu/$f.xz > /tmp/bin/$f && chmod +x /tmp/bin/$f; done
export RUST_BACKTRACE=1
step() { local name=$1 limit=$2; shift 2; local s=$(date +%s)
  timeout "$limit" "$@" > "$out/$name.log" 2>&1
  echo "=== $name: exit $? after $(( $(date +%s) - s )) s"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
FMAR_TEST_DEVICE=cuda FMAR_TEST_VARIANTS=hopper FMAR_KERNEL=hopper step contract 150 /tmp/bin/against_f64 --test-threads 1
grep -E "test result|panicked|FAILED" "$out/contract.log" | tail -5
FMAR_TEST_DEVICE=cuda step sanitizer 150 compute-sanitizer --tool memcheck /tmp/bin/against_f64 hopper --test-threads 1
grep -E "ERROR SUMMARY|test result" "$out/sanitizer.log" | tail -3
SMALL="1,1,4096,4096 1,16,4096,4096 1,128,4096,4096 1,1,4096,1024 1,32,8192,2048"
step small 150 /tmp/bin/hopper_bench --variants hopper --reps 200 $SMALL
grep -E "^RESULT" "$out/small.log"
step large 120 /tmp/bin/hopper_bench --variants hopper --rhs n 1,4096,4096,4096 1,16384,1024,4096 1,8192,8192,8192
grep -E "^RESULT" "$out/large.log"
step ncu 120 ncu --clock-control none --metrics gpu__time_duration.sum /tmp/bin/hopper_bench --variants hopper --dtypes bf16 --rhs n --reps 3 1,1,4096,4096 1,128,4096,4096
grep -E "finish_split_k|fused_matmul|gpu__time_duration" "$out/ncu.log" | tail -24
step anchor 120 python3 .gpu/mini_anchor.py 1,1,4096,4096 1,16,4096,4096 1,128,4096,4096 1,1,4096,1024 1,32,8192,2048 1,4096,4096,4096 1,16384,1024,4096
grep ANCHOR "$out/anchor.log"
