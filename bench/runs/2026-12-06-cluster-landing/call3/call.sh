#!/bin/bash
# On an H200: the hand-over in the main kernel's order (hb_lk, t_lk, x_lk, l_lk: the build that
# lands) checked (kernel tests, exact_f32, lib, probe, mask, memcheck, synccheck, racecheck),
# then against main as it was (hb_new, 7646bc6), kernel alone; then the f32 Burn table
# (fmar-bench of the same tree, cuda-nvrtc) and PyTorch's anchor of the same shapes.
set -u
T0=$(date +%s)
. bench/scripts/device-lib.sh
here=$(pwd)
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
tar xJf .gpu/lk.tar.xz -C /tmp && chmod +x /tmp/hb_* /tmp/t_* /tmp/x_* /tmp/l_* /tmp/fmar-bench
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total,power.limit --format=csv > $OUT/gpu.txt
A="--variants launch --dtypes f32 --lhs k --rhs n"
run hang_lk 20 /tmp/hb_lk $A --reps 20 1,1,4096,4096 1,6,4100,4100
grep -q "RESULT F32 1,6,4100" /tmp/logs/hang_lk.log || exit 0
run tests_lk 110 /tmp/t_lk hopper few_row mask --test-threads 1
run exact_lk 25 /tmp/x_lk --test-threads 1
run lib_lk 25 /tmp/l_lk finish_kernels few_rows_cluster --test-threads 1
run probe_lk 15 /tmp/hb_lk $A --probe 1,3,96,4100 1,7,64,4096 1,1,64,4096
run mask_lk 15 /tmp/hb_lk $A --mask --reps 300 1,1,4096,4096 1,8,4096,4096
run memcheck 30 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/hb_lk $A --reps 2 1,6,4100,4100 1,1,4096,4096
run synccheck 30 compute-sanitizer --tool synccheck --error-exitcode 9 /tmp/hb_lk $A --reps 1 1,6,1024,4100
run racecheck 30 compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/hb_lk $A --reps 1 1,2,64,4096 1,6,1024,4100
{
grep -h "^test \|test result\|panicked" /tmp/logs/lib_*.log /tmp/logs/tests_*.log /tmp/logs/exact_*.log | grep -v " ok$" | head -40
echo "== probe, mask"; grep -h "RESULT\|panic\|wrong" /tmp/logs/probe_lk.log /tmp/logs/mask_lk.log | cut -c1-100 | head
tail -2 /tmp/logs/memcheck.log; tail -2 /tmp/logs/synccheck.log; tail -2 /tmp/logs/racecheck.log
echo "elapsed $(( $(date +%s) - T0 )) s"
} >> $OUT/summary.txt
save
S="1,1,4096,4096 1,4,4096,4096 1,8,4096,4096 4,1,4096,4096 1,1,4096,8192 1,6,4100,4100"
for i in 1 2; do for b in hb_new hb_lk; do run ab_${b}_$i 30 /tmp/$b $A --reps 300 $S; done; done
{ for f in /tmp/logs/ab*.log; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-75; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
mkdir -p /tmp/w && cd /tmp/w
export BURN_DEVICE=cuda XDG_CACHE_HOME=/tmp/w/cache
SHAPES="1,4096,4096,4096;1,8192,8192,8192;1,16384,1024,4096;8,1024,1024,1024;64,128,128,128;1,128,4096,4096;1,16,4096,4096;1,1,4096,4096;1,64,64,64"
run bench_f32 150 /tmp/fmar-bench --dtype f32 --no-variants --budget-ms 60 --shapes "$SHAPES" --json $OUT/f32.json
mkdir -p /tmp/a32 && run anchor32 70 env OUT=/tmp/a32 ANCHOR_COMPILE=0 ANCHOR_LOOP=1 ANCHOR_DTYPES=f32,tf32 ANCHOR_SHAPES="$SHAPES" PYTHONUNBUFFERED=1 python3 $here/bench/scripts/torch_anchor.py
cp /tmp/a32/torch_anchor.json $OUT/torch_anchor_f32.json
{ echo "== f32"; grep -E "^\|" /tmp/logs/bench_f32.log | head -40; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
