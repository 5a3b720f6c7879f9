#!/usr/bin/env bash
# Same-run tables, bf16 and f16 (build without autotune), forward and forward + backward seeded with ones, PyTorch's
# anchor in the same call; the training example on the H200 (both models, same weights); the MLP step in f16 and f32.
set -u
cd .gpu && for b in fmar-bench mlp_step train; do xz -dk $b.xz && chmod +x $b; done && cd ..
export BURN_DEVICE=cuda RUST_BACKTRACE=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
B=$PWD/.gpu/fmar-bench
SHAPES="1,4096,4096,4096;1,8192,8192,8192;1,16384,1024,4096;8,1024,1024,1024;64,128,128,128;1,128,4096,4096;1,16,4096,4096;1,1,4096,4096;1,64,64,64"
mkdir -p /tmp/logs /tmp/anchor
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > /tmp/logs/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" | tee -a $OUT/summary.txt; (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
for dt in bf16 f16; do
  run bench_$dt 140 $B --dtype $dt --no-variants --budget-ms 80 --shapes "$SHAPES" --label "$(date -u +%F)" --json $OUT/$dt.json
done
(cd /tmp/anchor && OUT=/tmp/anchor ANCHOR_COMPILE=0 ANCHOR_DTYPES=bf16,f16 ANCHOR_SHAPES="$SHAPES" timeout 100 python3 $OLDPWD/bench/scripts/torch_anchor.py > /tmp/logs/anchor.log 2>&1); echo "anchor rc=$?" | tee -a $OUT/summary.txt
cp /tmp/anchor/torch_anchor.json $OUT/torch_anchor.json
run train 100 .gpu/train --epochs 8 --no-plot --check
run mlp_f16 30 .gpu/mlp_step --dtype f16 --rows 4096 --width 4096 --layers 4
run mlp_f32 30 .gpu/mlp_step --dtype f32 --rows 4096 --width 4096 --layers 4
for dt in bf16 f16; do grep -E "^\| [0-9]" /tmp/logs/bench_$dt.log | grep -v "burn matmul" | cut -c1-200; done
cut -c1-200 /tmp/logs/anchor.log | tail -20
tail -12 /tmp/logs/train.log; cat /tmp/logs/mlp_f16.log /tmp/logs/mlp_f32.log
