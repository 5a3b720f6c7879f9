#!/bin/bash
set -u
. bench/scripts/device-lib.sh
unpack hb_mend
run ragged 120 /tmp/hb_mend --variants hopper --outputs 1 --dtypes f32 --lhs k,m --rhs n --reps 300 1,1,4096,4096 1,4,4096,4096 1,5,1000,2056 3,8,2048,1000 1,16,4096,4096 2,16,1288,520 1,1,8192,8192
{ grep -h "RESULT\|panic" /tmp/logs/ragged.log | cut -c1-130; echo "ok: $(grep -c ' ok (' /tmp/logs/ragged.log)"; } >> $OUT/summary.txt
save
