#!/usr/bin/env bash
set -u
out=${OUT:-/tmp/out}
mkdir -p /tmp/bin "$out"
for f in hopper_bench against_f64 bench properties; do xz -dc .gpu/$f.xz > /tmp/bin/$f && chmod +x /tmp/bin/$f; done
cp .gpu/torch_anchor.py /tmp/
export RUST_BACKTRACE=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$out/gpu.txt"
step() { local name=$1 limit=$2; shift 2; local s=$(date +%s)
  timeout "$limit" "$@" > "$out/$name.log" 2>&1
  echo "=== $name: exit $? after $(( $(date +%s) - s )) s" | tee -a "$out/summary.txt"; }
FMAR_TEST_DEVICE=cuda FMAR_TEST_VARIANTS=hopper FMAR_KERNEL=hopper step contract 120 /tmp/bin/against_f64 --test-threads 1
grep -E "^test |test result|panicked" "$out/contract.log" | tail -25 | tee -a "$out/summary.txt"
B=/tmp/bin/hopper_bench
step bench_small 120 $B --variants hopper --rhs n --reps 200 1,1,4096,4096 1,16,4096,4096 1,64,4096,4096 1,128,4096,4096 64,128,128,128 1,64,64,64
grep -E "^RESULT|panicked" "$out/bench_small.log" | tee -a "$out/summary.txt"
step bench_mmajor 120 $B --variants hopper --lhs k,m --rhs n --reps 30 --dtypes bf16 1,4096,4096,4096 1,4096,16384,1024
grep -E "^RESULT|panicked" "$out/bench_mmajor.log" | tee -a "$out/summary.txt"
export BURN_DEVICE=cuda
cd /tmp
FMAR_KERNEL=hopper FMAR_PROPTEST_ALIGN=8 FMAR_PROPTEST_CASES=${CASES:-200} step properties_hopper 150 /tmp/bin/properties --test-threads 1 --nocapture
grep -E "^test |test result|panicked|property harness|  [A-Za-z0-9]+ fusion=" "$out/properties_hopper.log" | tail -30 | tee -a "$out/summary.txt"
for dt in bf16 f16; do
  step bench-$dt 100 /tmp/bin/bench --dtype $dt --no-variants --no-backward --budget-ms 80 \
    --shapes "1,4096,4096,4096;1,8192,8192,8192;1,16384,1024,4096;8,1024,1024,1024;64,128,128,128;1,128,4096,4096;1,16,4096,4096;1,1,4096,4096;1,64,64,64" \
    --json "$out/$dt.json" --label "$(date -u +%F)"
  grep "|" "$out/bench-$dt.log" | tail -40 >> "$out/summary.txt"
done
OUT=$out ANCHOR_COMPILE=0 step anchor 110 python3 /tmp/torch_anchor.py
tail -5 "$out/anchor.log" >> "$out/summary.txt"
