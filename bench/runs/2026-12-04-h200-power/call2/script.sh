#!/bin/bash
# Through Burn, sustained: fmar-bench's fmar forward alone (`--only fmar`, budget 8 s: about 4 s
# of untimed batches, then 15 timed batches of up to 200 calls, each output fresh) and cuBLASLt's
# fused call timed the same way (lt_keep.py: 4 s untimed, 15 batches of 200 with every output
# kept), bf16, three large shapes, in two rounds of opposite order, nvidia-smi sampling every
# 100 ms.
set -u
mkdir -p /tmp/logs; rm -f /tmp/logs/*
save() { (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
xz -dc .gpu/fmar-bench.xz > /tmp/fmar-bench && chmod +x /tmp/fmar-bench
here=$(pwd)
mkdir -p /tmp/w && cd /tmp/w
export RUST_BACKTRACE=1 BURN_DEVICE=cuda XDG_CACHE_HOME=/tmp/w/cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > $OUT/gpu.txt
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,nounits -lms 100 > /tmp/logs/smi.csv &
SMI=$!
mark() { echo "$1 $(date +%s.%N)" >> /tmp/logs/phases.txt; }
fm() { for s in 1,4096,4096,4096 1,16384,1024,4096 1,8192,8192,8192; do mark fmar_${s}_start; timeout 60 /tmp/fmar-bench --dtype bf16 --only fmar --no-backward --budget-ms 8000 --shapes "$s" --json /tmp/logs/fmar_$1_$s.json >> /tmp/logs/fmar.log 2>&1; mark fmar_${s}_end; sleep 3; done; }
lt() { timeout 120 python3 $here/.gpu/lt_keep.py 4096,4096,4096,4 16384,1024,4096,4 8192,8192,8192,4 >> /tmp/logs/lt.log 2>&1; sleep 3; }
sleep 2
fm 1; save; lt; save
lt; save; fm 2; save
kill $SMI; save
{ grep -hE "^\| 1," /tmp/logs/fmar.log; grep -h LTKEEP /tmp/logs/lt.log; cat /tmp/logs/phases.txt; } >> $OUT/summary.txt
save
