#!/usr/bin/env bash
set -u
out=${OUT:?}
for f in bench hopper_bench; do xz -dc .gpu/$f.xz > /tmp/$f && chmod +x /tmp/$f; done
cd /tmp
export BURN_DEVICE=cuda
timeout 200 ncu --clock-control none --metrics gpu__time_duration.sum --csv --launch-count 40 \
  /tmp/bench --dtype bf16 --only fmar --no-backward --budget-ms 20 --shapes 1,4096,4096,4096 > $out/ncu_burn.csv 2> $out/ncu_burn.err
echo "burn exit $?"
timeout 120 ncu --clock-control none --metrics gpu__time_duration.sum --csv --launch-count 12 \
  /tmp/hopper_bench --variants hopper --dtypes bf16 --rhs n --reps 5 1,4096,4096,4096 > $out/ncu_kernel.csv 2> $out/ncu_kernel.err
echo "kernel exit $?"
python3 - "$out" <<'PY'
import csv, sys, collections
for name in ["ncu_burn.csv", "ncu_kernel.csv"]:
    rows = []
    with open(f"{sys.argv[1]}/{name}") as f:
        lines = [l for l in f if l.startswith('"')]
    for r in csv.DictReader(lines):
        if r.get("Metric Name") == "gpu__time_duration.sum":
            rows.append((r["Kernel Name"][:70], float(r["Metric Value"].replace(",", "")), r.get("Metric Unit")))
    print(name, len(rows), "kernels")
    agg = collections.OrderedDict()
    for k, v, u in rows:
        agg.setdefault((k, u), []).append(v)
    for (k, u), vs in agg.items():
        vs.sort()
        print(f"  {len(vs):3d} x {k}  median {vs[len(vs)//2]:.1f} {u}  min {vs[0]:.1f}")
PY
