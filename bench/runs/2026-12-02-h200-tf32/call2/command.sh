#!/usr/bin/env bash
# f32 through the Hopper kernel's TF32 path, through Burn (no autotune): the f32 table against Burn
# and PyTorch TF32 in the same call; the f32 MLP step; the training example (f32) on CUDA; bf16 sanity.
set -u
cd .gpu && for b in fmar-bench mlp_step train; do xz -dk $b.xz && chmod +x $b; done && cd ..
export BURN_DEVICE=cuda RUST_BACKTRACE=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
B=$PWD/.gpu/fmar-bench
SHAPES="1,4096,4096,4096;1,8192,8192,8192;1,16384,1024,4096;8,1024,1024,1024;64,128,128,128;1,128,4096,4096;1,16,4096,4096;1,1,4096,4096;1,64,64,64"
mkdir -p /tmp/logs /tmp/anchor
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > /tmp/logs/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" | tee -a $OUT/summary.txt; (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
run bench_f32 240 $B --dtype f32 --no-variants --budget-ms 80 --shapes "$SHAPES" --label "$(date -u +%F)" --json $OUT/f32.json
(cd /tmp/anchor && OUT=/tmp/anchor ANCHOR_COMPILE=0 ANCHOR_LOOP=1 ANCHOR_DTYPES=tf32 ANCHOR_SHAPES="$SHAPES" timeout 90 python3 $OLDPWD/bench/scripts/torch_anchor.py > /tmp/logs/anchor.log 2>&1); echo "anchor rc=$?" | tee -a $OUT/summary.txt
cp /tmp/anchor/torch_anchor.json $OUT/torch_anchor.json
run mlp_f32 40 .gpu/mlp_step --dtype f32 --rows 4096 --width 4096 --layers 4 --json $OUT/mlp_f32.json
run train 100 .gpu/train --epochs 8 --no-plot --check
run bench_bf16_sanity 60 $B --dtype bf16 --no-variants --no-backward --budget-ms 60 --shapes "1,4096,4096,4096" --json $OUT/bf16_sanity.json
(cd /tmp/logs && tar czf $OUT/logs.tgz .)
