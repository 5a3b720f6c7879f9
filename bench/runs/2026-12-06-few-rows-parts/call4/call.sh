#!/bin/bash
# The landed one-launch few-row kernel (hb_new, 6b2c854) against the two launches (hb_land,
# 9099cf5) and an experiment (hb_wide: 64 columns a cube, one cube a multiprocessor, 24 stages
# of 9 KiB), kernel alone with ncu at one row; then the f32 Burn table (fmar-bench of 6b2c854,
# cuda-nvrtc) and PyTorch's anchor of the same shapes, same call.
set -u
T0=$(date +%s)
. bench/scripts/device-lib.sh
here=$(pwd)
tar xJf .gpu/ab2.tar.xz -C /tmp && chmod +x /tmp/hb_*
xz -dc .gpu/fmar-bench.xz > /tmp/fmar-bench && chmod +x /tmp/fmar-bench
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total,power.limit --format=csv > $OUT/gpu.txt
S="1,1,4096,4096 1,4,4096,4096 1,8,4096,4096 1,1,4096,8192 1,3,4100,4100"
for i in 1 2; do for b in hb_land hb_new hb_wide; do run ab_${b}_$i 30 /tmp/$b --variants launch --dtypes f32 --lhs k --rhs n --reps 300 $S; done; done
{ for f in /tmp/logs/ab*.log; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-75; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
NCU="ncu --clock-control none --cache-control none --section SpeedOfLight --section LaunchStats --import-source no"
for b in hb_new hb_wide; do
  run ncu_$b 40 $NCU --launch-skip 2 --launch-count 2 -o /tmp/ncu_$b /tmp/$b --variants launch --dtypes f32 --lhs k --rhs n --reps 2 1,1,4096,4096
  ncu -i /tmp/ncu_$b.ncu-rep --page details > /tmp/logs/details_$b.txt 2>&1
done
{ for f in /tmp/logs/details_*; do echo "== $f"; grep -hE "^  [a-zA-Z_0-9]+.*\(|Duration|DRAM Throughput|Dynamic Shared|Registers Per" $f; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
mkdir -p /tmp/w && cd /tmp/w
export BURN_DEVICE=cuda XDG_CACHE_HOME=/tmp/w/cache
SHAPES="1,4096,4096,4096;1,8192,8192,8192;1,16384,1024,4096;8,1024,1024,1024;64,128,128,128;1,128,4096,4096;1,16,4096,4096;1,1,4096,4096;1,64,64,64"
run bench_f32 150 /tmp/fmar-bench --dtype f32 --no-variants --budget-ms 60 --shapes "$SHAPES" --json $OUT/f32.json
mkdir -p /tmp/a32 && run anchor32 70 env OUT=/tmp/a32 ANCHOR_COMPILE=0 ANCHOR_LOOP=1 ANCHOR_DTYPES=f32,tf32 ANCHOR_SHAPES="$SHAPES" PYTHONUNBUFFERED=1 python3 $here/bench/scripts/torch_anchor.py
cp /tmp/a32/torch_anchor.json $OUT/torch_anchor_f32.json
{ echo "== f32"; grep -E "^\|" /tmp/logs/bench_f32.log | head -40; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
