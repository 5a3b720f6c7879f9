#!/bin/bash
# Where the one-launch few-row kernel's time goes at 1 x 1 x 4096 x 4096 f32: ncu of its first
# launch against a timing mutant without the cluster's hand-over (hb_nohand, wrong sums: its
# check fails after one launch), ncu's full set on the landed kernel (hb_new, 6b2c854) at a
# steady state with per-instruction stall samples, and the two launches' kernels (hb_land).
set -u
T0=$(date +%s)
. bench/scripts/device-lib.sh
tar xJf .gpu/ab3.tar.xz -C /tmp && chmod +x /tmp/hb_*
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total,power.limit --format=csv > $OUT/gpu.txt
A="--variants launch --dtypes f32 --lhs k --rhs n"
NCU="ncu --clock-control none --cache-control none --section SpeedOfLight --section WarpStateStats --import-source no"
for b in hb_new hb_nohand; do
  run first_$b 40 $NCU --launch-skip 0 --launch-count 1 -o /tmp/first_$b /tmp/$b $A --reps 2 1,1,4096,4096
  ncu -i /tmp/first_$b.ncu-rep --page details > /tmp/logs/first_details_$b.txt 2>&1
done
run steady_land 40 $NCU --launch-skip 4 --launch-count 2 -o /tmp/steady_land /tmp/hb_land $A --reps 4 1,1,4096,4096
ncu -i /tmp/steady_land.ncu-rep --page details > /tmp/logs/steady_details_land.txt 2>&1
run full_new 90 ncu --clock-control none --cache-control none --set full --import-source no --launch-skip 2 --launch-count 1 -o /tmp/full_new /tmp/hb_new $A --reps 3 1,1,4096,4096
ncu -i /tmp/full_new.ncu-rep --page details > /tmp/logs/full_details_new.txt 2>&1
ncu -i /tmp/full_new.ncu-rep --page source --csv --print-source sass > /tmp/logs/full_source_new.csv 2>&1
xz -9 /tmp/logs/full_source_new.csv
{ for f in /tmp/logs/first_details_* /tmp/logs/steady_details_land.txt; do echo "== $f"; grep -hE "^  [a-zA-Z_0-9]+.*\(|Duration|DRAM Throughput|Warp Cycles Per Issued|Avg. Active Threads" $f; done
  echo "== full"; grep -hE "Duration|DRAM Throughput|Warp Cycles Per Issued|Issue Slots Busy|Stall" /tmp/logs/full_details_new.txt | head -20
  echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
