#!/bin/bash
# The one-launch few-row kernel as kept (32 columns a cube, clusters of 2, up to 4 rows):
# t_cl/x_cl/l_cl its kernel tests, exact_f32, lib tests; t_clmut without the other cube's sums
# (must fail); hb_cl its kernel against hb_land (9099cf5, two launches).
set -u
T0=$(date +%s)
. bench/scripts/device-lib.sh
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
tar xJf .gpu/cl2.tar.xz -C /tmp && chmod +x /tmp/hb_* /tmp/t_* /tmp/x_* /tmp/l_*
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total,power.limit --format=csv > $OUT/gpu.txt
run tests_cl 110 /tmp/t_cl hopper few_row mask --test-threads 1
run mutant_cl 40 /tmp/t_clmut few_row mask --test-threads 1
run exact_cl 25 /tmp/x_cl --test-threads 1
run lib_cl 25 /tmp/l_cl finish_kernels few_rows_cluster --test-threads 1
run probe_cl 15 /tmp/hb_cl --variants launch --dtypes f32 --lhs k --rhs n --probe 1,3,96,4100 1,2,40,4096
run mask_cl 15 /tmp/hb_cl --variants launch --dtypes f32 --lhs k --rhs n --mask --reps 300 1,1,4096,4096 1,4,4096,4096
{
grep -h "^test \|test result\|panicked" /tmp/logs/lib_*.log /tmp/logs/tests_*.log /tmp/logs/exact_*.log | grep -v " ok$" | head -40
echo "== mutant (must fail)"; grep -h "test result\|panicked\|few rows\|outside" /tmp/logs/mutant_cl.log | head -8
echo "== probe, mask"; grep -h "RESULT\|panic\|wrong" /tmp/logs/probe_cl.log /tmp/logs/mask_cl.log | cut -c1-100 | head
echo "elapsed $(( $(date +%s) - T0 )) s"
} >> $OUT/summary.txt
save
S="1,1,4096,4096 1,4,4096,4096 4,1,4096,4096 1,2,4096,11008 1,1,4096,14336 1,8,4096,4096"
for b in hb_land hb_cl; do run ab_${b}_1 30 /tmp/$b --variants launch --dtypes f32 --lhs k --rhs n --reps 300 $S; done
{ for f in /tmp/logs/ab*_1.log; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-80; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
run memcheck 30 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/hb_cl --variants launch --dtypes f32 --lhs k --rhs n --reps 2 1,3,4100,4100
{ tail -2 /tmp/logs/memcheck.log; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
