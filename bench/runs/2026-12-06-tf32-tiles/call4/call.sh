#!/bin/bash
# `hopper_runs_exactly_where_the_device_has_it` with a new case that reaches `swapped_tiles`
# with one weight for every batch (`[3, 600, 40] x [1, 40, 2056]`), of main (`t_new`), and a
# mutant whose launch reads that weight as batched (`t_bmut`: it must fail on
# the new case), side by side; on an H200, then the f32 table through Burn (`fmar-bench` of
# 6f00a94, `--features cuda-nvrtc`) and PyTorch's anchor of the same shapes.
set -u
T0=$(date +%s)
. bench/scripts/device-lib.sh
here=$(pwd)
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total,power.limit --format=csv > $OUT/gpu.txt
tar xJf .gpu/c4.tar.xz -C /tmp && chmod +x /tmp/fb_new /tmp/t_*
run_beside tests_new 200 /tmp/t_new hopper_runs_exactly --test-threads 1 &
run_beside mutant 200 /tmp/t_bmut hopper_runs_exactly --test-threads 1 &
wait
save
{
grep -h "^test \|test result\|panicked" /tmp/logs/tests_new.log /tmp/logs/mutant.log | grep -v " ok$" | head -10
grep -h "hopper F32" /tmp/logs/mutant.log | cut -c1-300 | head -3
echo "elapsed $(( $(date +%s) - T0 )) s"
} >> $OUT/summary.txt
grep -q H200 $OUT/gpu.txt || exit 0
mkdir -p /tmp/w && cd /tmp/w
export BURN_DEVICE=cuda XDG_CACHE_HOME=/tmp/w/cache
SHAPES="1,4096,4096,4096;1,8192,8192,8192;1,16384,1024,4096;8,1024,1024,1024;64,128,128,128;1,128,4096,4096;1,16,4096,4096;1,1,4096,4096;1,64,64,64"
run bench_f32 150 /tmp/fb_new --dtype f32 --no-variants --budget-ms 60 --shapes "$SHAPES" --json $OUT/f32.json
mkdir -p /tmp/a32 && run anchor32 70 env OUT=/tmp/a32 ANCHOR_COMPILE=0 ANCHOR_LOOP=1 ANCHOR_DTYPES=f32,tf32 ANCHOR_SHAPES="$SHAPES" PYTHONUNBUFFERED=1 python3 $here/bench/scripts/torch_anchor.py
cp /tmp/a32/torch_anchor.json $OUT/torch_anchor_f32.json
{ grep -E "^\|" /tmp/logs/bench_f32.log | grep " forward " | head -40; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
