#!/bin/bash
# `fmar-bench` (`--features cuda-nvrtc`) of 6f00a94 (`fb_new`, `swapped_tiles` selected) and of
# d73b630 (`fb_lk`, the K-major copy above 128 rows): on an H200, the f32 table through Burn
# and PyTorch's anchor of the same shapes; on any card, fmar's forward alone through Burn at
# the shapes `swapped_tiles` takes, the two builds in turn, twice.
set -u
T0=$(date +%s)
. bench/scripts/device-lib.sh
here=$(pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total,power.limit --format=csv > $OUT/gpu.txt
tar xJf .gpu/fb.tar.xz -C /tmp && chmod +x /tmp/fb_*
mkdir -p /tmp/w && cd /tmp/w
export BURN_DEVICE=cuda XDG_CACHE_HOME=/tmp/w/cache
if grep -q H200 $OUT/gpu.txt; then
    SHAPES="1,4096,4096,4096;1,8192,8192,8192;1,16384,1024,4096;8,1024,1024,1024;64,128,128,128;1,128,4096,4096;1,16,4096,4096;1,1,4096,4096;1,64,64,64"
    run bench_f32 150 /tmp/fb_new --dtype f32 --no-variants --budget-ms 60 --shapes "$SHAPES" --json $OUT/f32.json
    mkdir -p /tmp/a32 && run anchor32 70 env OUT=/tmp/a32 ANCHOR_COMPILE=0 ANCHOR_LOOP=1 ANCHOR_DTYPES=f32,tf32 ANCHOR_SHAPES="$SHAPES" PYTHONUNBUFFERED=1 python3 $here/bench/scripts/torch_anchor.py
    cp /tmp/a32/torch_anchor.json $OUT/torch_anchor_f32.json
    { grep -E "^\|" /tmp/logs/bench_f32.log | grep " forward " | head -40; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
fi
AB="1,4096,4096,4096;1,16384,1024,4096;8,1024,1024,1024;1,2048,4096,4096"
for i in 1 2; do for b in fb_lk fb_new; do
    run ab_${b}_$i 60 /tmp/$b --dtype f32 --only fmar --no-backward --budget-ms 300 --shapes "$AB"
done; done
{ for f in /tmp/logs/ab_*.log; do echo "== $f"; grep -E "\| fmar \|" $f | cut -d'|' -f2,7,8; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
