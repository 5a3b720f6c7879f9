#!/bin/bash
# ncu full set with SASS-level stall sampling of the 128x256 kernel at 4096^3 and
# 16384x1024x4096 bf16 (where do the warps wait between tiles?), and the occupancy of the
# 64x256 two-cubes-per-SM experiment.
set -u
mkdir -p /tmp/logs
save() { (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
xz -dc .gpu/hopper_bench.xz > /tmp/hopper_bench && chmod +x /tmp/hopper_bench
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > /tmp/logs/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; save; }
HB="/tmp/hopper_bench --variants hopper --dtypes bf16 --rhs n --outputs 1 --reps 3"
for shape in 1,4096,4096,4096 1,16384,1024,4096; do
  name=$(echo $shape | tr , x)
  run ncu_$name 200 ncu --clock-control none --set full --import-source no -k regex:fused_matmul --launch-skip 2 --launch-count 1 -o /tmp/rep_$name $HB $shape
  ncu -i /tmp/rep_$name.ncu-rep --page details > /tmp/logs/details_$name.txt 2>&1
  ncu -i /tmp/rep_$name.ncu-rep --page source --csv --print-source sass > /tmp/logs/sass_$name.csv 2>&1
  save
done
run ncu_occ_64x256x2 120 env FMAR_HOPPER_TILE=64x256x2 FMAR_HOPPER_CUBES_PER_SM=2 ncu --clock-control none --section LaunchStats --section Occupancy --section SpeedOfLight -k regex:fused_matmul --launch-skip 2 --launch-count 1 $HB 1,4096,4096,4096
grep -E "Duration|Registers|Shared Memory|Block Limit|Achieved Occupancy|Theoretical Occ|Waves" /tmp/logs/ncu_occ_64x256x2.log >> $OUT/summary.txt
for f in /tmp/logs/details_*.txt; do echo "== $f"; grep -E "Duration|SM Frequency|Compute \(SM\) Throughput|Memory Throughput|L2 Hit|Registers Per|Shared Memory Config|Issue Slots Busy|No Eligible|Eligible Warps|Stall" $f | head -30; done >> $OUT/summary.txt
save
