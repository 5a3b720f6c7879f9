#!/bin/bash
# The few-row f32 path for the tracked forward at the commit under test: the kernel crate's Hopper
# and mask tests (the mask test's batched few-row case now 296 deep, a TMA-able row in every
# dtype), memcheck of the mask test; the property harness pinned to the Hopper kernel (its
# tracked f32 cases of up to 16 rows now take the few-row kernels); then BENCHMARKS.md's
# same-run tables (fmar-bench per dtype, no autotune; the PyTorch anchor after the
# half-precision pair and after f32), nvidia-smi every 100 ms beside.
set -u
. bench/scripts/device-lib.sh
unpack t_mask hb_new hb_prev fmar-bench properties
here=$(pwd)
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
run tests 100 /tmp/t_mask hopper mask few_row --test-threads 1
run memcheck 60 compute-sanitizer --tool memcheck /tmp/t_mask mask_follows --test-threads 1
# f32 few-row problems whose strides the TMA engine cannot follow (rows not 16-byte multiples):
# the few-row path now takes them before the TMA plan (hb_new); before, another variant ran
# them (hb_prev). Checked, then timed.
U="1,1,4095,4093 1,7,1001,2055 3,16,517,1030 2,5,4097,4099 1,1,4096,4096"
run unaligned_new 60 /tmp/hb_new --variants launch --dtypes f32 --lhs k,m --rhs n --reps 100 $U
run unaligned_new_mask 60 /tmp/hb_new --variants launch --mask --dtypes f32 --lhs k --rhs n --reps 100 $U
run unaligned_prev 90 /tmp/hb_prev --variants launch --dtypes f32 --lhs k,m --rhs n --reps 100 $U
run memcheck_unaligned 60 compute-sanitizer --tool memcheck /tmp/hb_new --variants launch --mask --dtypes f32 --lhs k,m --rhs n --reps 1 1,7,1001,2055 3,16,517,1030
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
grep -h "^test \|test result\|panicked" /tmp/logs/tests.log | head -20
grep -h "ERROR SUMMARY\|test result" /tmp/logs/memcheck.log /tmp/logs/memcheck_unaligned.log
for f in /tmp/logs/unaligned_*; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-150; done
echo "cases run: $(grep -c '^case ' /tmp/logs/properties.log)"
grep -h "^test \|test result" /tmp/logs/properties.log
sed -n '/property harness on/,$p' /tmp/logs/properties.log | tail -30
for d in bf16 f16 f32; do echo "== $d"; grep -E "^\|" /tmp/logs/bench_$d.log | grep -E "fmar \||FAILED" | head -40; done
} >> $OUT/summary.txt
save
