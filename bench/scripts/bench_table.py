#!/usr/bin/env python3
"""A run's wide speed table on stdout, for looking into a run with forced variants: the
benchmark's JSON files (one per dtype) and the PyTorch anchor's JSON, all from one run on one
machine. BENCHMARKS.md is rendered by render_benchmarks.py instead.

    python3 bench/scripts/bench_table.py results/bench_bf16.json results/bench_f16.json ... \\
        --anchor results/torch_anchor.json

Per shape and pass: fmar (its own choice, and which variant ran), fmar's best forced variant,
Burn's fused path, Burn's matmul alone, PyTorch's best fused forward (cuBLASLt's bias+ReLU
epilogue where it applies), and the ratios the targets are stated in. A candidate that failed is
named as failed, never given a figure.
"""
import argparse
import statistics

from render_benchmarks import anchor_backward, anchor_forward, anchor_row, load_anchor, load_report


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
    anchor = load_anchor(args.anchor) if args.anchor else None
    print("| dtype | shape b,m,k,n | pass | fmar (ran) | best fmar variant | Burn fused | Burn matmul | "
          "fmar / Burn fused | fmar / best variant | PyTorch fused | fmar / PyTorch |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    ratios = {}
    for path in args.bench:
        report = load_report(path)
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
            theirs = anchor_row(anchor, dtype, shape)
            torch = anchor_forward(theirs, best=True) if pass_ == "forward" else anchor_backward(theirs)
            torch_ms = torch[0] if torch else None
            torch_cell = f"{torch_ms:.4f} ({torch[1]})" if torch else "—"
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
