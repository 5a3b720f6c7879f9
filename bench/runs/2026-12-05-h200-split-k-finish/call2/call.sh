#!/bin/bash
# Call 2. hb_waves = main a1dfa1a; hb_final = d852a8b (second kernel spread by slice count, the
# few-row kernel's four-column loads where slices are >= 64 deep). t_final/x_final = its kernel
# tests; t_mutvec = t_final with the four-column path's weight column shifted by one vector
# (must fail). hb_mc4/hb_mc2 = swapped-multicast 91b1a93 (d852a8b + clusters of 4 / 2 cubes
# sharing lhs's stages by TMA multicast from 64 rows); t_mc4 its kernel tests. Then the f32
# table through Burn (fmar-bench of d852a8b) and PyTorch in the same call.
set -u
T0=$(date +%s)
. bench/scripts/device-lib.sh
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
unpack hb_waves hb_final t_final x_final t_mutvec hb_mc4 t_mc4
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/summary.txt
run tests_final 200 /tmp/t_final hopper few_row mask --test-threads 1
run exact_final 60 /tmp/x_final --test-threads 1
run mutant 60 /tmp/t_mutvec few_row --test-threads 1
run memcheck_final 150 compute-sanitizer --tool memcheck /tmp/t_final few_row mask --test-threads 1
run tests_mc4 120 /tmp/t_mc4 few_row --test-threads 1
S="1,16,4096,4096 1,32,4096,4096 1,64,4096,4096 1,128,4096,4096 1,128,8192,8192 1,128,16384,4096 4,100,1000,2056"
F="1,1,4096,4096 1,4,4096,4096 1,8,4096,4096 1,1,8192,8192 1,2,4096,16384 1,1,4096,11008 8,1,1024,1024"
M="1,16,4096,4096 1,64,4096,4096 1,128,4096,4096 1,128,8192,8192 1,128,16384,4096 4,100,1000,2056"
ab() {
  for b in hb_waves hb_final; do run ab_${b}_$1 40 /tmp/$b --variants launch --dtypes f32 --lhs k --rhs n --reps 200 $S $F; done
  run abm_hb_mc4_$1 30 /tmp/hb_mc4 --variants launch --dtypes f32 --lhs k --rhs n --reps 200 $M
}
ab 1
run abmask_final 20 /tmp/hb_final --mask --variants launch --dtypes f32 --lhs k --rhs n --reps 200 1,1,4096,4096 1,1,8192,8192 1,128,4096,4096
{
grep -h "^test \|test result\|panicked" /tmp/logs/tests_*.log /tmp/logs/exact_*.log | grep -v " ok$" | head -40
echo "== memcheck"; grep -h "ERROR SUMMARY\|test result" /tmp/logs/memcheck_*.log | head -8
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
ab 2
{ for f in /tmp/logs/ab*_2.log; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-110; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
