#!/bin/bash
# The swapped product fed by the TMA engine (producer unit, full/empty mbarriers, the weight's
# 32 x 32 boxes read into the MMA's register operand with conflict-free 8-byte loads), against
# main's cp.async ring. Builds: hb_main = main f5e05f8; hb_tma = the working tree (ring of up
# to 100 KB: two cubes a multiprocessor where registers allow); hb_tma200 (ring up to 200 KB);
# hb_tma_cpp2 (2 cubes of work a multiprocessor at every row count); hb_tma_wg1 (one warpgroup
# a cube at every row count); t_tma = the kernel tests of hb_tma's tree.
set -u
. bench/scripts/device-lib.sh
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
B="hb_main hb_tma hb_tma200 hb_tma_cpp2 hb_tma_wg1"
for b in $B t_tma; do xz -dc .gpu4/$b.xz > /tmp/$b && chmod +x /tmp/$b; done
run tests_tma 150 /tmp/t_tma hopper mask few_row --test-threads 1
P="1,16,32,64 1,32,32,64 1,64,32,64 1,128,32,64 1,100,64,32 1,128,16,128 2,12,40,36 3,70,20,100 1,9,24,84"
for b in hb_tma hb_tma200 hb_tma_wg1; do
  run probe_$b 30 /tmp/$b --variants launch --probe --dtypes f32 --lhs k,m --rhs n --reps 1 $P
done
run memcheck_tma 120 compute-sanitizer --tool memcheck /tmp/t_tma few_row --test-threads 1
run racecheck_tma 60 compute-sanitizer --tool racecheck /tmp/hb_tma --variants launch --dtypes f32 --lhs k --rhs n --reps 1 1,100,1000,260 1,30,520,72 1,128,96,256 2,16,4000,300 1,50,200,196
S="1,16,4096,4096 1,32,4096,4096 1,64,4096,4096 1,128,4096,4096 1,64,8192,8192 1,128,8192,8192 1,128,16384,4096 1,16,4096,16384 4,100,1000,2056"
for i in 1 2; do for b in $B; do
  run ab_${b}_$i 30 /tmp/$b --variants launch --dtypes f32 --lhs k --rhs n --reps 300 $S
done; done
{
grep -h "^test \|test result\|panicked" /tmp/logs/tests_*.log | grep -v " ok$" | head -40
for f in /tmp/logs/probe_* /tmp/logs/memcheck_* /tmp/logs/racecheck_*; do echo "== $f"; grep -h "RESULT\|PROBE\|panic\|ERROR SUMMARY\|RACECHECK SUMMARY\|test result" $f | grep -v " ok (" | cut -c1-100 | head -20; done
for f in /tmp/logs/ab_*; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-100; done
} >> $OUT/summary.txt
save
