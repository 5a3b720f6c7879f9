#!/bin/bash
# call1's build hung at every launch. Its first cube's unit 0 alone waited on the cluster
# barrier at set-up (the rest of its warp went on into the main loop). Three builds of the
# hand-over, each first checked for a hang on its own:
#   hb_ld: as call1, but the whole first warp of the first cube waits on the cluster barrier
#          at set-up; its unit 0 then expects the bytes and arrives on the other cube's `ready`
#          (t_ld, x_ld, l_ld: tests of this build);
#   hb_lk: the main kernel's order: the first cube's column units wait on the cluster barrier
#          after their loop, then its unit 0 expects the bytes and arrives on `ready`;
#   hb_nr: no `ready`: the first cube's unit 0 expects the bytes at set-up, before the cluster
#          arrival; the other cube's column units wait on the cluster barrier, then store.
# hb_new = main as it was (7646bc6).
set -u
T0=$(date +%s)
. bench/scripts/device-lib.sh
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
tar xJf .gpu/ld.tar.xz -C /tmp && chmod +x /tmp/hb_* /tmp/t_* /tmp/x_* /tmp/l_*
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total,power.limit --format=csv > $OUT/gpu.txt
A="--variants launch --dtypes f32 --lhs k --rhs n"
ok=""
for b in hb_ld hb_lk hb_nr; do
  run hang_$b 20 /tmp/$b $A --reps 20 1,1,4096,4096 1,6,4100,4100
  grep -q "RESULT F32 1,6,4100" /tmp/logs/hang_$b.log && ok="$ok $b"
done
{ grep -h "RESULT\|panic" /tmp/logs/hang_*.log | cut -c1-75; echo "finished:$ok"; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
[ -z "$ok" ] && exit 0
RC="compute-sanitizer --tool racecheck --error-exitcode 9"
for b in $ok; do
  run rc_$b 40 $RC /tmp/$b $A --reps 1 1,2,64,4096 1,6,1024,4100
  grep -h "RESULT\|SUMMARY" /tmp/logs/rc_$b.log | cut -c1-100 >> $OUT/summary.txt
done
echo "elapsed $(( $(date +%s) - T0 )) s" >> $OUT/summary.txt
save
S="1,1,4096,4096 1,4,4096,4096 1,8,4096,4096 4,1,4096,4096 1,1,4096,8192 1,6,4100,4100"
ab() { for b in hb_new $ok; do run ab_${b}_$1 30 /tmp/$b $A --reps 300 $S; done; }
ab 1
{ for f in /tmp/logs/ab*_1.log; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-75; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
case "$ok" in *hb_ld*)
  run tests_ld 110 /tmp/t_ld hopper few_row mask --test-threads 1
  run exact_ld 25 /tmp/x_ld --test-threads 1
  run lib_ld 25 /tmp/l_ld finish_kernels few_rows_cluster --test-threads 1
  run probe_ld 15 /tmp/hb_ld $A --probe 1,3,96,4100 1,7,64,4096 1,1,64,4096
  run mask_ld 15 /tmp/hb_ld $A --mask --reps 300 1,1,4096,4096 1,8,4096,4096
  run memcheck 30 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/hb_ld $A --reps 2 1,6,4100,4100 1,1,4096,4096
  run synccheck 60 compute-sanitizer --tool synccheck --error-exitcode 9 /tmp/hb_ld $A --reps 1 1,6,1024,4100
  {
  grep -h "^test \|test result\|panicked" /tmp/logs/lib_*.log /tmp/logs/tests_*.log /tmp/logs/exact_*.log | grep -v " ok$" | head -40
  echo "== probe, mask"; grep -h "RESULT\|panic\|wrong" /tmp/logs/probe_ld.log /tmp/logs/mask_ld.log | cut -c1-100 | head
  tail -2 /tmp/logs/memcheck.log; tail -2 /tmp/logs/synccheck.log
  echo "elapsed $(( $(date +%s) - T0 )) s"
  } >> $OUT/summary.txt
  save;;
esac
ab 2
{ for f in /tmp/logs/ab*_2.log; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-75; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
