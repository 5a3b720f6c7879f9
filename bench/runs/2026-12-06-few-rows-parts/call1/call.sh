#!/bin/bash
# Branch cluster-parts: the one-launch few-row kernel with four units a column (four warps of
# FMAs a cube, each summing 8 of a stage's 32 k), at up to 8 rows. hb_p4/t_p4/x_p4/l_p4 its
# kernel, kernel tests, exact_f32, lib tests; t_p4mut = t_p4 without the parts' sum (must
# fail); hb_cl = main's one-launch kernel (one warp a cube, up to 4 rows; 6567775); hb_land =
# two launches (9099cf5).
set -u
T0=$(date +%s)
. bench/scripts/device-lib.sh
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
tar xJf .gpu/p4.tar.xz -C /tmp && chmod +x /tmp/hb_* /tmp/t_* /tmp/x_* /tmp/l_*
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total,power.limit --format=csv > $OUT/gpu.txt
S="1,1,4096,4096 1,4,4096,4096 1,8,4096,4096 4,1,4096,4096 1,8,11008,4096 1,1,8192,8192 1,6,4100,4100"
ab() { for b in hb_land hb_cl hb_p4; do run ab_${b}_$1 40 /tmp/$b --variants launch --dtypes f32 --lhs k --rhs n --reps 300 $S; done; }
ab 1
{ for f in /tmp/logs/ab*_1.log; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-80; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
run tests_p4 110 /tmp/t_p4 hopper few_row mask --test-threads 1
run mutant_p4 40 /tmp/t_p4mut few_row mask --test-threads 1
run exact_p4 25 /tmp/x_p4 --test-threads 1
run lib_p4 25 /tmp/l_p4 finish_kernels few_rows_cluster --test-threads 1
run probe_p4 15 /tmp/hb_p4 --variants launch --dtypes f32 --lhs k --rhs n --probe 1,3,96,4100 1,7,64,4096
run mask_p4 15 /tmp/hb_p4 --variants launch --dtypes f32 --lhs k --rhs n --mask --reps 300 1,1,4096,4096 1,8,4096,4096
{
grep -h "^test \|test result\|panicked" /tmp/logs/lib_*.log /tmp/logs/tests_*.log /tmp/logs/exact_*.log | grep -v " ok$" | head -40
echo "== mutant (must fail)"; grep -h "test result\|panicked\|few rows\|outside" /tmp/logs/mutant_p4.log | head -8
echo "== probe, mask"; grep -h "RESULT\|panic\|wrong" /tmp/logs/probe_p4.log /tmp/logs/mask_p4.log | cut -c1-100 | head
echo "elapsed $(( $(date +%s) - T0 )) s"
} >> $OUT/summary.txt
save
ab 2
{ for f in /tmp/logs/ab*_2.log; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-80; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
run memcheck 30 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/hb_p4 --variants launch --dtypes f32 --lhs k --rhs n --reps 2 1,6,4100,4100
run racecheck 60 compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/hb_p4 --variants launch --dtypes f32 --lhs k --rhs n --reps 1 1,6,1024,4100
{ tail -2 /tmp/logs/memcheck.log; tail -2 /tmp/logs/racecheck.log; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
NCU="ncu --clock-control none --cache-control none --section SpeedOfLight --import-source no"
for b in hb_cl hb_p4; do
  run ncu_$b 40 $NCU --launch-skip 2 --launch-count 2 -o /tmp/ncu_$b /tmp/$b --variants launch --dtypes f32 --lhs k --rhs n --reps 2 1,1,4096,4096
  ncu -i /tmp/ncu_$b.ncu-rep --page details > /tmp/logs/details_$b.txt 2>&1
done
{ for f in /tmp/logs/details_*; do echo "== $f"; grep -hE "^  [a-zA-Z_0-9]+.*\(|Duration|DRAM Throughput" $f; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
