#!/bin/bash
# Tile experiment (no kernel change): one cube per SM on 128x256 (4 stages) against two cubes
# per SM on 64x256 or 128x128 tiles (2 stages each), whose epilogues overlap the other cube's
# MMAs; and 128x128 one cube per SM (6 stages). Short bursts at the large shapes, then sustained.
set -u
mkdir -p /tmp/logs
save() { (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
xz -dc .gpu/hopper_bench.xz > /tmp/hopper_bench && chmod +x /tmp/hopper_bench
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > /tmp/logs/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; save; }
export RUST_BACKTRACE=1
HB="/tmp/hopper_bench --variants hopper --rhs n --outputs 1"
run ragged_64x256 60 env FMAR_HOPPER_TILE=64x256x2 FMAR_HOPPER_CUBES_PER_SM=2 $HB --dtypes bf16,f32 --lhs k,m --rhs n,k --reps 1 1,2700,520,776 2,4100,264,520 3,300,4104,1000
run ragged_128x128 60 env FMAR_HOPPER_TILE=128x128x2 FMAR_HOPPER_CUBES_PER_SM=2 $HB --dtypes bf16,f32 --lhs k,m --rhs n,k --reps 1 1,2700,520,776 2,4100,264,520 3,300,4104,1000
L="1,4096,4096,4096 1,16384,1024,4096 1,8192,8192,8192"
for r in 1 2; do
  run short_base_$r 60 $HB --dtypes bf16,f16 --reps 200 $L
  run short_64x256x2_$r 60 env FMAR_HOPPER_TILE=64x256x2 FMAR_HOPPER_CUBES_PER_SM=2 $HB --dtypes bf16,f16 --reps 200 $L
  run short_128x128x2_$r 60 env FMAR_HOPPER_TILE=128x128x2 FMAR_HOPPER_CUBES_PER_SM=2 $HB --dtypes bf16,f16 --reps 200 $L
  run short_128x128x6_$r 60 env FMAR_HOPPER_TILE=128x128x6 FMAR_HOPPER_CUBES_PER_SM=1 $HB --dtypes bf16 --reps 200 $L
done
for r in 1; do
  run sus_base_$r 40 $HB --dtypes bf16 --reps 3000 1,4096,4096,4096 1,16384,1024,4096
  run sus_64x256x2_$r 40 env FMAR_HOPPER_TILE=64x256x2 FMAR_HOPPER_CUBES_PER_SM=2 $HB --dtypes bf16 --reps 3000 1,4096,4096,4096 1,16384,1024,4096
  run sus_128x128x2_$r 40 env FMAR_HOPPER_TILE=128x128x2 FMAR_HOPPER_CUBES_PER_SM=2 $HB --dtypes bf16 --reps 3000 1,4096,4096,4096 1,16384,1024,4096
done
for f in /tmp/logs/*.log; do echo "== $f"; grep -h "RESULT\|error\|panic\|mismatch\|ran " $f | head -20; done >> $OUT/summary.txt
save
