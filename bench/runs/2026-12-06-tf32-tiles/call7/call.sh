#!/bin/bash
# BENCHMARKS.md's tables through Burn (`fmar-bench` of 6f00a94, `--features cuda-nvrtc`:
# `swapped_tiles` selected, the kernels as main has them) and PyTorch's anchors of the same
# shapes, in one call: f32 first, then bf16 and f16, `nvidia-smi` sampling beside the
# half-precision pair. Pack: `.gpu/c7.tar.xz`.
set -u
T0=$(date +%s)
. bench/scripts/device-lib.sh
here=$(pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total,power.limit --format=csv > $OUT/gpu.txt
unpack_tar c7
mkdir -p /tmp/w && cd /tmp/w
export BURN_DEVICE=cuda XDG_CACHE_HOME=/tmp/w/cache
SHAPES="1,4096,4096,4096;1,8192,8192,8192;1,16384,1024,4096;8,1024,1024,1024;64,128,128,128;1,128,4096,4096;1,16,4096,4096;1,1,4096,4096;1,64,64,64"
run bench_f32 75 /tmp/fb_new --dtype f32 --no-variants --budget-ms 60 --shapes "$SHAPES" --json $OUT/f32.json
mkdir -p /tmp/a32 && run anchor32 45 env OUT=/tmp/a32 ANCHOR_COMPILE=0 ANCHOR_LOOP=1 ANCHOR_DTYPES=f32,tf32 ANCHOR_SHAPES="$SHAPES" PYTHONUNBUFFERED=1 python3 $here/bench/scripts/torch_anchor.py
cp /tmp/a32/torch_anchor.json $OUT/torch_anchor_f32.json
{ grep -E "^\|" /tmp/logs/bench_f32.log | grep -E " forward .*fmar \|| FAILED" | head -20; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,nounits -lms 100 > /tmp/logs/smi.csv &
SMI=$!
run bench_bf16 90 /tmp/fb_new --dtype bf16 --no-variants --budget-ms 80 --shapes "$SHAPES" --json $OUT/bf16.json
run bench_f16 90 /tmp/fb_new --dtype f16 --no-variants --budget-ms 80 --shapes "$SHAPES" --json $OUT/f16.json
run anchor 60 env OUT=$OUT ANCHOR_COMPILE=0 ANCHOR_LOOP=1 ANCHOR_DTYPES=bf16,f16 ANCHOR_SHAPES="$SHAPES" PYTHONUNBUFFERED=1 python3 $here/bench/scripts/torch_anchor.py
kill $SMI
{ for d in bf16 f16; do echo "== $d"; grep -E "^\|" /tmp/logs/bench_$d.log | grep -E " forward .*fmar \|| FAILED" | head -20; done; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
