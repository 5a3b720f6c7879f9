#!/bin/bash
# Where the store-overlap kernel's warps stall: ncu's source counters (warp stall samples per
# SASS instruction) for it and main's kernel at 4096³ bf16, one launch each, printed per
# instruction as CSV.
set -u
mkdir -p /tmp/logs; rm -f /tmp/logs/*
save() { (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
for f in hb_main hb_ovl; do xz -dc .gpu/$f.xz > /tmp/$f && chmod +x /tmp/$f; done
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > /tmp/logs/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; save; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
for v in main ovl; do
  run prof_$v 150 ncu --clock-control none --section SourceCounters --section WarpStateStats -k regex:fused_matmul --launch-skip 3 --launch-count 1 -o /tmp/prof_$v /tmp/hb_$v --variants hopper --outputs 1 --rhs n --dtypes bf16 --reps 5 1,4096,4096,4096
  run sass_$v 120 ncu -i /tmp/prof_$v.ncu-rep --page source --csv --print-source sass
  run details_$v 60 ncu -i /tmp/prof_$v.ncu-rep --page details
  gzip -c /tmp/logs/sass_$v.log > $OUT/sass_$v.csv.gz
done
save
