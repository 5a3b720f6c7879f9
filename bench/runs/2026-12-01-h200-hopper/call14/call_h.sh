#!/usr/bin/env bash
# ncu full set with SASS-level source counters of the split-K main kernel at 1 x 1 x 4096 x 4096
# bf16 (where do its warps stall?), and of the unsplit 64 x 64 kernel at m = 128.
set -u
out=${OUT:?}
mkdir -p /tmp/bin
xz -dc .gpu/hopper_bench.xz > /tmp/bin/hopper_bench && chmod +x /tmp/bin/hopper_bench
for shape in 1,1,4096,4096 1,128,4096,4096; do
  name=$(echo $shape | tr , x)
  timeout 200 ncu --clock-control none --set full --import-source no -k regex:fused_matmul --launch-skip 1 --launch-count 1 \
    -o /tmp/rep_$name /tmp/bin/hopper_bench --variants hopper --dtypes bf16 --rhs n --reps 3 $shape > $out/run_$name.log 2>&1
  ncu -i /tmp/rep_$name.ncu-rep --page details > $out/details_$name.txt 2>&1
  ncu -i /tmp/rep_$name.ncu-rep --page source --csv --print-source sass > $out/sass_$name.csv 2>&1
  ls -la $out
done
grep -E "Duration|DRAM Throughput|Stall|Issue Slots|Eligible|No Eligible" $out/details_1x1x4096x4096.txt | head -20
python3 - "$out/sass_1x1x4096x4096.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr = next(i for i, r in enumerate(rows) if any('Source' == c for c in r))
h = rows[hdr]; data = rows[hdr+1:]
def col(name):
    for i, c in enumerate(h):
        if c == name: return i
    return None
src = col('Source'); samp = col('Warp Stall Sampling (All Samples)')
print(h[:12])
if samp is not None:
    top = sorted(data, key=lambda r: -float(r[samp] or 0))[:25]
    for r in top: print(r[samp], r[src][:110])
PY
