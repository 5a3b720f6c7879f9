#!/bin/bash
# Where cuBLASLt's fused kernel spends its warps' time at 16384 x 1024 x 4096 bf16: ncu's
# per-instruction stall sampling (SASS), one launch, clocks free; the same for fmar's kernel.
set -u
mkdir -p /tmp/logs; rm -f /tmp/logs/*
save() { (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
xz -dc .gpu/hb_main.xz > /tmp/hb_main && chmod +x /tmp/hb_main
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > /tmp/logs/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; save; }
NCU="ncu --clock-control none --section SourceCounters --section WarpStateStats --section SpeedOfLight --import-source no"
run prof_lt 90 $NCU -k "regex:nvjet" --launch-skip 10 --launch-count 1 -o /tmp/prof_lt python3 .gpu/pow_torch.py 16384,1024,4096,0.001
run sass_lt 60 ncu -i /tmp/prof_lt.ncu-rep --page source --csv --print-source sass
run prof_fmar 90 $NCU -k regex:fused_matmul --launch-skip 3 --launch-count 1 -o /tmp/prof_fmar /tmp/hb_main --variants hopper --outputs 1 --rhs n --dtypes bf16 --reps 5 1,16384,1024,4096
run sass_fmar 60 ncu -i /tmp/prof_fmar.ncu-rep --page source --csv --print-source sass
gzip -c /tmp/logs/sass_lt.log > $OUT/sass_lt.csv.gz; gzip -c /tmp/logs/sass_fmar.log > $OUT/sass_fmar.csv.gz
save
