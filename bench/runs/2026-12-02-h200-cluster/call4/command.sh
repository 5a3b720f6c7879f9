#!/bin/bash
# Cluster split-K (asynchronous remote stores, one barrier per slot): kernel alone and through Burn at few rows,
# PyTorch in the same call, ncu occupancy, tests and a mutant.
set -u
mkdir -p /tmp/logs /tmp/anchor
save() { (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
for f in against_f64 hopper_bench mutant_unsummed fmar-bench; do xz -dc .gpu/$f.xz > /tmp/$f && chmod +x /tmp/$f; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv > /tmp/logs/smi.txt
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > /tmp/logs/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; save; }
export FMAR_TEST_DEVICE=cuda BURN_DEVICE=cuda
run kernel_small 100 /tmp/hopper_bench --dtypes bf16,f16,f32 --rhs n,k 1,1,4096,4096 1,16,4096,4096 1,128,4096,4096 1,1,1024,4096
run ncu_m1 40 ncu --clock-control none --kernel-name regex:hopper --launch-skip 2 --launch-count 1 --section SpeedOfLight --section LaunchStats --section Occupancy /tmp/hopper_bench --dtypes bf16 --rhs n --reps 3 1,1,4096,4096
run ncu_m16_f32 40 ncu --clock-control none --kernel-name regex:hopper --launch-skip 2 --launch-count 1 --section LaunchStats --section Occupancy /tmp/hopper_bench --dtypes f32 --rhs k --reps 3 1,16,4096,4096
SHAPES="1,128,4096,4096;1,16,4096,4096;1,1,4096,4096"
for d in bf16 f16 f32; do run burn_$d 90 /tmp/fmar-bench --dtype $d --no-variants --no-backward --budget-ms 80 --shapes "$SHAPES" --label "$(date -u +%F)" --json $OUT/$d.json; done
(cd /tmp/anchor && OUT=/tmp/anchor ANCHOR_COMPILE=0 ANCHOR_LOOP=1 ANCHOR_DTYPES=bf16,f16,tf32 ANCHOR_SHAPES="$SHAPES" timeout 80 python3 $OLDPWD/bench/scripts/torch_anchor.py > /tmp/logs/anchor.log 2>&1); echo "anchor rc=$?" >> $OUT/summary.txt
cp /tmp/anchor/torch_anchor.json $OUT/torch_anchor.json
run tests_hopper 170 /tmp/against_f64 hopper mask_follows --test-threads 1
run mutant_unsummed 40 /tmp/mutant_unsummed hopper_runs --test-threads 1
grep -h RESULT /tmp/logs/kernel_small.log >> $OUT/summary.txt
grep -h "test \|test result" /tmp/logs/tests_hopper.log /tmp/logs/mutant_unsummed.log >> $OUT/summary.txt
grep -h "Duration\|Registers Per\|Block Limit Reg\|Block Limit Sh\|Achieved Occupancy\|DRAM Throughput\|Max Active Clusters" /tmp/logs/ncu_*.log >> $OUT/summary.txt
save
