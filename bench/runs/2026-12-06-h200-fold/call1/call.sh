#!/bin/bash
# Branch land2 (main + finish-vectors + few-rows-tma + a shared weight's batches as rows):
# hb_land its kernel, t_land/x_land/l_land its kernel tests, exact_f32 and lib tests;
# t_foldmut = t_land with row_stride not checking that outer dims continue the inner stride
# (must fail); hb_main = main 621599a's kernel (built at b1c4ecb). Then through Burn
# (fmar-bench of land2): the property harness pinned to the Hopper kernel, the f32 table with
# PyTorch for BENCHMARKS.md.
set -u
T0=$(date +%s)
. bench/scripts/device-lib.sh
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
here=$(pwd)
tar xJf .gpu/land.tar.xz -C /tmp && chmod +x /tmp/hb_* /tmp/t_* /tmp/x_* /tmp/l_*
for b in properties; do [ -f .gpu/$b.xz ] && xz -dc .gpu/$b.xz > /tmp/$b && chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total,power.limit --format=csv > $OUT/gpu.txt
echo "unpacked $(( $(date +%s) - T0 )) s" >> $OUT/summary.txt
S="1,1,4096,4096 1,4,4096,4096 1,8,4096,4096 1,1,8192,8192 4,1,4096,4096 2,4,4096,4096 8,1,4096,4096 4,4,4096,4096 4,16,4096,4096 1,16,4096,4096 1,64,4096,4096 1,128,4096,4096 1,128,4096,11008 4,100,1000,2056"
ab() { for b in hb_main hb_land; do run ab_${b}_$1 40 /tmp/$b --variants launch --dtypes f32 --lhs k --rhs n --reps 200 $S; done; }
ab 1
{ for f in /tmp/logs/ab*_1.log; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-110; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
run mutant_fold 60 /tmp/t_foldmut few_row mask --test-threads 1
run lib_land 45 /tmp/l_land finish_kernels --test-threads 1
run tests_land 120 /tmp/t_land hopper few_row mask --test-threads 1
run exact_land 40 /tmp/x_land --test-threads 1
{
grep -h "^test \|test result\|panicked" /tmp/logs/lib_*.log /tmp/logs/tests_*.log /tmp/logs/exact_*.log | grep -v " ok$" | head -40
echo "== mutant (must fail)"; grep -h "test result\|panicked\|few rows\|outside" /tmp/logs/mutant_fold.log | head -8
echo "elapsed $(( $(date +%s) - T0 )) s"
} >> $OUT/summary.txt
save
mkdir -p /tmp/w && cd /tmp/w
export BURN_DEVICE=cuda XDG_CACHE_HOME=/tmp/w/cache
[ -x /tmp/properties ] && run properties 90 env FMAR_KERNEL=hopper FMAR_PROPTEST_ALIGN=8 FMAR_PROPTEST_CASES=100 FMAR_PROPTEST_VERBOSE=1 /tmp/properties --test-threads 1 --nocapture
{ echo "cases run: $(grep -c '^case ' /tmp/logs/properties.log)"; grep -h "^test \|test result" /tmp/logs/properties.log; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
