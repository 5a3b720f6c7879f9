#!/bin/bash
# The few-row product in one launch (clusters of a column block's slices, summed in the first
# cube through distributed shared memory): hb_cl/t_cl/x_cl/l_cl its kernel, kernel tests,
# exact_f32 and lib tests; t_clmut = t_cl without the other cubes' sums (must fail); hb_land =
# the baseline (9099cf5: main's kernels for these shapes, two launches).
set -u
T0=$(date +%s)
. bench/scripts/device-lib.sh
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
tar xJf .gpu/cl.tar.xz -C /tmp && chmod +x /tmp/hb_* /tmp/t_* /tmp/x_* /tmp/l_*
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total,power.limit --format=csv > $OUT/gpu.txt
S="1,1,4096,4096 1,4,4096,4096 1,8,4096,4096 4,1,4096,4096 1,1,8192,8192 1,1,4096,11008 1,8,11008,4096 1,1,4096,2048 1,16,4096,4096"
ab() { for b in hb_land hb_cl; do run ab_${b}_$1 40 /tmp/$b --variants launch --dtypes f32 --lhs k --rhs n --reps 300 $S; done; }
ab 1
{ for f in /tmp/logs/ab*_1.log; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-80; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
run mutant_cl 60 /tmp/t_clmut few_row mask --test-threads 1
run tests_cl 150 /tmp/t_cl hopper few_row mask --test-threads 1
run exact_cl 40 /tmp/x_cl --test-threads 1
run lib_cl 45 /tmp/l_cl finish_kernels few_rows_cluster --test-threads 1
run probe_cl 30 /tmp/hb_cl --variants launch --dtypes f32 --lhs k --rhs n --probe 1,3,96,4100 1,8,64,8192
run mask_cl 30 /tmp/hb_cl --variants launch --dtypes f32 --lhs k --rhs n --mask --reps 300 1,1,4096,4096 1,8,4096,4096
{
grep -h "^test \|test result\|panicked" /tmp/logs/lib_*.log /tmp/logs/tests_*.log /tmp/logs/exact_*.log | grep -v " ok$" | head -40
echo "== mutant (must fail)"; grep -h "test result\|panicked\|few rows\|outside" /tmp/logs/mutant_cl.log | head -8
echo "== probe, mask"; grep -h "RESULT\|panic\|wrong" /tmp/logs/probe_cl.log /tmp/logs/mask_cl.log | cut -c1-100 | head
echo "elapsed $(( $(date +%s) - T0 )) s"
} >> $OUT/summary.txt
save
ab 2
{ for f in /tmp/logs/ab*_2.log; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-80; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
run memcheck 60 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/hb_cl --variants launch --dtypes f32 --lhs k --rhs n --reps 2 1,5,4100,4100 1,3,200,34000
run racecheck 90 compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/hb_cl --variants launch --dtypes f32 --lhs k --rhs n --reps 1 1,5,1024,4100
{ tail -3 /tmp/logs/memcheck.log; tail -3 /tmp/logs/racecheck.log; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
NCU="ncu --clock-control none --cache-control none --section SpeedOfLight --import-source no"
for b in hb_land hb_cl; do
  [ $(( $(date +%s) - T0 )) -gt 420 ] && break
  run ncu_$b 40 $NCU --launch-skip 4 --launch-count 4 -o /tmp/ncu_$b /tmp/$b --variants launch --dtypes f32 --lhs k --rhs n --reps 4 1,1,4096,4096
  ncu -i /tmp/ncu_$b.ncu-rep --page details > /tmp/logs/details_$b.txt 2>&1
done
{ for f in /tmp/logs/details_*; do echo "== $f"; grep -hE "^  [a-zA-Z_0-9]+.*\(|Duration|DRAM Throughput" $f; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
