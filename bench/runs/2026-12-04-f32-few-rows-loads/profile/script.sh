#!/bin/bash
# The few-row f32 kernel (vector tile, rows up to 32; hb_vec, the tree of 4d17a85) under ncu at
# 1, 16 and 32 rows against a 4096 x 4096 N-major weight: where its time goes (warp states,
# memory, occupancy, per-instruction samples), one launch each, clocks free.
set -u
. bench/scripts/device-lib.sh
unpack hb_vec
NCU="ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SourceCounters --section LaunchStats --section Occupancy --import-source no"
for m in 1 16 32; do
  run few_$m 90 $NCU -k regex:few_rows --launch-skip 4 --launch-count 2 -o /tmp/few_$m /tmp/hb_vec --variants launch --outputs 1 --rhs n --dtypes f32 --reps 5 1,$m,4096,4096
  ncu -i /tmp/few_$m.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $OUT/sass_few_$m.csv.gz
  ncu -i /tmp/few_$m.ncu-rep --page details > /tmp/logs/details_few_$m.txt 2>&1
  save
done
{ for f in /tmp/logs/details_*.txt; do echo "== $f"; grep -hE "^  [a-zA-Z_0-9]+.*\(|Duration|SM Frequency|DRAM Throughput|Memory Throughput|Registers Per|Block Limit|Achieved Occupancy|Theoretical Occupancy|Grid Size|Block Size|Waves|Stall|Issued Warp|No Eligible|Eligible Warps|Active Warps" $f | head -60; done; } >> $OUT/summary.txt
save
