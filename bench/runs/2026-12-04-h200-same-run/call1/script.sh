#!/bin/bash
# The same-run tables of BENCHMARKS.md at main e8ef9b2 (kernel of 2dc7cb9): fmar-bench per dtype
# (fmar by its heuristic, Burn's fused path and matmul by theirs; built with cuda-nvrtc, no
# autotune), the PyTorch anchor in the same call (half precisions, then f32 and TF32), and the
# property harness pinned to the Hopper kernel.
set -u
mkdir -p /tmp/logs; rm -f /tmp/logs/*
save() { (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
for f in fmar-bench properties; do xz -dc .gpu/$f.xz > /tmp/$f && chmod +x /tmp/$f; done
here=$(pwd)
mkdir -p /tmp/w && cd /tmp/w
export RUST_BACKTRACE=1 BURN_DEVICE=cuda XDG_CACHE_HOME=/tmp/w/cache
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > /tmp/logs/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; save; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > $OUT/gpu.txt
SHAPES="1,4096,4096,4096;1,8192,8192,8192;1,16384,1024,4096;8,1024,1024,1024;64,128,128,128;1,128,4096,4096;1,16,4096,4096;1,1,4096,4096;1,64,64,64"
run bench_bf16 110 /tmp/fmar-bench --dtype bf16 --no-variants --budget-ms 80 --shapes "$SHAPES" --json $OUT/bf16.json
run bench_f16 110 /tmp/fmar-bench --dtype f16 --no-variants --budget-ms 80 --shapes "$SHAPES" --json $OUT/f16.json
run anchor 100 env OUT=$OUT ANCHOR_COMPILE=0 ANCHOR_LOOP=1 ANCHOR_DTYPES=bf16,f16 ANCHOR_SHAPES="$SHAPES" PYTHONUNBUFFERED=1 python3 $here/bench/scripts/torch_anchor.py
run bench_f32 100 /tmp/fmar-bench --dtype f32 --no-variants --budget-ms 60 --shapes "$SHAPES" --json $OUT/f32.json
mkdir -p /tmp/a32 && run anchor32 80 env OUT=/tmp/a32 ANCHOR_COMPILE=0 ANCHOR_LOOP=1 ANCHOR_DTYPES=f32,tf32 ANCHOR_SHAPES="$SHAPES" PYTHONUNBUFFERED=1 python3 $here/bench/scripts/torch_anchor.py
cp /tmp/a32/torch_anchor.json $OUT/torch_anchor_f32.json
run properties 140 env FMAR_KERNEL=hopper CUBECL_AUTOTUNE_LEVEL=minimal FMAR_PROPTEST_CASES=300 /tmp/properties --test-threads 1 random
{
for d in bf16 f16 f32; do echo "== $d"; grep -E "^\|" /tmp/logs/bench_$d.log | grep -E "fmar \||burn|FAILED" | head -40; done
echo "== properties"; grep -hE "test result|^  [A-Z0-9]+ fusion|panicked|cases" /tmp/logs/properties.log | tail -n 12
} >> $OUT/summary.txt
save
