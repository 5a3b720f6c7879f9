#!/bin/bash
# `swapped_tiles` on a device: device-tf32-tiles.sh beside this script (a hang check, the A/B
# against the K-major copy and the main kernel, the kernel tests with it selected, a mutant
# without the bias, the layout probe, memcheck), then the f32 table through Burn with and
# without it (fmar-bench of d73b630 built with `--features cuda-nvrtc`, `fb_lk` as it is,
# `fb_st` with `FMAR_SWAPPED_TILES` set) and PyTorch's anchor of the same shapes, in one call.
set -u
T0=$(date +%s)
here=$(pwd)
bash bench/runs/2026-12-06-tf32-tiles/call1/device-tf32-tiles.sh
grep -q "RESULT F32 1,1100,200" /tmp/logs/hang_st.log || exit 0
# The second part's logs go in logs.tgz; the first part's stay in logs_tiles.tgz.
mv $OUT/logs.tgz $OUT/logs_tiles.tgz
. bench/scripts/device-lib.sh
tar xJf .gpu/fb.tar.xz -C /tmp && chmod +x /tmp/fb_*
mkdir -p /tmp/w && cd /tmp/w
export BURN_DEVICE=cuda XDG_CACHE_HOME=/tmp/w/cache
SHAPES="1,4096,4096,4096;1,8192,8192,8192;1,16384,1024,4096;8,1024,1024,1024;64,128,128,128;1,128,4096,4096;1,16,4096,4096;1,1,4096,4096;1,64,64,64"
for b in fb_lk fb_st; do
    run bench_$b 150 /tmp/$b --dtype f32 --no-variants --budget-ms 60 --shapes "$SHAPES" --json $OUT/f32_$b.json
done
mkdir -p /tmp/a32 && run anchor32 70 env OUT=/tmp/a32 ANCHOR_COMPILE=0 ANCHOR_LOOP=1 ANCHOR_DTYPES=f32,tf32 ANCHOR_SHAPES="$SHAPES" PYTHONUNBUFFERED=1 python3 $here/bench/scripts/torch_anchor.py
cp /tmp/a32/torch_anchor.json $OUT/torch_anchor_f32.json
{ for b in fb_lk fb_st; do echo "== $b"; grep -E "^\|" /tmp/logs/bench_$b.log | head -40; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
