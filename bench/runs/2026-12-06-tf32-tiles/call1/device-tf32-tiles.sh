#!/bin/bash
# (A record, as call1 ran it at commit d73b630. Its probe shapes are not exact under TF32 and
# its test time limits were too short: see call2.)
# One device call that checks and times `swapped_tiles` (f32 above 128 rows with an N-major
# weight, computed transposed over whole 128 x 256 tiles: the weight the TF32 MMAs' register
# operand, no K-major copy) against the path it replaces. From the repository root, with OUT
# set and `.gpu/st.tar.xz` as `build-tf32-tiles.sh` packs it:
#   hb_st, t_st, l_st: the kernel bench (`hopper_bench`), `against_f64` and the kernel crate's
#                      lib tests, with `swapped_tiles` selected;
#   t_mut:             `against_f64` of a mutant whose `swapped_tiles` epilogue drops the bias
#                      (the tests must catch it);
#   hb_lk:             the kernel bench without it (the K-major copy, then the main kernel).
# Copy this script into the run's record as its call.sh.
set -u
T0=$(date +%s)
. bench/scripts/device-lib.sh
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
tar xJf .gpu/st.tar.xz -C /tmp && chmod +x /tmp/hb_* /tmp/t_* /tmp/l_*
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total,power.limit --format=csv > $OUT/gpu.txt
A="--variants launch --dtypes f32 --lhs k --rhs n"
run hang_st 30 /tmp/hb_st $A --reps 5 1,4096,4096,4096 1,1100,200,4104
grep -h "RESULT\|panic" /tmp/logs/hang_st.log | cut -c1-90 >> $OUT/summary.txt
grep -q "RESULT F32 1,1100,200" /tmp/logs/hang_st.log || exit 0
S="1,4096,4096,4096 1,16384,1024,4096 1,8192,8192,8192 8,1024,1024,1024 1,1280,4096,4096 1,2048,4096,4096 4,512,1024,4096"
ab() { for b in hb_lk hb_st; do run ab_${b}_$1 40 /tmp/$b $A --reps 100 $S; done; }
ab 1
{ for f in /tmp/logs/ab*_1.log; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-80; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
run tests_st 110 /tmp/t_st hopper few_row mask --test-threads 1
run lib_st 20 /tmp/l_st swapped_tiles finish_kernels --test-threads 1
run mutant 60 /tmp/t_mut hopper_runs_exactly --test-threads 1
run probe_st 20 /tmp/hb_st $A --probe 1,1100,96,4104 1,600,64,8200 2,260,64,4104
run memcheck 30 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/hb_st $A --reps 1 1,1100,200,4104 1,1100,72,4104
{
grep -h "^test \|test result\|panicked" /tmp/logs/lib_*.log /tmp/logs/tests_*.log /tmp/logs/mutant.log | grep -v " ok$" | head -30
grep -h "assert\|relative\|differ" /tmp/logs/mutant.log | head -5
echo "== probe"; grep -h "RESULT\|panic\|wrong" /tmp/logs/probe_st.log | cut -c1-100 | head
tail -2 /tmp/logs/memcheck.log
echo "elapsed $(( $(date +%s) - T0 )) s"
} >> $OUT/summary.txt
save
ab 2
for b in hb_lk hb_st; do run mask_$b 40 /tmp/$b $A --mask --reps 100 1,4096,4096,4096 1,2048,4096,4096; done
{ for f in /tmp/logs/ab*_2.log /tmp/logs/mask_hb_*.log; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-80; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
