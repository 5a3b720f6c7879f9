#!/bin/bash
# The swapped ring at 64-128 rows, where one cube fits a multiprocessor (131 KB of shared memory
# at 128 rows) and each cube pays its ring's fill with nothing to overlap it (ncu at main
# ca27d6a: 40% of DRAM bandwidth; stalls on the MMA wait, the copies' wait and the barrier).
# Builds (main's kernel at d921297 with one change each; hb_land = main at d921297):
#   hb_pers / t_pers  branch swapped-persistent: as many cubes as fit, each walking its items
#                with the ring running on across them (correctness first: tests, probe,
#                memcheck, racecheck)
#   hb_st3       3 stages (96 KB a cube at 128 rows: two cubes a multiprocessor)
#   hb_wg1       one warpgroup a cube at every row count (64-column blocks)
#   hb_st3_cpp2  3 stages, 2 cubes of work a multiprocessor
#   hb_wg1_cpp2  one warpgroup, 2 cubes of work a multiprocessor
set -u
. bench/scripts/device-lib.sh
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
B="hb_land hb_pers hb_st3 hb_wg1 hb_st3_cpp2 hb_wg1_cpp2"
for b in $B t_pers; do xz -dc .gpu3/$b.xz > /tmp/$b && chmod +x /tmp/$b; done
run tests_pers 100 /tmp/t_pers hopper mask few_row --test-threads 1
P="1,16,32,64 1,32,32,64 1,64,32,64 1,128,32,64 1,100,64,32 1,128,16,128 1,9,24,62 2,12,40,130 3,70,200,64"
run probe_hb_pers 30 /tmp/hb_pers --variants launch --probe --dtypes f32 --lhs k,m --rhs n --reps 1 $P
run memcheck_pers 60 compute-sanitizer --tool memcheck /tmp/t_pers few_row --test-threads 1
run racecheck_pers 40 compute-sanitizer --tool racecheck /tmp/hb_pers --variants launch --dtypes f32 --lhs k,m --rhs n --reps 1 1,100,1001,258 1,30,520,70 1,128,96,256 2,16,4000,300
S="1,16,4096,4096 1,32,4096,4096 1,64,4096,4096 1,128,4096,4096 1,64,8192,8192 1,128,8192,8192 1,128,16384,4096 1,16,4096,16384 4,100,1001,2055"
for i in 1 2; do for b in $B; do
  run ab_${b}_$i 30 /tmp/$b --variants launch --dtypes f32 --lhs k --rhs n --reps 300 $S
done; done
for b in hb_st3 hb_wg1 hb_st3_cpp2 hb_wg1_cpp2; do
  run probe_$b 15 /tmp/$b --variants launch --probe --dtypes f32 --lhs k --rhs n --reps 1 $P
done
{
grep -h "^test \|test result\|panicked" /tmp/logs/tests_*.log | grep -v " ok$" | head -40
for f in /tmp/logs/probe_* /tmp/logs/memcheck_* /tmp/logs/racecheck_*; do echo "== $f"; grep -h "RESULT\|PROBE\|panic\|ERROR SUMMARY\|RACECHECK SUMMARY\|test result" $f | cut -c1-100 | head -40; done
for f in /tmp/logs/ab_*; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-100; done
} >> $OUT/summary.txt
save
