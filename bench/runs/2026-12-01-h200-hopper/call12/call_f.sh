#!/usr/bin/env bash
# Split-K on 64 x 64 tiles only: contract tests (hopper pinned), sanitizer on the hopper test,
# small m; the large shapes writing one output buffer vs eight in turn; cubecl's compilation
# cache across two processes; PyTorch anchor.
set -u
out=${OUT:?}
root=$PWD
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
step outputs 150 bash -c "/tmp/bin/hopper_bench --variants hopper --rhs n --outputs 1 1,4096,4096,4096 1,16384,1024,4096; /tmp/bin/hopper_bench --variants hopper --rhs n --outputs 8 1,4096,4096,4096 1,16384,1024,4096"
grep -E "^RESULT" "$out/outputs.log"
mkdir -p /tmp/cc && printf '[compilation]\ncache = true\n' > /tmp/cc/cubecl.toml && cd /tmp/cc
step cache1 120 /tmp/bin/hopper_bench --variants hopper --rhs n --reps 3 1,1,4096,4096 1,4096,4096,4096 1,64,64,64
step cache2 120 /tmp/bin/hopper_bench --variants hopper --rhs n --reps 3 1,1,4096,4096 1,4096,4096,4096 1,64,64,64
grep -E "^RESULT" "$out/cache1.log" "$out/cache2.log" | sed 's/ok (/\n   (/'
find / -xdev -name "*.db" -newer /tmp/cc/cubecl.toml 2>/dev/null | head; ls -la ~/.cache/cubecl 2>/dev/null
cd "$root"
step anchor 120 python3 .gpu/mini_anchor.py $SMALL 1,4096,4096,4096 1,16384,1024,4096
grep ANCHOR "$out/anchor.log"
