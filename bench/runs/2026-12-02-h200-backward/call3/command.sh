#!/usr/bin/env bash
# Speed: forward and forward+backward through Burn, bf16, PyTorch's anchor in the same call; then a short property run.
cd .gpu && rm -f fmar-bench properties-b4eda2e1cddc2b3a && xz -dk fmar-bench.xz properties-b4eda2e1cddc2b3a.xz && chmod +x fmar-bench properties-b4eda2e1cddc2b3a && cd ..
export BURN_DEVICE=cuda RUST_BACKTRACE=1 XDG_CACHE_HOME=/tmp/cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
s=$(date +%s); timeout 300 .gpu/fmar-bench --dtype bf16 --shapes "64,128,128,128;1,4096,4096,4096;8,1024,1024,1024" --no-variants --budget-ms 300 --label "2026-12-02 H200 685bc06" --json $OUT/bench_bf16.json > $OUT/bench_bf16.log 2>&1; echo "bench rc=$? $(( $(date +%s)-s ))s" | tee -a $OUT/summary.txt
s=$(date +%s); (cd $OUT && OUT=$OUT ANCHOR_COMPILE=0 timeout 100 python3 $OLDPWD/.gpu/anchor_small.py > $OUT/anchor.log 2>&1); echo "anchor rc=$? $(( $(date +%s)-s ))s" | tee -a $OUT/summary.txt
s=$(date +%s); FMAR_KERNEL=hopper FMAR_PROPTEST_ALIGN=8 FMAR_PROPTEST_CASES=16 CUBECL_AUTOTUNE_LEVEL=minimal timeout 150 .gpu/properties-b4eda2e1cddc2b3a --test-threads 1 random --nocapture > $OUT/props_hopper.log 2>&1; echo "props rc=$? $(( $(date +%s)-s ))s" | tee -a $OUT/summary.txt
grep -E "^\|" $OUT/bench_bf16.log | head -40; cut -c1-300 $OUT/anchor.log; grep -E "result|gradient products|fusion=" $OUT/props_hopper.log
