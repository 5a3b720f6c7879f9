#!/usr/bin/env bash
# f16 forward and forward+backward at 4096^3 through Burn; another short property run.
cd .gpu && rm -f fmar-bench properties-b4eda2e1cddc2b3a && xz -dk fmar-bench.xz properties-b4eda2e1cddc2b3a.xz && chmod +x fmar-bench properties-b4eda2e1cddc2b3a && cd ..
export BURN_DEVICE=cuda RUST_BACKTRACE=1 XDG_CACHE_HOME=/tmp/cache
s=$(date +%s); timeout 200 .gpu/fmar-bench --dtype f16 --shapes "1,4096,4096,4096" --no-variants --budget-ms 300 --label "2026-12-02 H200 685bc06" --json $OUT/bench_f16.json > $OUT/bench_f16.log 2>&1; echo "bench rc=$? $(( $(date +%s)-s ))s" | tee -a $OUT/summary.txt
s=$(date +%s); FMAR_KERNEL=hopper FMAR_PROPTEST_ALIGN=8 FMAR_PROPTEST_CASES=16 CUBECL_AUTOTUNE_LEVEL=minimal timeout 100 .gpu/properties-b4eda2e1cddc2b3a --test-threads 1 random --nocapture > $OUT/props_hopper.log 2>&1; echo "props rc=$? $(( $(date +%s)-s ))s" | tee -a $OUT/summary.txt
grep -E "^\|" $OUT/bench_f16.log | head; grep -E "result|gradient products|fusion=" $OUT/props_hopper.log
