#!/bin/bash
# One call for everything, in order of need: A/B of main against each branch (few-rows-tma,
# swapped-halves, finish-vectors) and their merge next-all; the mutant; the merge's lib,
# kernel and exact_f32 tests (they cover every branch's code); the f32 table through Burn
# (fmar-bench at next-all a921c1a) with PyTorch; a second A/B round; ncu of the second kernels.
set -u
T0=$(date +%s)
. bench/scripts/device-lib.sh
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
tar xJf .gpu/all.tar.xz -C /tmp && chmod +x /tmp/hb_* /tmp/t_* /tmp/x_* /tmp/l_*
xz -dc .gpu/fmar-bench.xz > /tmp/fmar-bench && chmod +x /tmp/fmar-bench
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/summary.txt
echo "unpacked $(( $(date +%s) - T0 )) s" >> $OUT/summary.txt
S="1,1,4096,4096 1,8,4096,4096 1,1,8192,8192 4,1,4096,4096 1,16,4096,4096 1,64,4096,4096 1,128,4096,4096 1,128,4096,11008"
ab() { for b in "$@"; do run ab_${b}_$R 35 /tmp/$b --variants launch --dtypes f32 --lhs k --rhs n --reps 200 $S; done; }
R=1 ab hb_main hb_tma hb_halves hb_fin hb_all
{ for f in /tmp/logs/ab*_1.log; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-110; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
run mutant_tma 45 /tmp/t_tmamut few_row --test-threads 1
run lib_all 45 /tmp/l_all finish_kernels --test-threads 1
run tests_all 150 /tmp/t_all hopper few_row mask --test-threads 1
run exact_all 40 /tmp/x_all --test-threads 1
{
grep -h "^test \|test result\|panicked" /tmp/logs/lib_*.log /tmp/logs/tests_*.log /tmp/logs/exact_*.log | grep -v " ok$" | head -40
echo "== mutant (must fail)"; grep -h "test result\|panicked\|few rows" /tmp/logs/mutant_tma.log | head -6
echo "elapsed $(( $(date +%s) - T0 )) s"
} >> $OUT/summary.txt
save
here=$(pwd)
mkdir -p /tmp/w && cd /tmp/w
export BURN_DEVICE=cuda XDG_CACHE_HOME=/tmp/w/cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
SHAPES="1,4096,4096,4096;1,8192,8192,8192;1,16384,1024,4096;8,1024,1024,1024;64,128,128,128;1,128,4096,4096;1,16,4096,4096;1,1,4096,4096;1,64,64,64"
run bench_f32 80 /tmp/fmar-bench --dtype f32 --no-variants --budget-ms 60 --shapes "$SHAPES" --json $OUT/f32.json
mkdir -p /tmp/a32 && run anchor32 50 env OUT=/tmp/a32 ANCHOR_COMPILE=0 ANCHOR_LOOP=1 ANCHOR_DTYPES=f32,tf32 ANCHOR_SHAPES="$SHAPES" PYTHONUNBUFFERED=1 python3 $here/bench/scripts/torch_anchor.py
cp /tmp/a32/torch_anchor.json $OUT/torch_anchor_f32.json
cd $here
{ echo "== f32"; grep -E "^\|" /tmp/logs/bench_f32.log | grep -E "fmar \||FAILED" | head -40; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
R=2 ab hb_main hb_all hb_fin
{ for f in /tmp/logs/ab*_2.log; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-110; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
NCU="ncu --clock-control none --cache-control none --section SpeedOfLight --import-source no"
for b in hb_main hb_all; do for s in 1,1,4096,4096 1,128,4096,4096; do
  [ $(( $(date +%s) - T0 )) -gt 540 ] && break
  run ncu_${b}_$s 25 $NCU --launch-skip 2 --launch-count 2 -o /tmp/ncu_${b}_$s /tmp/$b --variants launch --dtypes f32 --lhs k --rhs n --reps 2 $s
  ncu -i /tmp/ncu_${b}_$s.ncu-rep --page details > /tmp/logs/details_${b}_$s.txt 2>&1
done; done
{ for f in /tmp/logs/details_*; do echo "== $f"; grep -hE "^  [a-zA-Z_0-9]+.*\(|Duration|DRAM Throughput" $f; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
