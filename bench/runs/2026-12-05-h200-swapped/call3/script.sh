#!/bin/bash
# The swapped ring's split-K depth: cubes of work per multiprocessor 4 (hb_ring, 3ddca80), 2
# (hb_cpp2) and 1 (hb_cpp1); at 64-128 rows the partial sums (slices x m x n x 4 bytes, written
# and read back) weigh as much as the weight at 4 (17 slices at 1 x 128 x 4096 x 4096).
set -u
. bench/scripts/device-lib.sh
for b in hb_prev hb_ring hb_cpp2 hb_cpp1; do xz -dc .gpu2/$b.xz > /tmp/$b && chmod +x /tmp/$b; done
S="1,8,4096,4096 1,16,4096,4096 1,32,4096,4096 1,64,4096,4096 1,128,4096,4096 1,64,8192,8192 1,128,8192,8192 1,16,4096,16384 1,128,4096,16384 4,100,1001,2055 1,128,16384,4096"
for i in 1 2; do for b in hb_prev hb_ring hb_cpp2 hb_cpp1; do
  run ab_${b}_$i 40 /tmp/$b --variants launch --dtypes f32 --lhs k --rhs n --reps 300 $S
done; done
NCU="ncu --clock-control none --section SpeedOfLight --section Occupancy --section LaunchStats"
for b in hb_ring hb_cpp2 hb_cpp1; do
  run ncu_$b 60 $NCU -k regex:"swapped|few_rows" --launch-skip 6 --launch-count 2 /tmp/$b --variants launch --dtypes f32 --lhs k --rhs n --reps 5 1,128,4096,4096
done
{
for f in /tmp/logs/ab_*; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-110; done
for f in /tmp/logs/ncu_*; do echo "== $f"; grep -E "^  [a-z_]+|Duration|DRAM Through|Grid Size|Block Limit Shared|Achieved Occ" $f; done
} >> $OUT/summary.txt
save
