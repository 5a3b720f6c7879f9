#!/bin/bash
# Where the stream-K kernel's extra time goes: ncu's SASS-level stall sampling of it at
# 16384 x 1024 x 4096 and 4096^3 bf16 (call 2: 233 us against main's 204, 207 against 181).
set -u
mkdir -p /tmp/logs; rm -f /tmp/logs/*
save() { (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
xz -dc .gpu/hb_sk.xz > /tmp/hb_sk && chmod +x /tmp/hb_sk
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > /tmp/logs/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; save; }
SK="/tmp/hb_sk --variants hopper --outputs 1 --rhs n --dtypes bf16 --reps 5"
for shape in 1,16384,1024,4096 1,4096,4096,4096; do
  run ncu_$shape 150 ncu --clock-control none --section SourceCounters --section WarpStateStats --section SpeedOfLight --import-source no -k regex:fused_matmul --launch-skip 2 --launch-count 1 -o /tmp/rep_$shape $SK $shape
  ncu -i /tmp/rep_$shape.ncu-rep --page details > /tmp/logs/details_$shape.txt 2>&1
  ncu -i /tmp/rep_$shape.ncu-rep --page source --csv --print-source sass > /tmp/logs/sass_$shape.csv 2>&1
  save
done
