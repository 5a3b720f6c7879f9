#!/usr/bin/env bash
# The bias gradient's last step over more units: kernel tests, speed at 4096^3 (fmar; PyTorch in the same call), kernel times under ncu.
cd .gpu && for b in fmar-bench against_f64-c521a2fb969e5440; do xz -dk $b.xz && chmod +x $b; done && cd ..
export RUST_BACKTRACE=1 XDG_CACHE_HOME=/tmp/cache
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > $OUT/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" | tee -a $OUT/summary.txt; }
(cd crates/kernel && FMAR_TEST_DEVICE=cuda timeout 150 ../../.gpu/against_f64-c521a2fb969e5440 --test-threads 1 mask_follows hopper_product) > $OUT/kernel.log 2>&1; echo "kernel rc=$?" | tee -a $OUT/summary.txt
export BURN_DEVICE=cuda
L="2026-12-02 H200 column sums"
run bench_bf16_fmar 60 .gpu/fmar-bench --dtype bf16 --shapes "1,4096,4096,4096" --only fmar --budget-ms 400 --label "$L" --json $OUT/bench_bf16_fmar.json
run bench_f16_fmar 60 .gpu/fmar-bench --dtype f16 --shapes "1,4096,4096,4096" --only fmar --budget-ms 400 --label "$L" --json $OUT/bench_f16_fmar.json
(cd $OUT && OUT=$OUT ANCHOR_COMPILE=0 ANCHOR_DTYPES=f16,bf16 ANCHOR_SHAPES="1,4096,4096,4096" timeout 60 python3 $OLDPWD/bench/scripts/torch_anchor.py > $OUT/anchor.log 2>&1); echo "anchor rc=$?" | tee -a $OUT/summary.txt
run ncu 120 ncu --clock-control none --launch-count 3000 --metrics gpu__time_duration.sum -o /tmp/prof .gpu/fmar-bench --dtype bf16 --shapes "1,4096,4096,4096" --only fmar --budget-ms 20
ncu --import /tmp/prof.ncu-rep --csv --page raw --metrics gpu__time_duration.sum > $OUT/kernels.csv 2>&1
{ grep -E "^test |test result|panicked" $OUT/kernel.log; grep -hE "^\| [0-9]" $OUT/bench_*.log; grep -E "fwd_bwd" $OUT/anchor.log | cut -c1-330
python3 - $OUT/kernels.csv <<'PY'
import csv, sys, collections
rows = list(csv.reader(open(sys.argv[1])))
head = rows[0]; i_name = head.index("Kernel Name"); i_t = head.index("gpu__time_duration.sum")
agg = collections.OrderedDict()
for r in rows[2:]:
    if len(r) <= i_t: continue
    a = agg.setdefault(r[i_name][:60], [0, 0.0]); a[0] += 1; a[1] += float(r[i_t].replace(",", ""))
for name, (c, tot) in agg.items(): print(f"{c:6d} {tot/c:12.1f} us {name}")
PY
} > $OUT/digest.txt
cat $OUT/summary.txt $OUT/digest.txt
cd $OUT && tar czf logs.tgz --exclude logs.tgz --exclude digest.txt --exclude summary.txt * && find . -maxdepth 1 -type f ! -name logs.tgz ! -name digest.txt ! -name summary.txt -delete
