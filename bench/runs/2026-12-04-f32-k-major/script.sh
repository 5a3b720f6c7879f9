#!/bin/bash
# f32 (TF32) with the weight K-major (a `[d_out, d_in]` weight read transposed by strides, as
# `FusedLinearRelu` with `LinearLayout::Col` passes it), which the Hopper kernel reads without
# the per-call K-major copy an N-major weight takes; main's head (d1d3036), the kernel alone,
# beside the PyTorch anchor in f32/TF32 at the same shapes.
set -u
. bench/scripts/device-lib.sh
unpack hb_head
HB="/tmp/hb_head --variants hopper --outputs 1"
run f32_small 90 $HB --dtypes f32 --lhs k --rhs n,k --reps 500 1,1,4096,4096 1,16,4096,4096 1,128,4096,4096
run f32_large 90 $HB --dtypes f32 --lhs k --rhs n,k --reps 50 1,4096,4096,4096 1,16384,1024,4096
run anchor 90 env OUT=$OUT ANCHOR_COMPILE=0 ANCHOR_LOOP=1 ANCHOR_DTYPES=f32,tf32 ANCHOR_SHAPES="1,1,4096,4096;1,16,4096,4096;1,128,4096,4096;1,4096,4096,4096" PYTHONUNBUFFERED=1 python3 bench/scripts/torch_anchor.py
{
for f in /tmp/logs/f32_*; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-140; done
} >> $OUT/summary.txt
save
