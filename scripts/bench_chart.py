#!/usr/bin/env python3
"""Draws the benchmark chart from the JSON files `examples/bench.rs` writes.

    python3 scripts/bench_chart.py docs/runs/<run>/*.json -o docs/bench.png

One panel per dtype file; for each shape, forward TFLOP/s of Burn's fused reference path,
fmar (autotuned) and fmar's naive baseline kernel, with PyTorch's figures (cuBLAS matmul
alone and the unfused three-kernel path, measured on the same H200 model outside this
repository) as markers. A `.md` file holds the bench's Markdown rows instead of its JSON.
"""

import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# PyTorch 2.11 on the same H200 model, TFLOP/s, measured outside this repository:
# (matmul alone, unfused).
TORCH = {
    ("BF16", (1, 4096, 4096, 4096)): (720, 609),
    ("F16", (1, 4096, 4096, 4096)): (678, 585),
    ("F32", (1, 4096, 4096, 4096)): (51, 50),
    ("BF16", (1, 16384, 1024, 4096)): (656, 389),
    ("BF16", (8, 1024, 1024, 1024)): (578, 324),
    ("BF16", (64, 128, 128, 128)): (32, 18),
    ("BF16", (32, 512, 64, 512)): (97, 34),
}

CANDIDATES = [("burn reference", "#888888"), ("fmar", "#d62728"), ("fmar naive", "#1f77b4")]


def load_markdown(path):
    """The bench's Markdown rows (as it printed them to stdout) in its JSON's shape."""
    rows, dtype, device = [], None, "NVIDIA H200 (ptx_sm90)"
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 9 or not cells[0][0].isdigit():
            continue
        shape = [int(x) for x in cells[0].split(",")]
        dtype = cells[1]
        ms = None if cells[4] == "-" else float(cells[4])
        tflops = None if cells[5] == "-" else float(cells[5])
        rows.append({"shape": shape, "pass": cells[2], "candidate": cells[3], "ms": ms, "tflops": tflops})
    return {"dtype": dtype, "device": device, "rows": rows}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="+")
    parser.add_argument("-o", "--output", required=True)
    args = parser.parse_args()
    runs = []
    for path in args.files:
        data = load_markdown(path) if path.endswith(".md") else json.load(open(path))
        label = os.path.splitext(os.path.basename(path))[0].replace("-from-output", "")
        runs.append((label, data))

    fig, axes = plt.subplots(len(runs), 1, figsize=(11, 3.6 * len(runs)), squeeze=False)
    for ax, (label, data) in zip(axes[:, 0], runs):
        rows = [r for r in data["rows"] if r["pass"] == "forward"]
        shapes = []
        for r in rows:
            if tuple(r["shape"]) not in shapes:
                shapes.append(tuple(r["shape"]))
        width = 0.8 / len(CANDIDATES)
        for i, (name, color) in enumerate(CANDIDATES):
            values = []
            for shape in shapes:
                match = [r for r in rows if tuple(r["shape"]) == shape and r["candidate"] == name]
                values.append(match[0]["tflops"] if match and match[0]["tflops"] else 0.0)
            xs = [s + (i - 1) * width for s in range(len(shapes))]
            ax.bar(xs, values, width, label=name, color=color)
            for x, v in zip(xs, values):
                if v:
                    ax.text(x, v, f"{v:.0f}" if v >= 10 else f"{v:.1f}", ha="center", va="bottom", fontsize=7)
        for s, shape in enumerate(shapes):
            torch = TORCH.get((data["dtype"], shape))
            if torch:
                ax.plot([s - 0.45, s + 0.45], [torch[0]] * 2, color="black", linestyle="--", linewidth=1)
                ax.plot([s - 0.45, s + 0.45], [torch[1]] * 2, color="green", linestyle=":", linewidth=1)
        ax.set_xticks(range(len(shapes)))
        ax.set_xticklabels(["x".join(map(str, s)) for s in shapes], fontsize=8)
        ax.set_ylabel("TFLOP/s (forward)")
        ax.set_title(f"{label}: {data['dtype']} on {data['device']}", fontsize=9)
        ax.legend(fontsize=7, loc="upper right")
    fig.text(0.01, 0.005, "dashed: PyTorch cuBLAS matmul alone; dotted: PyTorch unfused relu(bmm + bias) "
             "(measured separately, same H200 model). Bias [n]. Shapes b x m x k x n.", fontsize=7)
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    fig.savefig(args.output)


if __name__ == "__main__":
    main()
