#!/usr/bin/env bash
# Same-run tables again, bf16 and f16, with the benchmark's new warm-up before timing, PyTorch's anchor in the same
# call; the property harness (forward and every gradient) with the hopper variant pinned at scale; path_proof.
set -u
cd .gpu && for b in fmar-bench properties path_proof; do xz -dk $b.xz && chmod +x $b; done && cd ..
export BURN_DEVICE=cuda RUST_BACKTRACE=1 XDG_CACHE_HOME=/tmp/cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
B=$PWD/.gpu/fmar-bench
SHAPES="1,4096,4096,4096;1,8192,8192,8192;1,16384,1024,4096;8,1024,1024,1024;64,128,128,128;1,128,4096,4096;1,16,4096,4096;1,1,4096,4096;1,64,64,64"
mkdir -p /tmp/logs /tmp/anchor
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > /tmp/logs/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" | tee -a $OUT/summary.txt; (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
for dt in bf16 f16; do
  run bench_$dt 110 $B --dtype $dt --no-variants --budget-ms 80 --shapes "$SHAPES" --label "$(date -u +%F)" --json $OUT/$dt.json
done
(cd /tmp/anchor && OUT=/tmp/anchor ANCHOR_COMPILE=0 ANCHOR_DTYPES=bf16,f16 ANCHOR_SHAPES="$SHAPES" timeout 90 python3 $OLDPWD/bench/scripts/torch_anchor.py > /tmp/logs/anchor.log 2>&1); echo "anchor rc=$?" | tee -a $OUT/summary.txt
cp /tmp/anchor/torch_anchor.json $OUT/torch_anchor.json
run bench_f32 40 $B --dtype f32 --no-variants --budget-ms 80 --shapes "1,4096,4096,4096" --json $OUT/f32_4096.json
FMAR_KERNEL=hopper FMAR_PROPTEST_ALIGN=8 FMAR_PROPTEST_CASES=240 FMAR_PROPTEST_VERBOSE=1 run properties 195 .gpu/properties --test-threads 1 --nocapture
run path_proof 30 .gpu/path_proof --test-threads 1 --nocapture
for dt in bf16 f16; do grep -E "^\| [0-9]" /tmp/logs/bench_$dt.log | grep -E "\| fmar \|" | cut -c1-150; done; grep -E "^\| [0-9]" /tmp/logs/bench_f32.log | cut -c1-150
grep -E "^test |test result|panicked|  [A-Za-z0-9]+ fusion=|gradient products" /tmp/logs/properties.log | tail -25
grep -c "done in" /tmp/logs/properties.log; grep "done in" /tmp/logs/properties.log | awk '{print $3}' | sort -n | tail -3
grep -E "^test |test result|kept" /tmp/logs/path_proof.log
