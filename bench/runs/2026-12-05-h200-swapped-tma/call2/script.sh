#!/bin/bash
# The TMA-fed swapped kernel as it lands (branch swapped-tma 198ce94: one warpgroup a cube at
# every row count): its kernel tests, the layout probe, a loop of varied shapes timed per pass
# (no hang), an A/B against main f5e05f8 and the same build with 2 cubes of work a
# multiprocessor at every row count; then through Burn: the property harness pinned to the
# Hopper kernel and BENCHMARKS.md's f32 table with the PyTorch anchor.
set -u
. bench/scripts/device-lib.sh
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
here=$(pwd)
for b in hb_main hb_final hb_final_cpp2 t_final fmar-bench properties; do xz -dc .gpu5/$b.xz > /tmp/$b && chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total,power.limit --format=csv > $OUT/gpu.txt
run tests_final 150 /tmp/t_final hopper mask few_row --test-threads 1
P="1,16,32,64 1,32,32,64 1,64,32,64 1,128,32,64 1,100,64,32 1,128,16,128 2,12,40,36 3,70,20,100 1,9,24,84"
run probe_final 30 /tmp/hb_final --variants launch --probe --dtypes f32 --lhs k,m --rhs n --reps 1 $P
L="1,9,4096,1024 1,17,300,516 2,33,2052,96 1,63,64,4 1,65,1028,1028 3,127,512,260 1,128,32,8 5,40,4096,64 1,100,8192,2048"
stress() { for i in 1 2 3 4 5; do echo "pass $i $(date +%s.%N)"; /tmp/hb_final --variants launch --dtypes f32 --lhs k --rhs n --reps 50 $L | grep -c " ok ("; done; echo "end $(date +%s.%N)"; }
export L; export -f stress
run stress_final 90 bash -c stress
S="1,16,4096,4096 1,32,4096,4096 1,64,4096,4096 1,128,4096,4096 1,64,8192,8192 1,128,8192,8192 1,128,16384,4096 1,16,4096,16384 4,100,1000,2056"
for i in 1 2; do for b in hb_main hb_final hb_final_cpp2; do
  run ab_${b}_$i 45 /tmp/$b --variants launch --dtypes f32 --lhs k --rhs n --reps 300 $S
done; done
mkdir -p /tmp/w && cd /tmp/w
export BURN_DEVICE=cuda XDG_CACHE_HOME=/tmp/w/cache
run properties 150 env FMAR_KERNEL=hopper FMAR_PROPTEST_ALIGN=8 FMAR_PROPTEST_CASES=300 FMAR_PROPTEST_VERBOSE=1 /tmp/properties --test-threads 1 --nocapture
SHAPES="1,4096,4096,4096;1,8192,8192,8192;1,16384,1024,4096;8,1024,1024,1024;64,128,128,128;1,128,4096,4096;1,16,4096,4096;1,1,4096,4096;1,64,64,64"
run bench_f32 80 /tmp/fmar-bench --dtype f32 --no-variants --budget-ms 60 --shapes "$SHAPES" --json $OUT/f32.json
mkdir -p /tmp/a32 && run anchor32 50 env OUT=/tmp/a32 ANCHOR_COMPILE=0 ANCHOR_LOOP=1 ANCHOR_DTYPES=f32,tf32 ANCHOR_SHAPES="$SHAPES" PYTHONUNBUFFERED=1 python3 $here/bench/scripts/torch_anchor.py
cp /tmp/a32/torch_anchor.json $OUT/torch_anchor_f32.json
{
grep -h "^test \|test result\|panicked" /tmp/logs/tests_*.log | grep -v " ok$" | head -20
for f in /tmp/logs/probe_* /tmp/logs/stress_*; do echo "== $f"; grep -h "RESULT\|PROBE\|panic\|pass\|end\|^[0-9]" $f | grep -v " ok (" | cut -c1-100 | head -20; done
for f in /tmp/logs/ab_*; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-100; done
echo "cases run: $(grep -c '^case ' /tmp/logs/properties.log)"
grep -h "^test \|test result" /tmp/logs/properties.log
sed -n '/property harness on/,$p' /tmp/logs/properties.log | grep F32
echo "== f32"; grep -E "^\|" /tmp/logs/bench_f32.log | grep -E "fmar \||FAILED" | head -40
} >> $OUT/summary.txt
save
