#!/usr/bin/env bash
# f32 on the H200 without autotune: every variant forced at 4096^3 (forward), then fmar's heuristic (now taking CUDA's
# TF32 tensor cores for f32) against Burn on four shapes, forward and forward + backward; the MLP step in each dtype.
set -u
cd .gpu && for b in fmar-bench mlp_step; do xz -dk $b.xz && chmod +x $b; done && cd ..
export BURN_DEVICE=cuda RUST_BACKTRACE=1
mkdir -p /tmp/logs
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > /tmp/logs/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" | tee -a $OUT/summary.txt; (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
run f32_variants 120 .gpu/fmar-bench --dtype f32 --no-backward --budget-ms 60 --shapes "1,4096,4096,4096" --json $OUT/f32_variants.json
run f32_table 100 .gpu/fmar-bench --dtype f32 --no-variants --budget-ms 80 --shapes "1,4096,4096,4096;1,16384,1024,4096;8,1024,1024,1024;64,128,128,128" --json $OUT/f32.json
for dt in bf16 f16 f32; do run mlp_$dt 35 .gpu/mlp_step --dtype $dt --rows 4096 --width 4096 --layers 4 --json $OUT/mlp_$dt.json; done
grep -E "^\| [0-9]" /tmp/logs/f32_variants.log | cut -c1-160
grep -E "^\| [0-9]" /tmp/logs/f32_table.log | cut -c1-160
cat /tmp/logs/mlp_*.log
