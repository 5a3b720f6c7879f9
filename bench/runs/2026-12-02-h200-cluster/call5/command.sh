#!/usr/bin/env bash
# The half-precision same-run table after split-K in clusters: forward and forward + backward, nine shapes,
# fmar (no autotune) against Burn and PyTorch (bf16, f16) in the same call.
set -u
mkdir -p /tmp/logs /tmp/anchor
xz -dc .gpu/fmar-bench.xz > /tmp/fmar-bench && chmod +x /tmp/fmar-bench
export BURN_DEVICE=cuda RUST_BACKTRACE=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
SHAPES="1,4096,4096,4096;1,8192,8192,8192;1,16384,1024,4096;8,1024,1024,1024;64,128,128,128;1,128,4096,4096;1,16,4096,4096;1,1,4096,4096;1,64,64,64"
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > /tmp/logs/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" | tee -a $OUT/summary.txt; (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
for d in bf16 f16; do run bench_$d 110 /tmp/fmar-bench --dtype $d --no-variants --budget-ms 80 --shapes "$SHAPES" --label "$(date -u +%F)" --json $OUT/$d.json; done
(cd /tmp/anchor && OUT=/tmp/anchor ANCHOR_COMPILE=0 ANCHOR_LOOP=1 ANCHOR_DTYPES=bf16,f16 ANCHOR_SHAPES="$SHAPES" timeout 85 python3 $OLDPWD/bench/scripts/torch_anchor.py > /tmp/logs/anchor.log 2>&1); echo "anchor rc=$?" | tee -a $OUT/summary.txt
cp /tmp/anchor/torch_anchor.json $OUT/torch_anchor.json
(cd /tmp/logs && tar czf $OUT/logs.tgz .)
