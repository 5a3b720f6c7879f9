#!/bin/bash
# `swapped_tiles` with its cubes taking tiles in groups of 8 tile rows a weight column
# (`hb_g8`, `t_g8`: main with `tile_of_cube`) against the grid's own order (`hb_main`:
# hopper_bench of 6f00a94), f32 with an N-major weight, each launch writing a fresh output, two
# rounds in turn. Then the kernel tests of `g8` and its mutant (`t_mut`: the epilogue storing
# at the grid's own order while the producer reads the grouped tile: it must fail), then one
# round under the mask's epilogue, and memcheck. Pack: `.gpu/c9.tar.xz`.
set -u
T0=$(date +%s)
. bench/scripts/device-lib.sh
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total,power.limit --format=csv > $OUT/gpu.txt
unpack_tar c9
A="--variants launch --dtypes f32 --lhs k --rhs n --outputs 0"
run hang_g8 30 /tmp/hb_g8 $A --reps 5 1,1100,200,4104
grep -q "RESULT F32 1,1100,200" /tmp/logs/hang_g8.log || { echo "hang_g8 did not finish" >> $OUT/summary.txt; exit 0; }
S="1,8192,8192,8192 1,4096,4096,4096 1,16384,1024,4096 8,1024,1024,1024 1,2048,4096,4096 1,1280,4096,4096"
for i in 1 2; do for b in main g8; do run ab_${b}_$i 60 /tmp/hb_$b $A --reps 40 $S; done; done
{ for f in /tmp/logs/ab_*.log; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-100; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
run_beside tests_g8 150 /tmp/t_g8 hopper_runs_exactly mask --test-threads 1 &
run_beside mutant 150 /tmp/t_mut hopper_runs_exactly --test-threads 1 &
wait
{
grep -h "^test \|test result\|panicked" /tmp/logs/tests_g8.log /tmp/logs/mutant.log | head -20
grep -h "hopper F32" /tmp/logs/mutant.log | cut -c1-200 | head -3
echo "elapsed $(( $(date +%s) - T0 )) s"
} >> $OUT/summary.txt
save
for b in main g8; do run mask_$b 40 /tmp/hb_$b $A --mask --reps 40 1,8192,8192,8192 1,4096,4096,4096 1,16384,1024,4096; done
{ for f in /tmp/logs/mask_*.log; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-100; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
run memcheck 90 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/hb_g8 $A --reps 1 1,1100,72,4104 3,700,32,2056
{ tail -2 /tmp/logs/memcheck.log; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
