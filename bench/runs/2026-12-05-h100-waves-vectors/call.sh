#!/bin/bash
# Call A. Builds: hb_head = main d7ff266; hb_waves = swapped-waves 7aeaaf1 (k split so each
# multiprocessor gets at most its cubes of work); hb_vec = few-rows-vectors (waves + the few-row
# kernel reading four weight columns a unit with 16-byte loads at <= 4 rows). t_vec/x_vec = the
# kernel tests of hb_vec's tree (against_f64, exact_f32); t_mut = t_vec with the vector path's
# weight column shifted by one vector (must fail).
set -u
T0=$(date +%s)
. bench/scripts/device-lib.sh
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
unpack hb_head hb_waves hb_vec t_vec x_vec t_mut
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/summary.txt
run tests_vec 200 /tmp/t_vec hopper few_row mask --test-threads 1
run exact_vec 60 /tmp/x_vec --test-threads 1
run mutant 60 /tmp/t_mut few_row --test-threads 1
P="1,16,32,64 1,32,32,64 1,64,32,64 1,128,32,64 1,100,64,32 1,128,16,128 2,12,40,36 3,70,20,100 1,9,24,84 1,1,32,64 1,3,16,128 2,4,8,256 1,2,4,512"
run probe_vec 40 /tmp/hb_vec --variants launch --probe --dtypes f32 --lhs k,m --rhs n --reps 1 $P
S="1,16,4096,4096 1,32,4096,4096 1,64,4096,4096 1,96,4096,4096 1,128,4096,4096 1,64,8192,8192 1,128,8192,8192 1,128,16384,4096 1,16,4096,16384 1,128,4096,11008 4,100,1000,2056"
F="1,1,4096,4096 1,4,4096,4096 1,1,8192,8192 1,2,4096,16384 1,1,4096,11008 1,1,11008,4096 8,1,1024,1024"
for i in 1 2; do
  for b in hb_head hb_waves; do run ab_${b}_$i 40 /tmp/$b --variants launch --dtypes f32 --lhs k --rhs n --reps 200 $S; done
  for b in hb_head hb_vec; do run abf_${b}_$i 30 /tmp/$b --variants launch --dtypes f32 --lhs k --rhs n --reps 200 $F; done
done
run abmask_head 20 /tmp/hb_head --mask --variants launch --dtypes f32 --lhs k --rhs n --reps 200 1,1,4096,4096 1,128,4096,4096
run abmask_vec 20 /tmp/hb_vec --mask --variants launch --dtypes f32 --lhs k --rhs n --reps 200 1,1,4096,4096 1,128,4096,4096
NCU="ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SourceCounters --section LaunchStats --section Occupancy --import-source no"
run ncu_t128 90 $NCU --launch-skip 0 --launch-count 6 -o /tmp/ncu_t128 /tmp/hb_head --variants launch --dtypes f32 --lhs k --rhs n --reps 2 1,128,4096,4096
run ncu_v1 60 $NCU --launch-skip 0 --launch-count 6 -o /tmp/ncu_v1 /tmp/hb_vec --variants launch --dtypes f32 --lhs k --rhs n --reps 2 1,1,4096,4096
for f in ncu_t128 ncu_v1; do
  ncu -i /tmp/$f.ncu-rep --page details > /tmp/logs/details_$f.txt 2>&1
  ncu -i /tmp/$f.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $OUT/sass_$f.csv.gz
done
{
grep -h "^test \|test result\|panicked" /tmp/logs/tests_*.log /tmp/logs/exact_*.log | grep -v " ok$" | head -40
echo "== mutant (must fail)"; grep -h "test result\|panicked\|few rows" /tmp/logs/mutant.log | head -8
for f in /tmp/logs/probe_*; do echo "== $f"; grep -h "RESULT\|PROBE\|panic" $f | grep -v " ok (" | cut -c1-100 | head -20; done
for f in /tmp/logs/ab*; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-110; done
for f in /tmp/logs/details_*; do echo "== $f"; grep -hE "^  [a-zA-Z_0-9]+.*\(|Duration|SM Frequency|DRAM Throughput|Memory Throughput|Registers Per|Block Limit|Achieved Occupancy|Grid Size|Block Size|Waves|Dynamic Shared|Theoretical Occ" $f | head -80; done
} >> $OUT/summary.txt
save
# Through Burn, if the call has time left: the f32 same-run table (hb_vec's tree) and PyTorch.
if [ $(( $(date +%s) - T0 )) -lt 450 ]; then
here=$(pwd)
mkdir -p /tmp/w && cd /tmp/w
export BURN_DEVICE=cuda XDG_CACHE_HOME=/tmp/w/cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
xz -dc $here/.gpu/fmar-bench.xz > /tmp/fmar-bench && chmod +x /tmp/fmar-bench
SHAPES="1,4096,4096,4096;1,8192,8192,8192;1,16384,1024,4096;8,1024,1024,1024;64,128,128,128;1,128,4096,4096;1,16,4096,4096;1,1,4096,4096;1,64,64,64"
run bench_f32 80 /tmp/fmar-bench --dtype f32 --no-variants --budget-ms 60 --shapes "$SHAPES" --json $OUT/f32.json
mkdir -p /tmp/a32 && run anchor32 50 env OUT=/tmp/a32 ANCHOR_COMPILE=0 ANCHOR_LOOP=1 ANCHOR_DTYPES=f32,tf32 ANCHOR_SHAPES="$SHAPES" PYTHONUNBUFFERED=1 python3 $here/bench/scripts/torch_anchor.py
cp /tmp/a32/torch_anchor.json $OUT/torch_anchor_f32.json
cd $here
{ echo "== f32"; grep -E "^\|" /tmp/logs/bench_f32.log | grep -E "fmar \||FAILED" | head -40; } >> $OUT/summary.txt
save
fi
