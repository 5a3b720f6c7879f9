#!/usr/bin/env bash
# Final check of the committed kernel: contract tests (hopper pinned), property harness with
# hopper pinned on TMA-aligned dims, Burn-level benchmark of both dtypes, PyTorch anchor.
set -u
out=${OUT:?}
mkdir -p /tmp/bin /tmp/anchor
for f in against_f64 bench properties; do [ -f .gpu/$f.xz ] && xz -dc .gpu/$f.xz > /tmp/bin/$f && chmod +x /tmp/bin/$f; done
cp .gpu/torch_anchor.py /tmp/
export RUST_BACKTRACE=1
step() { local name=$1 limit=$2; shift 2; local s=$(date +%s)
  timeout "$limit" "$@" > "$out/$name.log" 2>&1
  echo "=== $name: exit $? after $(( $(date +%s) - s )) s"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
FMAR_TEST_DEVICE=cuda FMAR_TEST_VARIANTS=hopper FMAR_KERNEL=hopper step contract 120 /tmp/bin/against_f64 --test-threads 1
grep -E "test result|panicked|FAILED" "$out/contract.log" | tail -5
export BURN_DEVICE=cuda
cd /tmp
FMAR_KERNEL=hopper FMAR_PROPTEST_ALIGN=8 FMAR_PROPTEST_CASES=${CASES:-240} step properties 200 /tmp/bin/properties --test-threads 1 --nocapture
grep -E "^test |test result|panicked|property harness|  [A-Za-z0-9]+ fusion=" "$out/properties.log" | tail -20
if [ -x /tmp/bin/bench ]; then
for dt in bf16 f16; do
  step bench-$dt 100 /tmp/bin/bench --dtype $dt --no-variants --no-backward --budget-ms 80 \
    --shapes "1,4096,4096,4096;1,8192,8192,8192;1,16384,1024,4096;8,1024,1024,1024;64,128,128,128;1,128,4096,4096;1,16,4096,4096;1,1,4096,4096;1,64,64,64" \
    --json "$out/$dt.json" --label "$(date -u +%F)"
  grep "|" "$out/bench-$dt.log" | grep -E "fmar|fused" | awk -F'|' '{print $2,$5,$7,$8,$9,$10}'
done
OUT=/tmp/anchor ANCHOR_COMPILE=0 step anchor 110 python3 /tmp/torch_anchor.py
cp /tmp/anchor/torch_anchor.json "$out/" 2>/dev/null
fi
