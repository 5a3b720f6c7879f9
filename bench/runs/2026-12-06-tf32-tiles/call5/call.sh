#!/bin/bash
# Main with the persistent `swapped_tiles` (step 36). The mutant of the broadcast weight
# (`t_bmut`: `swapped_tiles::launch` reads a weight of one batch as batched; it must fail on
# `[3, 600, 40] x [1, 40, 2056]`); the tracked forward (mask) of the kernel alone, as main had
# it (`hb_main`), persistent (`hb_persistent`, main now) and with the paired stores
# (`hb_both`), two rounds; the property harness pinned to the Hopper kernel; fmar's forward
# alone through Burn before (`fb_new`, 6f00a94) and after (`fb_p`), two rounds; on an H200,
# BENCHMARKS.md's same-run tables of `fb_p` and PyTorch's anchors. Pack: `.gpu/c5.tar.xz`.
set -u
T0=$(date +%s)
. bench/scripts/device-lib.sh
here=$(pwd)
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total,power.limit --format=csv > $OUT/gpu.txt
tar xJf .gpu/c5.tar.xz -C /tmp && chmod +x /tmp/hb_* /tmp/t_* /tmp/fb_* /tmp/properties
A="--variants launch --dtypes f32 --lhs k --rhs n --mask --reps 100"
M="1,4096,4096,4096 1,16384,1024,4096 1,2048,4096,4096"
for i in 1 2; do for b in main persistent both; do run mask_${b}_$i 40 /tmp/hb_$b $A $M; done; done
{
for f in /tmp/logs/mask_*.log; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-90; done
echo "elapsed $(( $(date +%s) - T0 )) s"
} >> $OUT/summary.txt
save
mkdir -p /tmp/w && cd /tmp/w
export BURN_DEVICE=cuda XDG_CACHE_HOME=/tmp/w/cache
run_beside mutant_b 150 /tmp/t_bmut hopper_runs_exactly --test-threads 1 &
run_beside properties 240 env FMAR_KERNEL=hopper FMAR_PROPTEST_ALIGN=8 FMAR_PROPTEST_CASES=300 FMAR_PROPTEST_VERBOSE=1 /tmp/properties --test-threads 1 --nocapture
wait
save
{
grep -h "^test \|test result\|panicked" /tmp/logs/mutant_b.log | grep -v " ok$" | head -6
grep -h "hopper F32" /tmp/logs/mutant_b.log | cut -c1-200 | head -3
echo "cases run: $(grep -c '^case ' /tmp/logs/properties.log)"
grep -h "^test \|test result" /tmp/logs/properties.log
sed -n '/property harness on/,$p' /tmp/logs/properties.log | tail -30
grep -h "panicked\|outside tolerance" /tmp/logs/properties.log | head -10
echo "elapsed $(( $(date +%s) - T0 )) s"
} >> $OUT/summary.txt
AB="1,4096,4096,4096;1,16384,1024,4096;8,1024,1024,1024;1,2048,4096,4096"
for i in 1 2; do for b in fb_new fb_p; do
    run ab_${b}_$i 60 /tmp/$b --dtype f32 --only fmar --no-backward --budget-ms 300 --shapes "$AB"
done; done
{ for f in /tmp/logs/ab_*.log; do echo "== $f"; grep -E "\| fmar \|" $f | cut -d'|' -f2,7,8; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
grep -q H200 $OUT/gpu.txt || exit 0
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,nounits -lms 100 > /tmp/logs/smi.csv &
SMI=$!
SHAPES="1,4096,4096,4096;1,8192,8192,8192;1,16384,1024,4096;8,1024,1024,1024;64,128,128,128;1,128,4096,4096;1,16,4096,4096;1,1,4096,4096;1,64,64,64"
run bench_f32 80 /tmp/fb_p --dtype f32 --no-variants --budget-ms 60 --shapes "$SHAPES" --json $OUT/f32.json
mkdir -p /tmp/a32 && run anchor32 50 env OUT=/tmp/a32 ANCHOR_COMPILE=0 ANCHOR_LOOP=1 ANCHOR_DTYPES=f32,tf32 ANCHOR_SHAPES="$SHAPES" PYTHONUNBUFFERED=1 python3 $here/bench/scripts/torch_anchor.py
cp /tmp/a32/torch_anchor.json $OUT/torch_anchor_f32.json
{ grep -E "^\|" /tmp/logs/bench_f32.log | grep -E "fmar \||FAILED" | head -40; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
run bench_bf16 90 /tmp/fb_p --dtype bf16 --no-variants --budget-ms 80 --shapes "$SHAPES" --json $OUT/bf16.json
run bench_f16 90 /tmp/fb_p --dtype f16 --no-variants --budget-ms 80 --shapes "$SHAPES" --json $OUT/f16.json
run anchor 60 env OUT=$OUT ANCHOR_COMPILE=0 ANCHOR_LOOP=1 ANCHOR_DTYPES=bf16,f16 ANCHOR_SHAPES="$SHAPES" PYTHONUNBUFFERED=1 python3 $here/bench/scripts/torch_anchor.py
kill $SMI
{ for d in bf16 f16; do echo "== $d"; grep -E "^\|" /tmp/logs/bench_$d.log | grep -E "fmar \||FAILED" | head -40; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
