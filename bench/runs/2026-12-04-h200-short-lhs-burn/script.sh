#!/bin/bash
# hopper-short-lhs at 9e71056 (short lhs stages, slots added in a loop): the property harness pinned to the Hopper
# kernel (k now sometimes 512-1600, so split-K's clusters and short stages meet random layouts,
# batches and biases), then BENCHMARKS.md's same-run tables (fmar-bench per dtype, no autotune;
# the PyTorch anchor after the half-precision pair and after f32), nvidia-smi every 100 ms beside.
set -u
. bench/scripts/device-lib.sh
unpack fmar-bench properties
here=$(pwd)
mkdir -p /tmp/w && cd /tmp/w
export RUST_BACKTRACE=1 BURN_DEVICE=cuda FMAR_TEST_DEVICE=cuda XDG_CACHE_HOME=/tmp/w/cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total,power.limit --format=csv > $OUT/gpu.txt
run properties 200 env FMAR_KERNEL=hopper FMAR_PROPTEST_ALIGN=8 FMAR_PROPTEST_CASES=300 FMAR_PROPTEST_VERBOSE=1 /tmp/properties --test-threads 1 --nocapture
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,nounits -lms 100 > /tmp/logs/smi.csv &
SMI=$!
SHAPES="1,4096,4096,4096;1,8192,8192,8192;1,16384,1024,4096;8,1024,1024,1024;64,128,128,128;1,128,4096,4096;1,16,4096,4096;1,1,4096,4096;1,64,64,64"
run bench_bf16 110 /tmp/fmar-bench --dtype bf16 --no-variants --budget-ms 80 --shapes "$SHAPES" --json $OUT/bf16.json
run bench_f16 110 /tmp/fmar-bench --dtype f16 --no-variants --budget-ms 80 --shapes "$SHAPES" --json $OUT/f16.json
run anchor 100 env OUT=$OUT ANCHOR_COMPILE=0 ANCHOR_LOOP=1 ANCHOR_DTYPES=bf16,f16 ANCHOR_SHAPES="$SHAPES" PYTHONUNBUFFERED=1 python3 $here/bench/scripts/torch_anchor.py
run bench_f32 100 /tmp/fmar-bench --dtype f32 --no-variants --budget-ms 60 --shapes "$SHAPES" --json $OUT/f32.json
mkdir -p /tmp/a32 && run anchor32 80 env OUT=/tmp/a32 ANCHOR_COMPILE=0 ANCHOR_LOOP=1 ANCHOR_DTYPES=f32,tf32 ANCHOR_SHAPES="$SHAPES" PYTHONUNBUFFERED=1 python3 $here/bench/scripts/torch_anchor.py
cp /tmp/a32/torch_anchor.json $OUT/torch_anchor_f32.json
kill $SMI
{
echo "cases run: $(grep -c '^case ' /tmp/logs/properties.log)"
grep -h "^test \|test result" /tmp/logs/properties.log
sed -n '/property harness on/,$p' /tmp/logs/properties.log | tail -30
for d in bf16 f16 f32; do echo "== $d"; grep -E "^\|" /tmp/logs/bench_$d.log | grep -E "fmar \||FAILED" | head -40; done
} >> $OUT/summary.txt
save
