#!/usr/bin/env bash
# Burn-level run: the property harness with hopper pinned, the forward benchmark per dtype
# (fmar's own choice, Burn's fused path, Burn's matmul alone), and the PyTorch anchor.
set -u
out=${OUT:-/tmp/out}
mkdir -p /tmp/bin "$out"
for f in bench properties; do [ -f .gpu/$f.xz ] && xz -dc .gpu/$f.xz > /tmp/bin/$f && chmod +x /tmp/bin/$f; done
export BURN_DEVICE=cuda RUST_BACKTRACE=1
cd /tmp
start=$(date +%s)
[ -x /tmp/bin/properties ] && FMAR_KERNEL=hopper FMAR_PROPTEST_CASES=${CASES:-150} timeout 200 /tmp/bin/properties --test-threads 1 > "$out/properties.log" 2>&1
echo "=== properties (hopper pinned) exit $? after $(( $(date +%s) - start )) s" | tee -a "$out/summary.txt"
grep -E "^test |test result|panicked" "$out/properties.log" | tail -20 | tee -a "$out/summary.txt"
for dt in bf16 f16; do
  s=$(date +%s)
  timeout 170 /tmp/bin/bench --dtype $dt --no-variants --no-backward --budget-ms 120 \
    --shapes "1,4096,4096,4096;1,8192,8192,8192;1,16384,1024,4096;8,1024,1024,1024;64,128,128,128;1,128,4096,4096;1,16,4096,4096;1,1,4096,4096" \
    --json "$out/$dt.json" --label "hopper kernel, $(date -u +%F)" > "$out/bench-$dt.log" 2>&1
  echo "=== bench $dt exit $? after $(( $(date +%s) - s )) s" | tee -a "$out/summary.txt"
  grep -vE "^\s*$" "$out/bench-$dt.log" | tail -30 >> "$out/summary.txt"
done
cd - > /dev/null
ANCHOR_COMPILE=0 timeout 140 python3 .gpu/torch_anchor.py > "$out/anchor.log" 2>&1
echo "=== anchor exit $?" | tee -a "$out/summary.txt"
cat "$out/summary.txt"
