#!/bin/bash
# Small m at the kernel level: ncu (speed of light, memory, warp states, per-instruction
# samples) of fmar's split-K kernel and of cuBLASLt's kernels (fused bias+ReLU call) at
# 1 x 1 x 4096 x 4096 and 1 x 128 x 4096 x 4096 bf16, one launch each, clocks free.
set -u
mkdir -p /tmp/logs; rm -f /tmp/logs/*
save() { (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
xz -dc .gpu/hb_main.xz > /tmp/hb_main && chmod +x /tmp/hb_main
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > /tmp/logs/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; save; }
NCU="ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SourceCounters --section LaunchStats --section Occupancy --import-source no"
for m in 1 128; do
  run fmar_$m 60 $NCU -k regex:fused_matmul --launch-skip 3 --launch-count 1 -o /tmp/fmar_$m /tmp/hb_main --variants hopper --outputs 1 --rhs n --dtypes bf16 --reps 5 1,$m,4096,4096
  run lt_$m 60 $NCU --launch-skip 30 --launch-count 3 -o /tmp/lt_$m python3 .gpu/pow_torch.py $m,4096,4096,0.001
  for f in fmar_$m lt_$m; do ncu -i /tmp/$f.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $OUT/sass_$f.csv.gz; ncu -i /tmp/$f.ncu-rep --page details > /tmp/logs/details_$f.txt 2>&1; done
done
{ for f in /tmp/logs/details_*.txt; do echo "== $f"; grep -hE "^  [a-zA-Z_0-9]+.*\(|Duration|SM Frequency|DRAM Throughput|Memory Throughput|Registers Per|Block Limit|Achieved Occupancy|Cluster|Grid Size|Block Size|Waves" $f | head -40; done; } >> $OUT/summary.txt
save
