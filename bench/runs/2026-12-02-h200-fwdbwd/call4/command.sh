#!/usr/bin/env bash
# Forward, fmar against cuBLASLt timed the same way (back to back, fresh outputs, no cache flush), with the GPU's
# SM clock, power and temperature sampled every 100 ms throughout.
set -u
cd .gpu && xz -dk fmar-bench.xz && chmod +x fmar-bench && cd ..
export BURN_DEVICE=cuda RUST_BACKTRACE=1
mkdir -p /tmp/logs /tmp/anchor
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -lms 100 > /tmp/logs/smi.csv 2>&1 &
SMI=$!
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); echo "$(date +%T.%N) start $name" >> /tmp/logs/marks.txt; timeout $limit "$@" > /tmp/logs/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" | tee -a $OUT/summary.txt; echo "$(date +%T.%N) end $name" >> /tmp/logs/marks.txt; (cd /tmp/logs && tar czf $OUT/logs.tgz .); }
S="1,4096,4096,4096;1,16384,1024,4096;1,8192,8192,8192"
for dt in bf16 f16; do
  run fwd_$dt 60 .gpu/fmar-bench --dtype $dt --only fmar --no-backward --budget-ms 300 --shapes "$S" --json $OUT/fwd_$dt.json
done
echo "$(date +%T.%N) start anchor" >> /tmp/logs/marks.txt
(cd /tmp/anchor && OUT=/tmp/anchor ANCHOR_LOOP=1 ANCHOR_COMPILE=0 ANCHOR_DTYPES=bf16,f16 ANCHOR_SHAPES="$S" timeout 120 python3 $OLDPWD/bench/scripts/torch_anchor.py > /tmp/logs/anchor.log 2>&1); echo "anchor rc=$?" | tee -a $OUT/summary.txt
echo "$(date +%T.%N) end anchor" >> /tmp/logs/marks.txt
cp /tmp/anchor/torch_anchor.json $OUT/torch_anchor.json
kill $SMI
(cd /tmp/logs && tar czf $OUT/logs.tgz .)
for dt in bf16 f16; do grep -E "^\| [0-9]" /tmp/logs/fwd_$dt.log | cut -c1-120; done
python3 - <<'PY'
import json
for r in json.load(open("/tmp/anchor/torch_anchor.json")):
    if "lt_relu_bias_ms" in r: print(r["dtype"], r["shape"], "do_bench", round(r["lt_relu_bias_ms"], 4), "loop", round(r.get("lt_relu_bias_loop_ms", 0), 4))
PY
cat /tmp/logs/marks.txt
awk -F', ' 'NR>1 {print $2}' /tmp/logs/smi.csv | sort | uniq -c | sort -rn | head -8
