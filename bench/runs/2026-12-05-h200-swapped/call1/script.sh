#!/bin/bash
# The swapped f32 kernels: the transposed product (outᵀ = rhsᵀ lhsᵀ, the weight as the MMA's
# register A, lhs K-major in shared memory, split-K), in four builds:
#   hb_swap            branch swapped-tf32 (kernels as 37bec2f): operands loaded into registers
#                      one stage ahead, lhs stored to 2 shared stages; partials + few_rows' 2nd
#                      kernel at every row count.
#   hb_clu / t_clu     branch swapped-cluster: hb_swap, plus up to 32 rows without the mask in
#                      one launch (a cluster's slices summed over DSMEM).
#   hb_ring            branch swapped-ring: both operands through a 4-stage shared ring filled
#                      by cp.async (46-109 registers instead of 127-221); partials + 2nd kernel.
#   hb_ringclu / t_ringclu  branch swapped-ringclu: hb_ring, plus the one-launch cluster kernel
#                      up to 32 rows without the mask.
#   t_exact            exact f32 (allow_tf32 = false: the FMA kernels, a decline at 33 rows).
#   hb_prev            main 41350de (FMA up to 32 rows, the K-major copy beyond).
# Call 1 of 2 (s1a: tests, the layout probe, a first A/B; s1b: sanitizers, a second A/B, ncu).
# The probe (--probe) gives operands whose outputs name the rhs element they hold; with a
# K-major rhs f32 runs main's TF32 kernel (known right), which checks the probe itself.
set -u
. bench/scripts/device-lib.sh
export RUST_BACKTRACE=1 FMAR_TEST_DEVICE=cuda
unpack hb_prev hb_clu hb_ring hb_ringclu t_clu t_ringclu t_exact
P="1,8,32,64 1,16,32,64 1,32,32,64 1,64,32,64 1,128,32,64 1,5,64,32 1,100,64,32 1,64,16,128 1,128,16,128 2,3,8,256 1,7,24,62"
run tests_ringclu 100 /tmp/t_ringclu hopper mask few_row --test-threads 1
run probe_hb_ringclu 30 /tmp/hb_ringclu --variants launch --probe --dtypes f32 --lhs k,m --rhs n,k --reps 1 $P
run probe_hb_ring 30 /tmp/hb_ring --variants launch --probe --dtypes f32 --lhs k,m --rhs n --reps 1 $P
run tests_clu 100 /tmp/t_clu hopper mask few_row --test-threads 1
run probe_hb_clu 30 /tmp/hb_clu --variants launch --probe --dtypes f32 --lhs k --rhs n --reps 1 $P
run exact 40 /tmp/t_exact --test-threads 1
S="1,1,4096,4096 1,4,4096,4096 1,8,4096,4096 1,16,4096,4096 1,32,4096,4096 1,64,4096,4096 1,128,4096,4096 1,1,8192,8192 1,8,4096,16384 1,128,8192,8192 64,128,128,128 1,64,64,64 4,100,1001,2055"
for b in hb_ringclu hb_ring hb_clu hb_prev; do
  run ab_${b}_1 40 /tmp/$b --variants launch --dtypes f32 --lhs k --rhs n --reps 200 $S
done
{
grep -h "^test \|test result\|panicked" /tmp/logs/tests_*.log /tmp/logs/exact.log | grep -v " ok$" | head -60
for f in /tmp/logs/probe_*; do echo "== $f"; grep -h "RESULT\|PROBE\|panic" $f | cut -c1-160 | head -70; done
for f in /tmp/logs/ab_*; do echo "== $f"; grep -h "RESULT\|panic" $f | cut -c1-150; done
} >> $OUT/summary.txt
save
