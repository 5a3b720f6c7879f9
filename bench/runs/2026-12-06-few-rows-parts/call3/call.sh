#!/bin/bash
# The few-row one-launch kernel with four units a column (6b2c854) against the two launches
# (9099cf5), kernel alone, then the f32 Burn table (fmar-bench of 6b2c854) and PyTorch's
# anchor of the same shapes, same call.
set -u
T0=$(date +%s)
. bench/scripts/device-lib.sh
here=$(pwd)
tar xJf .gpu/ab.tar.xz -C /tmp && chmod +x /tmp/hb_*
xz -dc .gpu/fmar-bench.xz > /tmp/fmar-bench && chmod +x /tmp/fmar-bench
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total,power.limit --format=csv > $OUT/gpu.txt
S="1,1,4096,4096 1,4,4096,4096 1,8,4096,4096 1,16,4096,4096 1,128,4096,4096 1,1,4096,8192 1,1,8192,8192"
for i in 1 2; do for b in hb_land hb_new; do run ab_${b}_$i 30 /tmp/$b --variants launch --dtypes f32 --lhs k --rhs n --reps 300 $S; done; done
{ for f in /tmp/logs/ab*.log; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-75; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
mkdir -p /tmp/w && cd /tmp/w
export BURN_DEVICE=cuda XDG_CACHE_HOME=/tmp/w/cache
SHAPES="1,4096,4096,4096;1,8192,8192,8192;1,16384,1024,4096;8,1024,1024,1024;64,128,128,128;1,128,4096,4096;1,16,4096,4096;1,1,4096,4096;1,64,64,64"
run bench_f32 120 /tmp/fmar-bench --dtype f32 --no-variants --budget-ms 60 --shapes "$SHAPES" --json $OUT/f32.json
mkdir -p /tmp/a32 && run anchor32 70 env OUT=/tmp/a32 ANCHOR_COMPILE=0 ANCHOR_LOOP=1 ANCHOR_DTYPES=f32,tf32 ANCHOR_SHAPES="$SHAPES" PYTHONUNBUFFERED=1 python3 $here/bench/scripts/torch_anchor.py
cp /tmp/a32/torch_anchor.json $OUT/torch_anchor_f32.json
{ echo "== f32"; grep -E "^\|" /tmp/logs/bench_f32.log | head -40; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
