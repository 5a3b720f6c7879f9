#!/bin/bash
# f32 at inference batch sizes with an N-major weight (Burn's default `Linear` layout): every
# fmar variant that can run it, forced, against the launch's own choice (the Hopper kernel,
# which copies the weight K-major in each call), main's head (d1d3036's kernel), the kernel
# alone; bf16 for reference.
set -u
. bench/scripts/device-lib.sh
unpack hb_head
V=launch,hopper,tiled,simple_unit,double_unit,simple_vec_mat,double_vec_mat,gemv_unit_perpendicular,gemm_no_stage,simple_mma,double_mma
run f32_n 240 /tmp/hb_head --variants $V --outputs 1 --dtypes f32 --lhs k --rhs n --reps 200 1,1,4096,4096 1,16,4096,4096 1,128,4096,4096
run f32_k 120 /tmp/hb_head --variants launch,simple_vec_mat,double_vec_mat,gemv_unit_perpendicular,simple_unit --outputs 1 --dtypes f32 --lhs k --rhs k --reps 200 1,1,4096,4096 1,16,4096,4096
{
for f in /tmp/logs/f32_*; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-150; done
} >> $OUT/summary.txt
save
