#!/usr/bin/env python3
"""Writes BENCHMARKS.md from the benchmark's JSON reports: the numbers are never edited by hand.

    python3 bench/scripts/render_benchmarks.py results/bench_bf16.json results/bench_f16.json \\
        --anchor results/torch_anchor.json --commit "$(git rev-parse --short HEAD)" \\
        --command "BURN_DEVICE=cuda fmar-bench --dtype <dtype> --json bench_<dtype>.json" \\
        -o BENCHMARKS.md

Inputs:

- one or more reports, as `fmar-bench --json PATH` writes them (one dtype each). Reports of the
  earlier format (dtype `BF16`, `burn reference` for Burn's fused path, no `status`, the variant
  that ran in `note`) are read too;
- optionally the PyTorch anchor's JSON (`torch_anchor.py`, run on the same machine right after the benchmark): a list of
  objects keyed by `dtype` and `shape`, with `lt_relu_bias_ms` (cuBLASLt's fused bias + ReLU,
  batch 1 only), `baddbmm_relu_ms`, `unfused_ms`, `matmul_only_ms` and `fwd_bwd_ms`. An f32
  report is compared with its `tf32` rows: f32 matmuls run in TF32 unless cubek is told not to;
- optionally `mlp_step --json` reports (`--memory`): a training step's memory, one row each;
- `bench/bounds.md`: the hand-written "what bounds it" paragraphs, one `## <row group>` section
  per row group (`large shapes`, `small m`, `batched small`).

`--anchor`, `--commit`, `--command`, `--date` and `--note` are given once (for every report) or
once per report, in the reports' order; `-` stands for none. The date, when not given, is the
first `YYYY-MM-DD` in the report's label, else in its path (the runs' folders start with one).

The page: a header naming, per report, the device, date, commit and command; per report one
table for the forward and one for the forward + backward (when measured), rows grouped by row
group; the chart of forward TFLOP/s (an SVG written beside the page, see bench_chart.py); the
"what bounds it" paragraphs of the groups that appear; how to reproduce; a link to the runs
folder, which holds the runs' raw output.
"""

import argparse
import json
import os
import re
import shlex
import sys

import bench_chart

# Row groups, in page order, and the rule that puts a shape in each.
GROUPS = ["large shapes", "small m", "batched small", "other shapes"]


def row_group(shape):
    """The row group of a shape `b, m, k, n`."""
    b, m, k, n = shape
    if b == 1 and m <= 128:
        return "small m"
    if b > 1 and m * k * n < 1 << 28:
        return "batched small"
    if b * m * k * n >= 1 << 30:
        return "large shapes"
    return "other shapes"


def load_report(path):
    """A report as the benchmark writes it, with rows of the earlier format brought to it."""
    with open(path) as f:
        report = json.load(f)
    report["dtype"] = report["dtype"].lower()
    report.setdefault("label", None)
    for row in report["rows"]:
        note = row.get("note") or ""
        if row["candidate"] == "burn reference":
            row["candidate"] = "burn fused"
        if "status" not in row:
            if row.get("ms") is not None:
                row["status"] = "ok"
            elif "unavailable" in note:
                row["status"] = "unavailable"
            else:
                row["status"] = "failed"
        if not row.get("ran"):
            match = re.search(r"\bran (\w+)", note)
            row["ran"] = match.group(1) if match else None
        row.setdefault("message", note or None)
    return report


def load_anchor(path):
    """The anchor's figures, keyed by `(dtype, shape)`; rows of one key are merged."""
    with open(path) as f:
        rows = json.load(f)
    anchor = {}
    for row in rows:
        anchor.setdefault((row["dtype"], tuple(row["shape"])), {}).update(row)
    return anchor


def anchor_row(anchor, dtype, shape):
    """The anchor's row for a report's dtype (`f32` reads `tf32`) and shape, if any."""
    if not anchor:
        return None
    return anchor.get(({"f32": "tf32"}.get(dtype, dtype), tuple(shape)))


def anchor_forward(row, best=False):
    """PyTorch's fused forward: cuBLASLt's bias + ReLU epilogue where it applies, else the
    faster of `relu(baddbmm)` and `relu(bmm + bias)`; with `best`, the fastest of the three.
    `(ms, what)` or `None`."""
    if row is None:
        return None
    if row.get("lt_relu_bias_ms") is not None and not best:
        return row["lt_relu_bias_ms"], "cuBLASLt"
    paths = (("lt_relu_bias_ms", "cuBLASLt"), ("baddbmm_relu_ms", "baddbmm"), ("unfused_ms", "unfused"))
    timed = [(row[key], name) for key, name in paths if row.get(key) is not None]
    return min(timed) if timed else None


def anchor_loop(row):
    """cuBLASLt's fused call timed as fmar's figures are, back to back in batches between two
    events (`lt_relu_bias_loop_ms`, `ANCHOR_LOOP=1`), or `None`."""
    if row is None or row.get("lt_relu_bias_loop_ms") is None:
        return None
    return row["lt_relu_bias_loop_ms"]


def anchor_backward(row):
    """PyTorch's forward + backward of `relu(baddbmm)` by autograd: `(ms, what)` or `None`."""
    if row is None or row.get("fwd_bwd_ms") is None:
        return None
    return row["fwd_bwd_ms"], "autograd"


def flops(shape, pass_):
    b, m, k, n = shape
    return 2.0 * b * m * k * n * (3 if pass_ == "forward+backward" else 1)


def find(rows, shape, pass_, candidate):
    for row in rows:
        if tuple(row["shape"]) == tuple(shape) and row["pass"] == pass_ and row["candidate"] == candidate:
            return row
    return None


def timed(row):
    """The row's ms when it was checked and timed; a SUSPECT or failed row has none. A forward +
    backward row's figure is the operation's own: the backward's seed (Burn's autodiff filling
    ones of the output's shape, timed alone in the same process, `seed_ms`) is taken out, as
    PyTorch's anchor is seeded with a ready gradient."""
    if row is None or row["status"] != "ok" or row.get("ms") is None:
        return None
    return row["ms"] - (row.get("seed_ms") or 0.0)


def seed_of(rows, shape):
    """The backward's seed alone on this shape (`seed_ms` of its forward + backward rows)."""
    for row in rows:
        if tuple(row["shape"]) == tuple(shape) and row.get("seed_ms") is not None:
            return row["seed_ms"]
    return None


def figure(ms, shape, pass_):
    return f"{ms:.4f} ({bench_chart.tflops_text(flops(shape, pass_) / ms / 1e9)})"


def cell(row, shape, pass_):
    if row is None:
        return "—"
    ms = timed(row)
    if ms is None:
        return {"failed": "**FAILED**", "suspect": "**SUSPECT**"}.get(row["status"], row["status"])
    return figure(ms, shape, pass_)


def ratio(ours, theirs):
    if ours is None or theirs is None:
        return "—"
    value = theirs / ours
    return f"**{value:.2f}x**" if value >= 1 else f"{value:.2f}x"


def shapes_of(report, pass_):
    seen = []
    for row in report["rows"]:
        if row["pass"] == pass_ and tuple(row["shape"]) not in seen:
            seen.append(tuple(row["shape"]))
    return seen


def grouped(shapes):
    """`(group, [shapes])` in page order, each group's shapes in report order."""
    return [(group, [s for s in shapes if row_group(s) == group])
            for group in GROUPS if any(row_group(s) == group for s in shapes)]


def table(report, anchor, pass_):
    """The same-run table of one report and pass, as Markdown lines."""
    rows = report["rows"]
    shapes = shapes_of(report, pass_)
    if not shapes:
        return []
    forward = pass_ == "forward"
    torch = anchor_forward if forward else anchor_backward
    with_anchor = anchor is not None
    with_loop = forward and with_anchor and any(
        anchor_loop(anchor_row(anchor, report["dtype"], shape)) is not None for shape in shapes)
    header = ["shape b,m,k,n", "fmar ms (TFLOP/s, ran)", "Burn fused", "Burn matmul alone"]
    if with_anchor:
        header.append("PyTorch cuBLASLt fused" if forward else "PyTorch fwd+bwd")
    if with_loop:
        header.append("cuBLASLt back to back")
    with_seed = not forward and any(seed_of(rows, shape) is not None for shape in shapes)
    if with_seed:
        header.append("seed alone (taken out)")
    header.append("fmar / Burn fused")
    if with_anchor:
        header.append("fmar / cuBLASLt" if forward else "fmar / PyTorch")
    if with_loop:
        header.append("fmar / cuBLASLt back to back")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for group, members in grouped(shapes):
        lines.append("| **" + group + "** |" + " |" * (len(header) - 1))
        for shape in members:
            fmar = find(rows, shape, pass_, "fmar")
            burn = find(rows, shape, pass_, "burn fused")
            matmul = find(rows, shape, pass_, "burn matmul")
            fmar_cell = cell(fmar, shape, pass_)
            if timed(fmar) is not None and fmar.get("ran"):
                fmar_cell = fmar_cell[:-1] + f", {fmar['ran']})"
            cells = [",".join(map(str, shape)), fmar_cell, cell(burn, shape, pass_), cell(matmul, shape, pass_)]
            if with_anchor:
                theirs = torch(anchor_row(anchor, report["dtype"], shape))
                if theirs is None:
                    cells.append("—")
                else:
                    ms, what = theirs
                    mark = "" if what in ("cuBLASLt", "autograd") else f" {what}†"
                    cells.append(figure(ms, shape, pass_) + mark)
            loop = anchor_loop(anchor_row(anchor, report["dtype"], shape)) if with_loop else None
            if with_loop:
                cells.append("—" if loop is None else figure(loop, shape, pass_))
            if with_seed:
                seed = seed_of(rows, shape)
                cells.append("—" if seed is None else f"{seed:.4f}")
            cells.append(ratio(timed(fmar), timed(burn)))
            if with_anchor:
                cells.append(ratio(timed(fmar), theirs[0] if theirs else None))
            if with_loop:
                cells.append(ratio(timed(fmar), loop))
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return lines


def memory_section(paths, page_dir):
    """The "Memory in a training step" section, from `mlp_step --json` reports."""
    lines = [
        "## Memory in a training step",
        "",
        "One training step of a multilayer perceptron (`mlp_step` in [bench/](bench/)): hidden",
        "`Linear` + ReLU layers and a `Linear` head on a batch of inputs, the loss `mean(out²)` and",
        "its backward, with the same weights in fmar's `FusedMlp` and in Burn's `Linear` + `relu`.",
        "*Kept for backward* is the device memory in use after the forward less what was in use",
        "before it (the model and the input): what autodiff holds for the backward. *After",
        "backward* adds the gradients. cubecl reports bytes in use, not a peak, so these are read",
        "at the step's two boundaries, with the device's queue drained. For fmar's operation",
        "alone, a tracked call keeps its ReLU mask (one bit per output element) and the operands",
        "its gradients need, never its output: the `path_proof` test measures it.",
        "",
        "| dtype | batch x width, layers | fmar kept (MiB) | Burn kept (MiB) | fmar after backward | Burn after backward | fmar step (ms) | Burn step (ms) | report |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for path in paths:
        with open(path) as f:
            report = json.load(f)
        models = {m["model"].split()[0].lower(): m for m in report["models"]}
        fmar, burn = models.get("fmar"), models.get("burn")
        if fmar is None or burn is None:
            sys.exit(f"{path}: expected an fmar and a Burn model")
        lines.append(
            f"| {report['dtype']} | {report['rows']} x {report['width']}, {report['layers']} + head "
            f"| {fmar['kept_for_backward_mib']:.1f} | {burn['kept_for_backward_mib']:.1f} "
            f"| {fmar['after_backward_mib']:.1f} | {burn['after_backward_mib']:.1f} "
            f"| {fmar['step_ms']:.3f} | {burn['step_ms']:.3f} | [json]({link(path, page_dir)}) |")
    return lines


def chart_panel(run):
    """One panel of the chart: the forward TFLOP/s of fmar, Burn's two paths and the anchor."""
    report = run["report"]
    shapes = [s for _, members in grouped(shapes_of(report, "forward")) for s in members]
    values = {}
    for shape in shapes:
        for candidate, _, _ in bench_chart.BARS:
            ms = timed(find(report["rows"], shape, "forward", candidate))
            if ms is not None:
                values[(shape, candidate)] = flops(shape, "forward") / ms / 1e9
        theirs = anchor_forward(anchor_row(run["anchor"], report["dtype"], shape))
        if theirs is not None:
            values[(shape, "pytorch")] = flops(shape, "forward") / theirs[0] / 1e9
    heading = f"{run['title']} forward, {report['device']}"
    if run["commit"]:
        heading += f", commit {run['commit']}"
    return heading, [(shape, row_group(shape)) for shape in shapes], values


def read_bounds(path):
    """`bounds.md`'s sections: `{group: paragraph}`. HTML comments are dropped."""
    with open(path) as f:
        text = re.sub(r"<!--.*?-->", "", f.read(), flags=re.S)
    sections, key = {}, None
    for line in text.splitlines():
        if line.startswith("## "):
            key = line[3:].strip().lower()
            sections[key] = []
        elif key is not None:
            sections[key].append(line)
    return {k: "\n".join(v).strip() for k, v in sections.items()}


def per_report(values, count, option):
    """An option given once (for every report) or once per report; `-` is none."""
    if not values:
        return [None] * count
    if len(values) == 1:
        values = values * count
    if len(values) != count:
        sys.exit(f"--{option} is given {len(values)} times for {count} reports: give it once or once per report")
    return [None if v == "-" else v for v in values]


def date_of(report, path):
    for text in (report.get("label") or "", path):
        match = re.search(r"\d{4}-\d{2}-\d{2}", text)
        if match:
            return match.group(0)
    return None


def link(path, page_dir):
    return os.path.relpath(path, page_dir).replace(os.sep, "/")


def command_line(argv):
    """`argv` for a shell, one option per line."""
    words = [shlex.quote(word) for word in argv]
    lines = [words[0]]
    for word in words[1:]:
        if word.startswith("-") and word != "-":
            lines.append("    " + word)
        else:
            lines[-1] += " " + word
    return " \\\n".join(lines)


def render(args):
    count = len(args.reports)
    anchors = per_report(args.anchor, count, "anchor")
    commits = per_report(args.commit, count, "commit")
    commands = per_report(args.command, count, "command")
    dates = per_report(args.date, count, "date")
    notes = per_report(args.note, count, "note")
    page_dir = os.path.dirname(os.path.abspath(args.output))
    bounds = read_bounds(args.bounds)
    runs = []
    for i, path in enumerate(args.reports):
        report = load_report(path)
        anchor = load_anchor(anchors[i]) if anchors[i] else None
        runs.append({
            "path": path, "report": report, "anchor": anchor, "anchor_path": anchors[i],
            "commit": commits[i], "command": commands[i], "note": notes[i],
            "date": dates[i] or date_of(report, path),
        })
    names = [run["report"]["dtype"] for run in runs]
    for run in runs:
        dtype = run["report"]["dtype"]
        run["title"] = dtype if names.count(dtype) == 1 else f"{dtype}, {os.path.basename(run['path'])}"

    out = [
        "# fmar benchmarks",
        "",
        "<!-- Generated by bench/scripts/render_benchmarks.py from the JSON reports it names; the",
        "     paragraphs under \"What bounds it\" come from bench/bounds.md. Edit those, not this page. -->",
        "",
        "`out = relu(lhs @ rhs + bias)` with a `Linear` bias `[n]`; shapes are `b,m,k,n` (`lhs`",
        "`[b, m, k]`, `rhs` `[b, k, n]`). Every fmar and Burn figure of a table comes from one",
        "process of the benchmark (the `fmar-bench` crate in [bench/](bench/)) on one device: each",
        "candidate's result was checked against an independent f32 CPU reference before it was",
        "timed, and a candidate that failed its check has no figure. A figure is the median time per",
        "call over batches of back-to-back launches, in ms, with TFLOP/s in parentheses (`2·b·m·k·n`",
        "per forward, three times that per forward + backward). `fmar / X` is X's time over fmar's:",
        "above 1, fmar is faster. `ran` is the fmar kernel variant that ran; — marks a candidate",
        "the run did not measure. A forward + backward is seeded with ones of the output's shape",
        "(`out.backward()`: the gradients of `out.sum()`), a tensor Burn's autodiff fills; the",
        "benchmark times that fill alone in the same process, and the forward + backward figures",
        "of fmar and Burn have it taken out, so that they are the operation's own.",
        "",
    ]
    if any(run["anchor"] for run in runs):
        out += [
            "PyTorch's figures come from [torch_anchor.py](bench/scripts/torch_anchor.py), run on the",
            "same machine in the same run as the report beside them: cuBLASLt's fused bias + ReLU",
            "epilogue (`torch._addmm_activation`, bias `[n]`) where it applies (`b = 1`); for a",
            "batched shape, marked †, PyTorch's faster of `relu(baddbmm)` and `relu(bmm + bias)`. Its",
            "forward + backward is autograd through `relu(baddbmm)`, seeded with a ready gradient",
            "(`out.backward(g)`). f32 is compared with PyTorch in TF32, as fmar's and Burn's f32",
            "tensor-core matmuls run by default.",
            "",
        ]
    if any(run["anchor"] and any(anchor_loop(row) is not None for row in run["anchor"].values())
           for run in runs):
        out += [
            "cuBLASLt's fused call is timed two ways: by its own CUDA events around a short run",
            "(\"PyTorch cuBLASLt fused\"), and back to back in batches between two events with every",
            "output kept (\"cuBLASLt back to back\", at `b = 1`), as fmar's and Burn's figures are timed.",
            "Back to back, the large shapes run at the board's power limit, for cuBLASLt as for fmar,",
            "so the second column is the one measured as fmar's figure is.",
            "",
        ]
    out += ["Measured:", ""]
    for run in runs:
        report = run["report"]
        facts = [report["device"]]
        if run["date"]:
            facts.append(run["date"])
        if run["commit"]:
            facts.append(f"commit `{run['commit']}`")
        if "autotune" in report:
            facts.append("fmar's kernel chosen by " + ("autotune" if report["autotune"] else "its heuristic"))
        if report.get("label"):
            facts.append(f"label \"{report['label']}\"")
        sources = f"[report]({link(run['path'], page_dir)})"
        if run["anchor_path"]:
            sources += f", [PyTorch anchor]({link(run['anchor_path'], page_dir)})"
        out.append(f"- **{run['title']}**: " + ", ".join(facts) + f" ({sources}).")
    runs_link = link(args.runs, page_dir).rstrip("/") + "/"
    out += [
        "",
        f"The runs these figures cite, with their raw logs, are in [{runs_link}]({runs_link}), one",
        "folder per run, each with a README naming its commit and command.",
    ]

    for run in runs:
        report = run["report"]
        out += ["", f"## {run['title']}", ""]
        if run["command"]:
            out += ["```sh", run["command"], "```", ""]
        if run["note"]:
            out += [run["note"], ""]
        for pass_, heading in (("forward", "Forward"), ("forward+backward", "Forward + backward")):
            lines = table(report, run["anchor"], pass_)
            if lines:
                out += [f"### {heading}", ""] + lines + [""]
        if out[-1] == "":
            out.pop()

    if args.memory:
        out += [""] + memory_section(args.memory, page_dir)

    chart = bench_chart.forward_chart([chart_panel(run) for run in runs])
    if chart is not None:
        os.makedirs(os.path.dirname(os.path.abspath(args.chart)), exist_ok=True)
        with open(args.chart, "w") as f:
            f.write(chart)
        out += ["", "## Chart", "",
                f"![forward TFLOP/s per shape: fmar, Burn, PyTorch]({link(args.chart, page_dir)})", "",
                "Forward TFLOP/s of the tables above, on a logarithmic scale; the dashed line is",
                "PyTorch's fused forward where the anchor has it."]

    present = []
    for run in runs:
        for pass_ in ("forward", "forward+backward"):
            for shape in shapes_of(run["report"], pass_):
                if row_group(shape) not in present:
                    present.append(row_group(shape))
    paragraphs = [(g, bounds[g]) for g in GROUPS if g in present and bounds.get(g)]
    if paragraphs:
        out += ["", "## What bounds it"]
        for group, text in paragraphs:
            out += ["", f"### {group[0].upper() + group[1:]}", "", text]

    argv = command_line(["python3", "bench/scripts/render_benchmarks.py"] + sys.argv[1:])
    out += [
        "",
        "## How to reproduce",
        "",
        "On a machine with an NVIDIA GPU, its driver and NVRTC: build the benchmark, run it with",
        "the device script [gpu-speed.sh](bench/scripts/gpu-speed.sh) (one process per dtype, then",
        "the PyTorch anchor, in one run; it leaves `bench_<dtype>.json` and `torch_anchor.json`",
        "in `OUT`), and render this page from those files. Leave out `autotune` to measure both",
        "fmar and Burn by their heuristics, as the tables above say where they were:",
        "",
        "```sh",
        "cargo build --release -p fmar-bench --features cuda-nvrtc,autotune",
        "BENCH=target/release/fmar-bench BENCH_DTYPES=\"bf16 f16\" ANCHOR=1 OUT=results \\",
        "    bash bench/scripts/gpu-speed.sh",
        "python3 bench/scripts/render_benchmarks.py results/bench_bf16.json results/bench_f16.json \\",
        "    --anchor results/torch_anchor.json --commit \"$(git rev-parse --short HEAD)\" \\",
        "    --command 'BURN_DEVICE=cuda fmar-bench --dtype <dtype> --json bench_<dtype>.json --no-backward --budget-ms 150'",
        "```",
        "",
        "This page was rendered by:",
        "",
        "```sh",
        argv,
        "```",
        "",
    ]
    return "\n".join(out)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    bench_dir = os.path.dirname(here)
    parser = argparse.ArgumentParser(description="Writes BENCHMARKS.md from the benchmark's JSON reports.")
    parser.add_argument("reports", nargs="+", metavar="REPORT.json", help="fmar-bench --json reports, one dtype each")
    parser.add_argument("--anchor", action="append", help="the PyTorch anchor's JSON (once, or once per report; - for none)")
    parser.add_argument("--commit", action="append", help="the commit the binaries were built from")
    parser.add_argument("--command", action="append", help="the exact benchmark command")
    parser.add_argument("--date", action="append", help="YYYY-MM-DD (default: from the label or the path)")
    parser.add_argument("--note", action="append", help="a sentence printed under the report's heading")
    parser.add_argument("--memory", nargs="+", metavar="MLP.json",
                        help="mlp_step --json reports: the memory of a training step, one row each")
    parser.add_argument("--bounds", default=os.path.join(bench_dir, "bounds.md"),
                        help="the hand-written paragraphs (default: bench/bounds.md)")
    parser.add_argument("--chart", default=os.path.join(bench_dir, "chart.svg"),
                        help="where the SVG chart goes (default: bench/chart.svg)")
    parser.add_argument("--runs", default=os.path.join(bench_dir, "runs"),
                        help="the runs folder the page links to (default: bench/runs)")
    parser.add_argument("-o", "--output", default="BENCHMARKS.md", help="the page (default: BENCHMARKS.md)")
    args = parser.parse_args()
    page = render(args)
    with open(args.output, "w") as f:
        f.write(page)


if __name__ == "__main__":
    main()
