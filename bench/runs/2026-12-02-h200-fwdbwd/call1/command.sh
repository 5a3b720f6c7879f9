#!/usr/bin/env bash
# Same-run forward and forward + backward table (bf16, heuristic build: no autotune anywhere), PyTorch anchor in
# the same call; where the forward's time through Burn goes beyond the kernel's (allocator); the 64x128^3 step's kernels.
set -u
cd .gpu && for b in fmar-bench; do xz -dk $b.xz && chmod +x $b; done && cd ..
export BURN_DEVICE=cuda RUST_BACKTRACE=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
B=$PWD/.gpu/fmar-bench
SHAPES="1,4096,4096,4096;1,8192,8192,8192;1,16384,1024,4096;8,1024,1024,1024;64,128,128,128;1,128,4096,4096;1,16,4096,4096;1,1,4096,4096;1,64,64,64"
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > /tmp/logs/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" | tee -a $OUT/summary.txt; (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
mkdir -p /tmp/logs /tmp/anchor /tmp/alloc_async
run bench_bf16 290 $B --dtype bf16 --no-variants --budget-ms 80 --shapes "$SHAPES" --label "$(date -u +%F)" --json $OUT/bf16.json
(cd /tmp/anchor && OUT=/tmp/anchor ANCHOR_COMPILE=0 ANCHOR_DTYPES=bf16 ANCHOR_SHAPES="$SHAPES" timeout 100 python3 $OLDPWD/bench/scripts/torch_anchor.py > /tmp/logs/anchor.log 2>&1); echo "anchor rc=$?" | tee -a $OUT/summary.txt
cp /tmp/anchor/torch_anchor.json $OUT/torch_anchor.json
# The forward at 4096^3 through Burn: default allocator, then CUDA's stream-ordered one, then smaller batches.
S1="1,4096,4096,4096"
run fwd_default 30 $B --dtype bf16 --shapes $S1 --only fmar --no-backward --budget-ms 200
printf '[memory.cuda]\nallocator = "async"\n' > /tmp/alloc_async/cubecl.toml
(cd /tmp/alloc_async && run fwd_async 30 $B --dtype bf16 --shapes $S1 --only fmar --no-backward --budget-ms 200)
run fwd_small_batches 30 $B --dtype bf16 --shapes $S1 --only fmar --no-backward --budget-ms 20
(cd /tmp/alloc_async && run fwdbwd_async 45 $B --dtype bf16 --shapes "$S1;64,128,128,128" --only fmar --budget-ms 200)
# 64x128^3 forward + backward: every kernel under ncu.
run ncu_small 100 ncu --clock-control none --launch-count 400 --metrics gpu__time_duration.sum -o /tmp/prof $B --dtype bf16 --shapes "64,128,128,128" --only fmar --budget-ms 10
ncu --import /tmp/prof.ncu-rep --csv --page raw --metrics gpu__time_duration.sum > /tmp/logs/kernels_small.csv 2>&1
python3 - /tmp/logs/kernels_small.csv > /tmp/logs/kernels_small.txt <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
head = rows[0]; i_name = head.index("Kernel Name"); i_t = head.index("gpu__time_duration.sum"); i_g = head.index("Grid Size"); i_b = head.index("Block Size")
for r in rows[2:]:
    if len(r) > i_t: print(r[0], r[i_t], r[i_g], r[i_b], r[i_name][:90])
PY
tail -45 /tmp/logs/kernels_small.txt
for f in /tmp/logs/bench_bf16.log /tmp/logs/fwd_*.log /tmp/logs/fwdbwd_async.log; do echo "== $f"; grep -E "^\| [0-9]" $f; done
grep -h "loss alone:" /tmp/logs/bench_bf16.log
cut -c1-300 /tmp/logs/anchor.log | tail -12
cd /tmp/logs && tar czf $OUT/logs.tgz . 
