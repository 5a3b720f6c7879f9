#!/bin/bash
# The one-launch few-row kernel with 32 columns a cube: hb_v4 = two cubes a multiprocessor,
# clusters of up to 2; hb_v5 = four cubes, up to 4; hb_v1 = 128 columns, two cubes, up to 8
# (call 1); hb_land = two launches (9099cf5). ncu: the clusters resident at once.
set -u
T0=$(date +%s)
. bench/scripts/device-lib.sh
tar xJf .gpu/w.tar.xz -C /tmp && chmod +x /tmp/hb_*
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total,power.limit --format=csv > $OUT/gpu.txt
S="1,1,4096,4096 1,4,4096,4096 1,8,4096,4096 4,1,4096,4096 1,1,8192,8192 1,8,11008,4096 1,1,2048,4096"
ab() { for b in hb_land hb_v1 hb_v4 hb_v5; do run ab_${b}_$1 40 /tmp/$b --variants launch --dtypes f32 --lhs k --rhs n --reps 300 $S; done; }
ab 1
{ for f in /tmp/logs/ab*_1.log; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-80; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
NCU="ncu --clock-control none --cache-control none --section SpeedOfLight --section LaunchStats --section Occupancy --import-source no"
for b in hb_v4 hb_v5; do
  run ncu_$b 40 $NCU --launch-skip 2 --launch-count 2 -o /tmp/ncu_$b /tmp/$b --variants launch --dtypes f32 --lhs k --rhs n --reps 2 1,1,4096,4096
  ncu -i /tmp/ncu_$b.ncu-rep --page details > /tmp/logs/details_$b.txt 2>&1
done
{ for f in /tmp/logs/details_*; do echo "== $f"; grep -hE "^  [a-zA-Z_0-9]+.*\(|Duration|DRAM Throughput|Cluster|Waves|Achieved Occupancy|Block Limit" $f; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
ab 2
{ for f in /tmp/logs/ab*_2.log; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-80; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
