#!/usr/bin/env bash
# The masked gradient reads a broadcast gradient through its strides. Kernel mask test, speed (fmar; PyTorch in the same call), property harness with hopper pinned.
cd .gpu && for b in fmar-bench against_f64-c521a2fb969e5440 properties-b4eda2e1cddc2b3a; do xz -dk $b.xz && chmod +x $b; done && cd ..
export RUST_BACKTRACE=1 XDG_CACHE_HOME=/tmp/cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
SHAPES="1,4096,4096,4096;8,1024,1024,1024;64,128,128,128;1,16384,1024,4096"
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > $OUT/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" | tee -a $OUT/summary.txt; }
L="2026-12-02 H200 strided gradient"
(cd crates/kernel && FMAR_TEST_DEVICE=cuda timeout 200 ../../.gpu/against_f64-c521a2fb969e5440 --test-threads 1 mask_follows hopper_product) > $OUT/kernel.log 2>&1; echo "kernel rc=$?" | tee -a $OUT/summary.txt
export BURN_DEVICE=cuda
run bench_bf16_fmar 150 .gpu/fmar-bench --dtype bf16 --shapes "$SHAPES" --only fmar --budget-ms 300 --label "$L" --json $OUT/bench_bf16_fmar.json
run bench_f16_fmar 60 .gpu/fmar-bench --dtype f16 --shapes "1,4096,4096,4096" --only fmar --budget-ms 300 --label "$L" --json $OUT/bench_f16_fmar.json
(cd $OUT && OUT=$OUT ANCHOR_COMPILE=0 ANCHOR_DTYPES=f16,bf16 ANCHOR_SHAPES="$SHAPES" timeout 100 python3 $OLDPWD/bench/scripts/torch_anchor.py > $OUT/anchor.log 2>&1); echo "anchor rc=$?" | tee -a $OUT/summary.txt
FMAR_KERNEL=hopper FMAR_PROPTEST_ALIGN=8 FMAR_PROPTEST_CASES=16 CUBECL_AUTOTUNE_LEVEL=minimal run props_hopper 170 .gpu/properties-b4eda2e1cddc2b3a --test-threads 1 random --nocapture
{ grep -E "^test |test result|panicked" $OUT/kernel.log; grep -hE "^\| [0-9]" $OUT/bench_*.log; grep -E "fwd_bwd" $OUT/anchor.log | cut -c1-330; grep -E "test result|gradient products|panicked" $OUT/props_hopper.log; } > $OUT/digest.txt
cat $OUT/summary.txt $OUT/digest.txt
cd $OUT && tar czf logs.tgz --exclude logs.tgz --exclude digest.txt --exclude summary.txt * && find . -maxdepth 1 -type f ! -name logs.tgz ! -name digest.txt ! -name summary.txt -delete
