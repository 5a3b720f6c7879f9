#!/bin/bash
# `swapped_tiles` checked again, with what call1 cut short given time: the kernel tests with
# it selected and the mutant without the bias (each process alone, the three side by side),
# the layout probe at shapes it is exact at under TF32 (`k n <= 2048`) with tiles for every
# multiprocessor, synccheck and racecheck. On an H200, then the f32 table through Burn with it
# (`fb_st`) and PyTorch's anchor, in the same call.
set -u
T0=$(date +%s)
. bench/scripts/device-lib.sh
here=$(pwd)
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
tar xJf .gpu/st.tar.xz -C /tmp && chmod +x /tmp/hb_* /tmp/t_* /tmp/l_*
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total,power.limit --format=csv > $OUT/gpu.txt
A="--variants launch --dtypes f32 --lhs k --rhs n"
run hang_st 30 /tmp/hb_st $A --reps 5 1,1100,200,4104
grep -q "RESULT F32 1,1100,200" /tmp/logs/hang_st.log || exit 0
P="1,17000,8,256 3,6000,8,256 1,34000,16,128 4,8500,32,64"
run probe_st 40 /tmp/hb_st $A --probe $P
run probe_lk 40 /tmp/hb_lk $A --probe $P
run synccheck 40 compute-sanitizer --tool synccheck --error-exitcode 9 /tmp/hb_st $A --reps 1 1,1100,72,4104
run racecheck 60 compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/hb_st $A --reps 1 1,1100,72,4104
{ grep -h "RESULT\|panic" /tmp/logs/probe_*.log | cut -c1-100; tail -1 /tmp/logs/synccheck.log; tail -1 /tmp/logs/racecheck.log; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
side() { local name=$1; shift; local s=$(date +%s); timeout 330 "$@" > /tmp/logs/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s) - s ))s" >> $OUT/summary.txt; }
side tests_hopper /tmp/t_st hopper_runs_exactly --test-threads 1 &
side tests_rest /tmp/t_st few_row hopper_product mask --test-threads 1 &
side mutant /tmp/t_mut hopper_runs_exactly --test-threads 1 &
wait
save
{
grep -h "^test \|test result\|panicked" /tmp/logs/tests_*.log /tmp/logs/mutant.log | grep -v " ok$" | head -30
grep -h "assert\|relative\|differ\|hopper F32" /tmp/logs/mutant.log | head -5
echo "elapsed $(( $(date +%s) - T0 )) s"
} >> $OUT/summary.txt
grep -q H200 $OUT/gpu.txt || exit 0
tar xJf .gpu/fb.tar.xz -C /tmp && chmod +x /tmp/fb_*
mkdir -p /tmp/w && cd /tmp/w
export BURN_DEVICE=cuda XDG_CACHE_HOME=/tmp/w/cache
SHAPES="1,4096,4096,4096;1,8192,8192,8192;1,16384,1024,4096;8,1024,1024,1024;64,128,128,128;1,128,4096,4096;1,16,4096,4096;1,1,4096,4096;1,64,64,64"
run bench_fb_st 150 /tmp/fb_st --dtype f32 --no-variants --budget-ms 60 --shapes "$SHAPES" --json $OUT/f32.json
mkdir -p /tmp/a32 && run anchor32 70 env OUT=/tmp/a32 ANCHOR_COMPILE=0 ANCHOR_LOOP=1 ANCHOR_DTYPES=f32,tf32 ANCHOR_SHAPES="$SHAPES" PYTHONUNBUFFERED=1 python3 $here/bench/scripts/torch_anchor.py
cp /tmp/a32/torch_anchor.json $OUT/torch_anchor_f32.json
{ grep -E "^\|" /tmp/logs/bench_fb_st.log | grep forward | grep -v backward | head -40; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
