#!/bin/bash
# racecheck of the new hand-over (hb_ld) timed out in s31: is it the tool with st.async?
# The main kernel's split-K (bf16, one row: clusters whose cubes store with st.async) under
# racecheck, and hb_ld on a tiny problem, each with a limit.
set -u
. bench/scripts/device-lib.sh
tar xJf .gpu/ld.tar.xz -C /tmp hb_ld hb_new && chmod +x /tmp/hb_*
run rc_main_splitk 45 compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/hb_new --variants launch --dtypes bf16 --lhs k --rhs n --reps 1 1,1,1024,1024
run rc_ld_tiny 45 compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/hb_ld --variants launch --dtypes f32 --lhs k --rhs n --reps 1 1,2,64,4096
{ tail -3 /tmp/logs/rc_main_splitk.log; tail -3 /tmp/logs/rc_ld_tiny.log; } >> $OUT/summary.txt
save
