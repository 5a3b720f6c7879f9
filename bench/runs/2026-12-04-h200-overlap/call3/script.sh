#!/bin/bash
# Why the store-overlap kernel (hopper-epilogue-overlap 52260f2) runs 40-46% slower than main's
# (4c28ee7): ncu's warp-state and scheduler sections for both at 4096³ bf16, one launch each.
set -u
mkdir -p /tmp/logs; rm -f /tmp/logs/*
save() { (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
for f in hb_main hb_ovl; do xz -dc .gpu/$f.xz > /tmp/$f && chmod +x /tmp/$f; done
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > /tmp/logs/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; save; }
export RUST_BACKTRACE=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
NCU="ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section LaunchStats --section Occupancy -k regex:fused_matmul --launch-skip 3 --launch-count 1"
run prof_base 120 $NCU /tmp/hb_main --variants hopper --outputs 1 --rhs n --dtypes bf16 --reps 5 1,4096,4096,4096
run prof_ovl 120 $NCU /tmp/hb_ovl --variants hopper --outputs 1 --rhs n --dtypes bf16 --reps 5 1,4096,4096,4096
for f in base ovl; do echo "== $f"; grep -E "^    [A-Z]" /tmp/logs/prof_$f.log | grep -v "^    -" ; done >> $OUT/summary.txt
save
