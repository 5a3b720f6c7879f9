#!/bin/bash
# Where the ring-fed swapped kernel's time goes (s1a: right everywhere, but 42-60 us at 64-128
# rows, 32 us at batch 1, against ~20 predicted). Builds (from swapped-ring 3ddca80 unless said):
#   hb_ring: as committed (4 stages, wait_group -> fence.proxy.async -> bar.sync per stage)
#   hb_nofence: the same without fence.proxy.async (SASS had MEMBAR.ALL.CTA before the fence)
#   hb_st6: 6 stages
#   hb_ringclu: swapped-ringclu (38a944b); hb_prev: main 41350de
set -u
. bench/scripts/device-lib.sh
mkdir -p /tmp/g && for b in hb_prev hb_ring hb_nofence hb_st6 hb_ringclu t_ringclu; do xz -dc .gpu2/$b.xz > /tmp/$b && chmod +x /tmp/$b; done
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
S="1,1,4096,4096 1,16,4096,4096 1,32,4096,4096 1,64,4096,4096 1,128,4096,4096 1,1,8192,8192 1,128,8192,8192"
for b in hb_prev hb_ring hb_nofence hb_st6 hb_ringclu; do
  run ab_$b 40 /tmp/$b --variants launch --dtypes f32 --lhs k --rhs n --reps 300 $S
done
P="1,8,32,64 1,32,32,64 1,128,32,64 1,100,64,32 1,128,16,128 1,7,24,62"
run probe_nofence 20 /tmp/hb_nofence --variants launch --probe --dtypes f32 --lhs k --rhs n --reps 1 $P
NCU="ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats --section SourceCounters --import-source no"
run prof_128 90 $NCU -k regex:swapped --launch-skip 3 --launch-count 1 -o /tmp/prof_128 /tmp/hb_ring --variants launch --dtypes f32 --lhs k --rhs n --reps 5 1,128,4096,4096
run sass_128 40 ncu -i /tmp/prof_128.ncu-rep --page source --csv --print-source sass
run details_128 30 ncu -i /tmp/prof_128.ncu-rep --page details
run prof_1 60 $NCU -k regex:swapped --launch-skip 3 --launch-count 1 -o /tmp/prof_1 /tmp/hb_ring --variants launch --dtypes f32 --lhs k --rhs n --reps 5 1,1,4096,4096
run details_1 30 ncu -i /tmp/prof_1.ncu-rep --page details
gzip -c /tmp/logs/sass_128.log > $OUT/sass_128.csv.gz
run memcheck_ringclu 90 compute-sanitizer --tool memcheck /tmp/t_ringclu few_row --test-threads 1
run racecheck_ringclu 50 compute-sanitizer --tool racecheck /tmp/hb_ringclu --variants launch --dtypes f32 --lhs k,m --rhs n --reps 1 1,100,1001,258 1,8,300,130 1,30,520,70 1,128,96,256
{
for f in /tmp/logs/ab_* /tmp/logs/probe_*; do echo "== $f"; grep -h "RESULT\|PROBE\|panic" $f | cut -c1-150; done
for f in /tmp/logs/details_*; do echo "== $f"; grep -E "Duration|DRAM Through|Memory Through|L2 Cache Through|L1/TEX Cache Through|Registers Per|Achieved Occ|Block Limit|Theoretical Occ|Grid Size|Dynamic Shared|Warp Cycles Per Issued|Stall|Issued Warp" $f | head -60; done
for f in /tmp/logs/memcheck_* /tmp/logs/racecheck_*; do echo "== $f"; grep -h "ERROR SUMMARY\|RACECHECK SUMMARY\|test result\|RESULT" $f | cut -c1-140; done
} >> $OUT/summary.txt
save
