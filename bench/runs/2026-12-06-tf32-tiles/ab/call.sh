#!/bin/bash
# One device call: `swapped_tiles` as main has it against the persistent form, the paired
# stores and the two together (`.gpu/ab.tar.xz`, packed by `build.sh` beside this script).
# A hang check of each build first, then the kernel alone at the shapes it takes, two rounds in
# turn, then the kernel tests of each build side by side (`hopper_runs_exactly`, the
# mask's test), the mutant of `both` (its bias dropped: it must fail), the layout probe at
# shapes exact under TF32 with several tiles a cube, racecheck and memcheck of `both`.
# Also the mutant of main whose launch reads a broadcast weight as batched (`t_bmut`: it must
# fail on the `[3, 600, 40] x [1, 40, 2056]` case). The pack is `.gpu/abx.tar.xz`: the ten
# binaries in one xz stream with a 400 MiB dictionary (23 MB, against 59 + 26 MB apart).
set -u
T0=$(date +%s)
. bench/scripts/device-lib.sh
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
tar xJf .gpu/abx.tar.xz -C /tmp && chmod +x /tmp/hb_* /tmp/t_*
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total,power.limit --format=csv > $OUT/gpu.txt
A="--variants launch --dtypes f32 --lhs k --rhs n"
for b in main persistent pairs both; do
    run hang_$b 30 /tmp/hb_$b $A --reps 5 1,1100,200,4104
    grep -q "RESULT F32 1,1100,200" /tmp/logs/hang_$b.log || { echo "hang_$b did not finish" >> $OUT/summary.txt; exit 0; }
done
S="1,4096,4096,4096 1,16384,1024,4096 1,8192,8192,8192 8,1024,1024,1024 1,1280,4096,4096 1,2048,4096,4096 4,512,1024,4096"
for i in 1 2; do for b in main persistent pairs both; do run ab_${b}_$i 45 /tmp/hb_$b $A --reps 100 $S; done; done
for b in main both; do run mask_$b 40 /tmp/hb_$b $A --mask --reps 100 1,4096,4096,4096 1,16384,1024,4096; done
{ for f in /tmp/logs/ab_*.log /tmp/logs/mask_*.log; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-80; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
for b in main persistent pairs both; do run_beside tests_$b 200 /tmp/t_$b hopper_runs_exactly mask --test-threads 1 & done
run_beside mutant 200 /tmp/t_mut hopper_runs_exactly --test-threads 1 &
run_beside mutant_b 200 /tmp/t_bmut hopper_runs_exactly --test-threads 1 &
wait
P="1,17000,8,256 3,6000,8,256 1,34000,16,128 4,8500,32,64"
run probe_both 40 /tmp/hb_both $A --probe $P
run racecheck 90 compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/hb_both $A --reps 1 1,1100,72,4104
run racecheck_mask 90 compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/hb_both $A --mask --reps 1 1,1100,72,4104
run memcheck 60 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/hb_both $A --reps 1 1,1100,72,4104 3,600,40,2056
{
grep -h "^test \|test result\|panicked" /tmp/logs/tests_*.log /tmp/logs/mutant*.log | grep -v " ok$" | head -30
for f in mutant mutant_b; do grep -h "hopper F32" /tmp/logs/$f.log | cut -c1-200 | head -3; done
echo "== probe"; grep -h "RESULT\|panic\|wrong" /tmp/logs/probe_both.log | cut -c1-100
for f in racecheck racecheck_mask memcheck; do tail -1 /tmp/logs/$f.log; done
echo "elapsed $(( $(date +%s) - T0 )) s"
} >> $OUT/summary.txt
save
