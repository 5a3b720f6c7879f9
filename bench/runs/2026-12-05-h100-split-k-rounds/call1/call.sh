#!/bin/bash
# hb_main = main b2a2d6b (= d657378's kernel). hb_fa/t_fa/x_fa = few-row split-K with the sum in
# the same launch (tickets; last cube of a column block adds the slices), taken at every few-row
# shape (tail limit 1 MiB); t_mut = t_fa without the ticket reset (must fail). hb_mc4b =
# swapped-multicast f75ee08. Then the f32 table through Burn (fmar-bench of 593e2c4) + PyTorch.
set -u
T0=$(date +%s)
. bench/scripts/device-lib.sh
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
unpack hb_main hb_fa t_fa x_fa t_mut hb_mc4b
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/summary.txt
run tests_fa 150 /tmp/t_fa few_row mask --test-threads 1
run exact_fa 60 /tmp/x_fa --test-threads 1
run mutant 60 /tmp/t_mut few_row --test-threads 1
F="1,1,4096,4096 1,2,4096,4096 1,4,4096,4096 1,8,4096,4096 1,1,8192,8192 1,4,8192,8192 1,1,4096,11008 1,1,11008,4096 4,1,4096,4096 1,1,2048,2048 1,1,1024,1024"
ab() { for b in hb_main hb_fa; do run ab_${b}_$1 40 /tmp/$b --variants launch --dtypes f32 --lhs k --rhs n --reps 200 $F; done; }
ab 1
run abmask_main 20 /tmp/hb_main --mask --variants launch --dtypes f32 --lhs k --rhs n --reps 200 1,1,4096,4096 1,4,4096,4096 1,1,8192,8192
run abmask_fa 20 /tmp/hb_fa --mask --variants launch --dtypes f32 --lhs k --rhs n --reps 200 1,1,4096,4096 1,4,4096,4096 1,1,8192,8192
ab 2
{
grep -h "^test \|test result\|panicked" /tmp/logs/tests_*.log /tmp/logs/exact_*.log | grep -v " ok$" | head -40
echo "== mutant (must fail)"; grep -h "test result\|panicked\|few rows" /tmp/logs/mutant.log | head -8
for f in /tmp/logs/ab*; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-110; done
echo "elapsed $(( $(date +%s) - T0 )) s"
} >> $OUT/summary.txt
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
M="1,16,4096,4096 1,64,4096,4096 1,128,4096,4096 1,128,8192,8192 1,128,16384,4096 4,100,1000,2056"
run abm_main 30 /tmp/hb_main --variants launch --dtypes f32 --lhs k --rhs n --reps 200 $M
run abm_mc4b 30 /tmp/hb_mc4b --variants launch --dtypes f32 --lhs k --rhs n --reps 200 $M
NCU="ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats --section Occupancy --import-source no"
run ncu_mc4b 60 $NCU --launch-skip 0 --launch-count 2 -o /tmp/ncu_mc4b /tmp/hb_mc4b --variants launch --dtypes f32 --lhs k --rhs n --reps 2 1,128,4096,4096
ncu -i /tmp/ncu_mc4b.ncu-rep --page details > /tmp/logs/details_ncu_mc4b.txt 2>&1
run ncu_fa 60 $NCU --launch-skip 0 --launch-count 1 -o /tmp/ncu_fa /tmp/hb_fa --variants launch --dtypes f32 --lhs k --rhs n --reps 2 1,1,4096,4096
ncu -i /tmp/ncu_fa.ncu-rep --page details > /tmp/logs/details_ncu_fa.txt 2>&1
{
for f in /tmp/logs/abm_*; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-110; done
grep -hE "^  [a-zA-Z_0-9]+.*\(|Duration|DRAM Throughput|L2 Cache Throughput|Registers Per|Achieved Occupancy|Max Active Clusters|Grid Size|Block Limit Registers" /tmp/logs/details_ncu_*.txt | head -40
echo "elapsed $(( $(date +%s) - T0 )) s"
} >> $OUT/summary.txt
save
