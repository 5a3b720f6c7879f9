#!/bin/bash
# Through Burn at land-swapped ca27d6a (f32 at 9-128 rows with an N-major weight: the swapped kernel): the
# property harness pinned to the Hopper kernel (its f32 cases of 9-128 rows take the swapped kernel), then
# BENCHMARKS.md's same-run tables (fmar-bench per dtype, no autotune; the PyTorch anchor after
# the half-precision pair and after f32), nvidia-smi every 100 ms beside.
set -u
. bench/scripts/device-lib.sh
for b in fmar-bench properties; do xz -dc .gpu-burn/$b.xz > /tmp/$b && chmod +x /tmp/$b; done
here=$(pwd)
export RUST_BACKTRACE=1
mkdir -p /tmp/w && cd /tmp/w
export BURN_DEVICE=cuda XDG_CACHE_HOME=/tmp/w/cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total,power.limit --format=csv > $OUT/gpu.txt
run properties 150 env FMAR_KERNEL=hopper FMAR_PROPTEST_ALIGN=8 FMAR_PROPTEST_CASES=300 FMAR_PROPTEST_VERBOSE=1 /tmp/properties --test-threads 1 --nocapture
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,nounits -lms 100 > /tmp/logs/smi.csv &
SMI=$!
SHAPES="1,4096,4096,4096;1,8192,8192,8192;1,16384,1024,4096;8,1024,1024,1024;64,128,128,128;1,128,4096,4096;1,16,4096,4096;1,1,4096,4096;1,64,64,64"
run bench_bf16 90 /tmp/fmar-bench --dtype bf16 --no-variants --budget-ms 80 --shapes "$SHAPES" --json $OUT/bf16.json
run bench_f16 90 /tmp/fmar-bench --dtype f16 --no-variants --budget-ms 80 --shapes "$SHAPES" --json $OUT/f16.json
run anchor 60 env OUT=$OUT ANCHOR_COMPILE=0 ANCHOR_LOOP=1 ANCHOR_DTYPES=bf16,f16 ANCHOR_SHAPES="$SHAPES" PYTHONUNBUFFERED=1 python3 $here/bench/scripts/torch_anchor.py
run bench_f32 80 /tmp/fmar-bench --dtype f32 --no-variants --budget-ms 60 --shapes "$SHAPES" --json $OUT/f32.json
mkdir -p /tmp/a32 && run anchor32 50 env OUT=/tmp/a32 ANCHOR_COMPILE=0 ANCHOR_LOOP=1 ANCHOR_DTYPES=f32,tf32 ANCHOR_SHAPES="$SHAPES" PYTHONUNBUFFERED=1 python3 $here/bench/scripts/torch_anchor.py
cp /tmp/a32/torch_anchor.json $OUT/torch_anchor_f32.json
kill $SMI
{
echo "cases run: $(grep -c '^case ' /tmp/logs/properties.log)"
grep -h "^test \|test result" /tmp/logs/properties.log
sed -n '/property harness on/,$p' /tmp/logs/properties.log | tail -30
for d in bf16 f16 f32; do echo "== $d"; grep -E "^\|" /tmp/logs/bench_$d.log | grep -E "fmar \||FAILED" | head -40; done
} >> $OUT/summary.txt
save
