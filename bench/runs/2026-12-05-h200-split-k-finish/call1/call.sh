#!/bin/bash
# Call B. hb_waves = main a1dfa1a (7aeaaf1's tree); hb_fin = finish-vectors 5c33d08 (split-K's
# second kernel four columns a unit, four slice groups a cube); hb_vecfin = finish-vec-rows
# 51c4a2d (that + the few-row kernel's 4-column weight loads at <= 4 rows). t_*/x_* = the kernel
# tests of those trees; t_mutfin = t_fin with the last slice group left out of the sum (must fail).
set -u
T0=$(date +%s)
. bench/scripts/device-lib.sh
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
unpack hb_waves hb_fin hb_vecfin t_fin x_fin t_vecfin x_vecfin t_mutfin
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/summary.txt
run tests_fin 200 /tmp/t_fin hopper few_row mask --test-threads 1
run exact_fin 60 /tmp/x_fin --test-threads 1
run mutant 60 /tmp/t_mutfin few_row --test-threads 1
run tests_vecfin 200 /tmp/t_vecfin few_row mask --test-threads 1
run exact_vecfin 60 /tmp/x_vecfin --test-threads 1
run memcheck_fin 150 compute-sanitizer --tool memcheck /tmp/t_fin few_row mask --test-threads 1
S="1,16,4096,4096 1,32,4096,4096 1,64,4096,4096 1,128,4096,4096 1,64,8192,8192 1,128,8192,8192 1,128,16384,4096 1,16,4096,16384 4,100,1000,2056"
F="1,1,4096,4096 1,4,4096,4096 1,8,4096,4096 1,1,8192,8192 1,2,4096,16384 1,1,4096,11008 8,1,1024,1024"
for i in 1 2; do
  for b in hb_waves hb_fin; do run ab_${b}_$i 40 /tmp/$b --variants launch --dtypes f32 --lhs k --rhs n --reps 200 $S; done
  for b in hb_waves hb_fin hb_vecfin; do run abf_${b}_$i 30 /tmp/$b --variants launch --dtypes f32 --lhs k --rhs n --reps 200 $F; done
done
run abmask_waves 20 /tmp/hb_waves --mask --variants launch --dtypes f32 --lhs k --rhs n --reps 200 1,1,4096,4096 1,128,4096,4096
run abmask_fin 20 /tmp/hb_fin --mask --variants launch --dtypes f32 --lhs k --rhs n --reps 200 1,1,4096,4096 1,128,4096,4096
NCU="ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SourceCounters --section LaunchStats --section Occupancy --import-source no"
run ncu_fin 90 $NCU --launch-skip 0 --launch-count 4 -o /tmp/ncu_fin /tmp/hb_fin --variants launch --dtypes f32 --lhs k --rhs n --reps 2 1,128,4096,4096 1,1,4096,4096
run ncu_waves1 60 $NCU --launch-skip 0 --launch-count 2 -o /tmp/ncu_waves1 /tmp/hb_waves --variants launch --dtypes f32 --lhs k --rhs n --reps 2 1,1,4096,4096
for f in ncu_fin ncu_waves1; do
  ncu -i /tmp/$f.ncu-rep --page details > /tmp/logs/details_$f.txt 2>&1
  ncu -i /tmp/$f.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $OUT/sass_$f.csv.gz
done
{
grep -h "^test \|test result\|panicked" /tmp/logs/tests_*.log /tmp/logs/exact_*.log | grep -v " ok$" | head -40
echo "== memcheck"; grep -h "ERROR SUMMARY\|test result" /tmp/logs/memcheck_fin.log | head -5
echo "== mutant (must fail)"; grep -h "test result\|panicked\|few rows" /tmp/logs/mutant.log | head -8
for f in /tmp/logs/ab*; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-110; done
for f in /tmp/logs/details_*; do echo "== $f"; grep -hE "^  [a-zA-Z_0-9]+.*\(|Duration|DRAM Throughput|L2 Cache Throughput|Registers Per|Achieved Occupancy|Grid Size" $f | head -60; done
echo "elapsed $(( $(date +%s) - T0 )) s"
} >> $OUT/summary.txt
save
