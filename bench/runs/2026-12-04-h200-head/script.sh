#!/bin/bash
# BENCHMARKS.md's same-run tables at main's head (fmar-bench per dtype, no autotune; the PyTorch
# anchor after each half-precision pair and after f32), with nvidia-smi sampling clock and power
# every 100 ms beside them; then ncu's view of fmar's kernel and cuBLASLt's fused kernel side by
# side at the three large bf16 shapes (speed of light, pipes, memory, warp states; one launch each,
# clocks free), and of step 19's overlap (4d903df, whole-program load) against main's kernel
# loaded the same way at 16384 x 1024 x 4096.
set -u
mkdir -p /tmp/logs; rm -f /tmp/logs/*
save() { (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
for f in fmar-bench hb_main hb_smr hb_mainwp; do xz -dc .gpu/$f.xz > /tmp/$f && chmod +x /tmp/$f; done
here=$(pwd)
mkdir -p /tmp/w && cd /tmp/w
export RUST_BACKTRACE=1 BURN_DEVICE=cuda XDG_CACHE_HOME=/tmp/w/cache
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); echo "$name start $(date +%s.%N)" >> /tmp/logs/phases.txt; timeout $limit "$@" > /tmp/logs/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; echo "$name end $(date +%s.%N)" >> /tmp/logs/phases.txt; save; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total,power.limit --format=csv > $OUT/gpu.txt
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,nounits -lms 100 > /tmp/logs/smi.csv &
SMI=$!
SHAPES="1,4096,4096,4096;1,8192,8192,8192;1,16384,1024,4096;8,1024,1024,1024;64,128,128,128;1,128,4096,4096;1,16,4096,4096;1,1,4096,4096;1,64,64,64"
run bench_bf16 110 /tmp/fmar-bench --dtype bf16 --no-variants --budget-ms 80 --shapes "$SHAPES" --json $OUT/bf16.json
run bench_f16 110 /tmp/fmar-bench --dtype f16 --no-variants --budget-ms 80 --shapes "$SHAPES" --json $OUT/f16.json
run anchor 100 env OUT=$OUT ANCHOR_COMPILE=0 ANCHOR_LOOP=1 ANCHOR_DTYPES=bf16,f16 ANCHOR_SHAPES="$SHAPES" PYTHONUNBUFFERED=1 python3 $here/bench/scripts/torch_anchor.py
run bench_f32 100 /tmp/fmar-bench --dtype f32 --no-variants --budget-ms 60 --shapes "$SHAPES" --json $OUT/f32.json
mkdir -p /tmp/a32 && run anchor32 80 env OUT=/tmp/a32 ANCHOR_COMPILE=0 ANCHOR_LOOP=1 ANCHOR_DTYPES=f32,tf32 ANCHOR_SHAPES="$SHAPES" PYTHONUNBUFFERED=1 python3 $here/bench/scripts/torch_anchor.py
cp /tmp/a32/torch_anchor.json $OUT/torch_anchor_f32.json
kill $SMI
NCU="ncu --clock-control none --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats"
for s in 4096,4096,4096 16384,1024,4096 8192,8192,8192; do
  run ncu_fmar_$s 60 $NCU -k regex:fused_matmul --launch-skip 3 --launch-count 1 /tmp/hb_main --variants hopper --outputs 1 --rhs n --dtypes bf16 --reps 5 1,$s
  run ncu_lt_$s 60 $NCU -k "regex:nvjet|gemm|sm90|xmma|cutlass" --launch-skip 10 --launch-count 1 python3 $here/.gpu/pow_torch.py $s,0.001
done
run ncu_mainwp_16384 60 $NCU -k regex:fused_matmul --launch-skip 3 --launch-count 1 /tmp/hb_mainwp --variants hopper --outputs 1 --rhs n --dtypes bf16 --reps 5 1,16384,1024,4096
run ncu_smr_16384 60 $NCU -k regex:fused_matmul --launch-skip 3 --launch-count 1 /tmp/hb_smr --variants hopper --outputs 1 --rhs n --dtypes bf16 --reps 5 1,16384,1024,4096
{
for d in bf16 f16 f32; do echo "== $d"; grep -E "^\|" /tmp/logs/bench_$d.log | grep -E "fmar \||FAILED" | head -40; done
for f in /tmp/logs/ncu_*; do echo "== $f"; grep -hE "^  [a-z_]+.*\(|Duration|SM Frequency|DRAM Throughput|Compute \(SM\) Throughput|Memory Throughput|L2 Hit|Registers Per|Warp Cycles Per Issued|highest-utilized" $f | head -14; done
} >> $OUT/summary.txt
save
