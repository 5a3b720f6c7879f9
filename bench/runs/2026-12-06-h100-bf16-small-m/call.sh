#!/bin/bash
# bf16 small m through Burn: where a call's time goes. nsys over fmar-bench's forward (fmar
# only) at 1, 16 and 128 rows: each kernel's device time and the gaps between launches; the
# kernel alone (hopper_bench of 6b2c854) and PyTorch's anchor, same call.
set -u
T0=$(date +%s)
. bench/scripts/device-lib.sh
here=$(pwd)
tar xJf .gpu/ab2.tar.xz -C /tmp hb_new && chmod +x /tmp/hb_new
xz -dc .gpu/fmar-bench.xz > /tmp/fmar-bench && chmod +x /tmp/fmar-bench
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total,power.limit --format=csv > $OUT/gpu.txt
S="1,1,4096,4096 1,16,4096,4096 1,128,4096,4096"
run hb_bf16 40 /tmp/hb_new --variants launch --dtypes bf16 --lhs k --rhs n --reps 300 $S
run hb_bf16_outputs 40 /tmp/hb_new --variants launch --dtypes bf16 --lhs k --rhs n --reps 300 --outputs 8 $S
mkdir -p /tmp/w && cd /tmp/w
export BURN_DEVICE=cuda XDG_CACHE_HOME=/tmp/w/cache
SH="1,1,4096,4096;1,16,4096,4096;1,128,4096,4096"
run bench_bf16 60 /tmp/fmar-bench --dtype bf16 --only fmar --no-backward --budget-ms 60 --shapes "$SH" --json $OUT/bf16.json
run nsys 90 nsys profile -o /tmp/nsys_bf16 --stats=false /tmp/fmar-bench --dtype bf16 --only fmar --no-backward --budget-ms 60 --shapes "$SH"
nsys stats -r cuda_gpu_kern_sum,cuda_api_sum /tmp/nsys_bf16.nsys-rep > /tmp/logs/nsys_sum.txt 2>&1
nsys stats -r cuda_gpu_trace -f csv -o /tmp/logs/trace /tmp/nsys_bf16.nsys-rep > /dev/null 2>&1
xz -9 /tmp/logs/trace*.csv
mkdir -p /tmp/a && run anchor 60 env OUT=/tmp/a ANCHOR_COMPILE=0 ANCHOR_LOOP=1 ANCHOR_DTYPES=bf16 ANCHOR_SHAPES="$SH" PYTHONUNBUFFERED=1 python3 $here/bench/scripts/torch_anchor.py
cp /tmp/a/torch_anchor.json $OUT/torch_anchor_bf16.json
{ grep -h "RESULT" /tmp/logs/hb_*.log | cut -c1-140; grep -E "^\|" /tmp/logs/bench_bf16.log; head -40 /tmp/logs/nsys_sum.txt; echo "elapsed $(( $(date +%s) - T0 )) s"; } >> $OUT/summary.txt
save
