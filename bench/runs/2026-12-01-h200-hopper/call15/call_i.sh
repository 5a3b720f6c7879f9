#!/usr/bin/env bash
# Experiment: split-K with two cubes per SM (5-stage rings, up to 2 x SMs work items, so 4
# slices at batch 1): contract tests, small-m timings, ncu durations, anchor.
set -u
out=${OUT:?}
mkdir -p /tmp/bin
for f in against_f64 hopper_bench; do xz -dc .gpu/$f.xz > /tmp/bin/$f && chmod +x /tmp/bin/$f; done
step() { local name=$1 limit=$2; shift 2; local s=$(date +%s)
  timeout "$limit" "$@" > "$out/$name.log" 2>&1
  echo "=== $name: exit $? after $(( $(date +%s) - s )) s"; }
FMAR_TEST_DEVICE=cuda FMAR_TEST_VARIANTS=hopper FMAR_KERNEL=hopper step contract 150 /tmp/bin/against_f64 hopper --test-threads 1
grep -E "test result|panicked" "$out/contract.log" | tail -3
SMALL="1,1,4096,4096 1,16,4096,4096 1,1,4096,1024 1,32,8192,2048"
step small 150 /tmp/bin/hopper_bench --variants hopper --reps 200 --rhs n $SMALL
grep -E "^RESULT" "$out/small.log"
step ncu 100 ncu --clock-control none --metrics gpu__time_duration.sum /tmp/bin/hopper_bench --variants hopper --dtypes bf16 --rhs n --reps 2 1,1,4096,4096 1,16,4096,4096
grep -E "^  [a-z_]+|gpu__time_duration" "$out/ncu.log" | paste - - | awk '{print $1, $2, $(NF)}'
step anchor 60 python3 .gpu/mini_anchor.py $SMALL
grep ANCHOR "$out/anchor.log"
