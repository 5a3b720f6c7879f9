#!/usr/bin/env bash
# Tracked forward writes the mask; one pass for g. Speed (fmar vs Burn's fused path, PyTorch in the same call), the MLP step's memory, path_proof.
cd .gpu && for b in fmar-bench mlp_step PATHPROOF; do xz -dk $b.xz && chmod +x $b; done && cd ..
export BURN_DEVICE=cuda RUST_BACKTRACE=1 XDG_CACHE_HOME=/tmp/cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
SHAPES="1,4096,4096,4096;8,1024,1024,1024;64,128,128,128;1,16384,1024,4096"
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > $OUT/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" | tee -a $OUT/summary.txt; }
L="2026-12-02 H200 mask"
run bench_bf16_fmar 150 .gpu/fmar-bench --dtype bf16 --shapes "$SHAPES" --only fmar --budget-ms 300 --label "$L" --json $OUT/bench_bf16_fmar.json
run bench_bf16_burn 150 .gpu/fmar-bench --dtype bf16 --shapes "$SHAPES" --only burn-fused --budget-ms 300 --label "$L" --json $OUT/bench_bf16_burn.json
run bench_f16_fmar 60 .gpu/fmar-bench --dtype f16 --shapes "1,4096,4096,4096" --only fmar --budget-ms 300 --label "$L" --json $OUT/bench_f16_fmar.json
run bench_f16_burn 60 .gpu/fmar-bench --dtype f16 --shapes "1,4096,4096,4096" --only burn-fused --budget-ms 300 --label "$L" --json $OUT/bench_f16_burn.json
run bench_bf16_fmar_again 60 .gpu/fmar-bench --dtype bf16 --shapes "1,4096,4096,4096" --only fmar --budget-ms 300 --label "$L second process" --json $OUT/bench_bf16_fmar_again.json
(cd $OUT && OUT=$OUT ANCHOR_COMPILE=0 ANCHOR_DTYPES=f16,bf16 ANCHOR_SHAPES="$SHAPES" timeout 100 python3 $OLDPWD/bench/scripts/torch_anchor.py > $OUT/anchor.log 2>&1); echo "anchor rc=$?" | tee -a $OUT/summary.txt
run mlp_bf16 120 .gpu/mlp_step --dtype bf16 --rows 4096 --width 4096 --layers 4
run path_proof 120 .gpu/PATHPROOF --test-threads 1 --nocapture
grep -hE "^\| [0-9]" $OUT/bench_*.log | grep -E "forward" ; cut -c1-400 $OUT/anchor.log | tail -12; cat $OUT/mlp_bf16.log; grep -E "^test |test result|kept|panicked" $OUT/path_proof.log
