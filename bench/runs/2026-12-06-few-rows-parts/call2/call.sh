#!/bin/bash
# The one-launch few-row kernel with lhs's rows copied unswizzled (128 bytes a row, not a 1 KiB
# atom a stage) and the stages that frees (26 at one row, 24 at 4, 21 at 8): hb_pl/t_pl/x_pl/l_pl.
# hb_p4 = cluster-parts (four units a column, 20 stages); hb_land = two launches (9099cf5).
set -u
T0=$(date +%s)
. bench/scripts/device-lib.sh
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
tar xJf .gpu/p4.tar.xz -C /tmp hb_p4 hb_land && tar xJf .gpu/pl.tar.xz -C /tmp && chmod +x /tmp/hb_* /tmp/t_* /tmp/x_* /tmp/l_*
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total,power.limit --format=csv > $OUT/gpu.txt
S="1,1,4096,4096 1,4,4096,4096 1,8,4096,4096 4,1,4096,4096 1,8,11008,4096 1,1,11008,4096 1,1,8192,8192 1,1,4096,8192 1,6,4100,4100"
ab() { for b in hb_land hb_p4 hb_pl; do run ab_${b}_$1 40 /tmp/$b --variants launch --dtypes f32 --lhs k --rhs n --reps 300 $S; done; }
ab 1
{ for f in /tmp/logs/ab*_1.log; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-80; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
run tests_pl 110 /tmp/t_pl hopper few_row mask --test-threads 1
run exact_pl 25 /tmp/x_pl --test-threads 1
run lib_pl 25 /tmp/l_pl finish_kernels few_rows_cluster --test-threads 1
run probe_pl 15 /tmp/hb_pl --variants launch --dtypes f32 --lhs k --rhs n --probe 1,3,96,4100 1,7,64,4096 1,1,64,4096
run mask_pl 15 /tmp/hb_pl --variants launch --dtypes f32 --lhs k --rhs n --mask --reps 300 1,1,4096,4096 1,8,4096,4096
{
grep -h "^test \|test result\|panicked" /tmp/logs/lib_*.log /tmp/logs/tests_*.log /tmp/logs/exact_*.log | grep -v " ok$" | head -40
echo "== probe, mask"; grep -h "RESULT\|panic\|wrong" /tmp/logs/probe_pl.log /tmp/logs/mask_pl.log | cut -c1-100 | head
echo "elapsed $(( $(date +%s) - T0 )) s"
} >> $OUT/summary.txt
save
ab 2
{ for f in /tmp/logs/ab*_2.log; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-80; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
run memcheck 30 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/hb_pl --variants launch --dtypes f32 --lhs k --rhs n --reps 2 1,6,4100,4100 1,1,4096,4096
run racecheck 60 compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/hb_pl --variants launch --dtypes f32 --lhs k --rhs n --reps 1 1,6,1024,4100
{ tail -2 /tmp/logs/memcheck.log; tail -2 /tmp/logs/racecheck.log; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
NCU="ncu --clock-control none --cache-control none --section SpeedOfLight --section LaunchStats --section Occupancy --import-source no"
for b in hb_p4 hb_pl; do
  run ncu_$b 40 $NCU --launch-skip 2 --launch-count 2 -o /tmp/ncu_$b /tmp/$b --variants launch --dtypes f32 --lhs k --rhs n --reps 2 1,1,4096,4096
  ncu -i /tmp/ncu_$b.ncu-rep --page details > /tmp/logs/details_$b.txt 2>&1
done
{ for f in /tmp/logs/details_*; do echo "== $f"; grep -hE "^  [a-zA-Z_0-9]+.*\(|Duration|DRAM Throughput|Shared Memory Configuration Size|Dynamic Shared|Achieved Occupancy|Registers Per" $f; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
