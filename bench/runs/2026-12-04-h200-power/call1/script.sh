#!/bin/bash
# Power and SM clock of fmar's hopper kernel (main's kernel, cubecl-cuda as shipped) and of
# cuBLASLt's fused bias+ReLU (PyTorch), bf16, in sustained loops of about 12 s each, one after
# the other in the same call, with nvidia-smi sampling every 100 ms: is the gap at 8192^3 and
# in back-to-back runs an energy-per-FLOP gap at the power cap?
set -u
mkdir -p /tmp/logs; rm -f /tmp/logs/*
save() { (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
xz -dc .gpu/hb_main.xz > /tmp/hb_main && chmod +x /tmp/hb_main
export RUST_BACKTRACE=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit,power.max_limit --format=csv > $OUT/gpu.txt
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,nounits -lms 100 > /tmp/logs/smi.csv &
SMI=$!
mark() { echo "$1 $(date +%s.%N)" >> /tmp/logs/phases.txt; }
HB="/tmp/hb_main --variants hopper --outputs 1 --rhs n --dtypes bf16"
sleep 3
# reps for about 12 s each at the kernel-alone rates measured before (0.18 / 0.20 / 1.45 ms)
for r in 1 2; do
  mark hb_4096_start; $HB --reps 65000 1,4096,4096,4096 >> /tmp/logs/hb.log 2>&1; mark hb_4096_end; sleep 3
  mark hb_16384_start; $HB --reps 60000 1,16384,1024,4096 >> /tmp/logs/hb.log 2>&1; mark hb_16384_end; sleep 3
  mark hb_8192_start; $HB --reps 8500 1,8192,8192,8192 >> /tmp/logs/hb.log 2>&1; mark hb_8192_end; sleep 3
  mark torch_start; python .gpu/pow_torch.py 4096,4096,4096,12 16384,1024,4096,12 8192,8192,8192,12 >> /tmp/logs/torch.log 2>&1; mark torch_end; sleep 3
  save
done
kill $SMI
save
{ grep -h RESULT /tmp/logs/hb.log; grep -h TORCH /tmp/logs/torch.log; cat /tmp/logs/phases.txt; } >> $OUT/summary.txt
save
