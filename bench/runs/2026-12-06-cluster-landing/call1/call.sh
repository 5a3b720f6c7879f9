#!/bin/bash
# The one-launch few-row kernel's hand-over without released cluster barriers, ordered as the
# main kernel's split-K orders it: the first cube's unit 0 waits for the cluster's set-up
# arrival, arrives on its `landed` mbarrier expecting the other cube's bytes, then arrives on
# the other cube's `ready`; the other cube's column units wait on `ready` before their
# `st.async` stores. hb_ld, t_ld, x_ld, l_ld = that build; hb_new = main as it was (7646bc6).
# racecheck first: the earlier order did not finish under it.
set -u
T0=$(date +%s)
. bench/scripts/device-lib.sh
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
tar xJf .gpu/ld.tar.xz -C /tmp && chmod +x /tmp/hb_* /tmp/t_* /tmp/x_* /tmp/l_*
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total,power.limit --format=csv > $OUT/gpu.txt
A="--variants launch --dtypes f32 --lhs k --rhs n"
RC="compute-sanitizer --tool racecheck --error-exitcode 9"
run rc_ld_tiny 45 $RC /tmp/hb_ld $A --reps 1 1,2,64,4096
run rc_ld 60 $RC /tmp/hb_ld $A --reps 1 1,6,1024,4100
run rc_new 30 $RC /tmp/hb_new $A --reps 1 1,6,1024,4100
{ for f in rc_ld_tiny rc_ld rc_new; do echo "== $f"; grep -h "RESULT\|SUMMARY\|panic" /tmp/logs/$f.log | cut -c1-110; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
S="1,1,4096,4096 1,4,4096,4096 1,8,4096,4096 4,1,4096,4096 1,1,4096,8192 1,6,4100,4100"
ab() { for b in hb_new hb_ld; do run ab_${b}_$1 30 /tmp/$b $A --reps 300 $S; done; }
ab 1
{ for f in /tmp/logs/ab*_1.log; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-75; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
run tests_ld 110 /tmp/t_ld hopper few_row mask --test-threads 1
run exact_ld 25 /tmp/x_ld --test-threads 1
run lib_ld 25 /tmp/l_ld finish_kernels few_rows_cluster --test-threads 1
run probe_ld 15 /tmp/hb_ld $A --probe 1,3,96,4100 1,7,64,4096 1,1,64,4096
run mask_ld 15 /tmp/hb_ld $A --mask --reps 300 1,1,4096,4096 1,8,4096,4096
{
grep -h "^test \|test result\|panicked" /tmp/logs/lib_*.log /tmp/logs/tests_*.log /tmp/logs/exact_*.log | grep -v " ok$" | head -40
echo "== probe, mask"; grep -h "RESULT\|panic\|wrong" /tmp/logs/probe_ld.log /tmp/logs/mask_ld.log | cut -c1-100 | head
echo "elapsed $(( $(date +%s) - T0 )) s"
} >> $OUT/summary.txt
save
ab 2
{ for f in /tmp/logs/ab*_2.log; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-75; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
run memcheck 30 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/hb_ld $A --reps 2 1,6,4100,4100 1,1,4096,4096
run synccheck 60 compute-sanitizer --tool synccheck --error-exitcode 9 /tmp/hb_ld $A --reps 1 1,6,1024,4100
{ tail -2 /tmp/logs/memcheck.log; tail -2 /tmp/logs/synccheck.log; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
NCU="ncu --clock-control none --cache-control none --section SpeedOfLight --import-source no"
for b in hb_new hb_ld; do
  run ncu_$b 40 $NCU --launch-skip 2 --launch-count 2 -o /tmp/ncu_$b /tmp/$b $A --reps 2 1,1,4096,4096
  ncu -i /tmp/ncu_$b.ncu-rep --page details > /tmp/logs/details_$b.txt 2>&1
done
{ for f in /tmp/logs/details_*; do echo "== $f"; grep -hE "^  [a-zA-Z_0-9]+.*\(|Duration|DRAM Throughput" $f; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
