#!/usr/bin/env python3
"""The same-run speed table for BENCHMARKS.md, from the benchmark's JSON files (one per dtype)
and the PyTorch anchor's JSON, all from one run on one machine.

    python3 scripts/bench_table.py results/bench_bf16.json results/bench_f16.json ... \
        --anchor results/torch_anchor.json

Per shape and pass: fmar (its own choice, and which variant ran), fmar's best forced variant,
Burn's fused path, Burn's matmul alone, PyTorch's best fused forward (cuBLASLt's bias+ReLU
epilogue where it applies), and the ratios the targets are stated in. A candidate that failed is
named as failed, never given a figure.
"""
import argparse
import json
import statistics


def best(rows, pred):
    timed = [r for r in rows if pred(r) and r["status"] == "ok" and r["ms"] is not None]
    return min(timed, key=lambda r: r["ms"]) if timed else None


def cell(row):
    if row is None:
        return "—"
    return f"{row['ms']:.4f} ({row['tflops']:.0f})"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bench", nargs="+")
    parser.add_argument("--anchor")
    args = parser.parse_args()
    anchor = {}
    if args.anchor:
        for r in json.load(open(args.anchor)):
            anchor[(r["dtype"], tuple(r["shape"]))] = r
    print("| dtype | shape b,m,k,n | pass | fmar (ran) | best fmar variant | Burn fused | Burn matmul | "
          "fmar / Burn fused | fmar / best variant | PyTorch fused | fmar / PyTorch |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    ratios = {}
    for path in args.bench:
        report = json.load(open(path))
        dtype = report["dtype"]
        rows = report["rows"]
        keys = []
        for r in rows:
            key = (tuple(r["shape"]), r["pass"])
            if key not in keys:
                keys.append(key)
        for shape, pass_ in keys:
            here = [r for r in rows if tuple(r["shape"]) == shape and r["pass"] == pass_]
            fmar = next((r for r in here if r["candidate"] == "fmar"), None)
            variant = best(here, lambda r: r["candidate"].startswith("fmar "))
            burn = next((r for r in here if r["candidate"] == "burn fused"), None)
            matmul = next((r for r in here if r["candidate"] == "burn matmul"), None)

            def show(row):
                if row is None:
                    return "—"
                if row["status"] != "ok":
                    return f"**{row['status']}**"
                return cell(row)

            fmar_cell = show(fmar)
            if fmar is not None and fmar["status"] == "ok" and fmar.get("ran"):
                fmar_cell += f" {fmar['ran']}"
            ratio = (burn["ms"] / fmar["ms"]) if (fmar and burn and fmar["status"] == "ok"
                                                  and burn["status"] == "ok") else None
            vs_best = (variant["ms"] / fmar["ms"]) if (fmar and variant and fmar["status"] == "ok") else None
            torch_key = {"f32": "tf32"}.get(dtype, dtype)
            a = anchor.get((torch_key, shape))
            torch_ms = None
            if a is not None and pass_ == "forward":
                candidates = [a.get(k) for k in ("lt_relu_bias_ms", "baddbmm_relu_ms", "unfused_ms")]
                candidates = [c for c in candidates if c is not None]
                torch_ms = min(candidates) if candidates else None
            elif a is not None:
                torch_ms = a.get("fwd_bwd_ms")
            torch_cell = f"{torch_ms:.4f}" if torch_ms else "—"
            vs_torch = (torch_ms / fmar["ms"]) if (torch_ms and fmar and fmar["status"] == "ok") else None
            if ratio is not None:
                ratios.setdefault((dtype, pass_), []).append(ratio)
            fmt = lambda x: f"{x:.2f}x" if x is not None else "—"
            variant_cell = (f"{cell(variant)} {variant['candidate'][5:]}" if variant else "—")
            print(f"| {dtype} | {','.join(map(str, shape))} | {pass_} | {fmar_cell} | {variant_cell} | "
                  f"{show(burn)} | {show(matmul)} | {fmt(ratio)} | {fmt(vs_best)} | {torch_cell} | {fmt(vs_torch)} |")
    print()
    for (dtype, pass_), values in ratios.items():
        print(f"- {dtype} {pass_}: fmar / Burn fused median {statistics.median(values):.2f}x, "
              f"min {min(values):.2f}x over {len(values)} shapes")


if __name__ == "__main__":
    main()
