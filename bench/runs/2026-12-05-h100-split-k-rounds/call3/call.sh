#!/bin/bash
# hb_main = main b2a2d6b (= d657378's kernel); hb_new / t_new = b1c4ecb (the swapped path's k
# split for one round of cubes from 64 rows) and its kernel tests. Then the f32 table through
# Burn (fmar-bench of b1c4ecb) and PyTorch, for BENCHMARKS.md.
set -u
T0=$(date +%s)
. bench/scripts/device-lib.sh
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
unpack hb_main hb_new t_new
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/summary.txt
run tests_new 200 /tmp/t_new hopper few_row mask --test-threads 1
S="1,16,4096,4096 1,64,4096,4096 1,96,4096,4096 1,128,4096,4096 1,128,8192,8192 1,128,16384,4096 1,128,4096,11008 4,100,1000,2056"
ab() { for b in hb_main hb_new; do run ab_${b}_$1 40 /tmp/$b --variants launch --dtypes f32 --lhs k --rhs n --reps 200 $S; done; }
ab 1
ab 2
{
grep -h "^test \|test result\|panicked" /tmp/logs/tests_*.log | grep -v " ok$" | head -20
for f in /tmp/logs/ab*; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-110; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
here=$(pwd)
mkdir -p /tmp/w && cd /tmp/w
export BURN_DEVICE=cuda XDG_CACHE_HOME=/tmp/w/cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
xz -dc $here/.gpu/fmar-bench.xz > /tmp/fmar-bench && chmod +x /tmp/fmar-bench
SHAPES="1,4096,4096,4096;1,8192,8192,8192;1,16384,1024,4096;8,1024,1024,1024;64,128,128,128;1,128,4096,4096;1,16,4096,4096;1,1,4096,4096;1,64,64,64"
run bench_f32 90 /tmp/fmar-bench --dtype f32 --no-variants --budget-ms 60 --shapes "$SHAPES" --json $OUT/f32.json
mkdir -p /tmp/a32 && run anchor32 60 env OUT=/tmp/a32 ANCHOR_COMPILE=0 ANCHOR_LOOP=1 ANCHOR_DTYPES=f32,tf32 ANCHOR_SHAPES="$SHAPES" PYTHONUNBUFFERED=1 python3 $here/bench/scripts/torch_anchor.py
cp /tmp/a32/torch_anchor.json $OUT/torch_anchor_f32.json
cd $here
{ echo "== f32"; grep -E "^\|" /tmp/logs/bench_f32.log | grep -E "fmar \||FAILED" | head -40; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
