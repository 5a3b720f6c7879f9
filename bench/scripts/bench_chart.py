"""The benchmark chart as SVG (standard library only): render_benchmarks.py gathers the figures
from the reports and the anchor, calls `forward_chart`, and writes the file it links.

One panel per report: for each shape, forward TFLOP/s of fmar (its own choice), Burn's fused
path and Burn's matmul alone as bars, with PyTorch's fused forward from the anchor, where it has
the shape, as a dashed line across the shape's bars. The scale is logarithmic: the shapes span
several decades, from a single-row `Linear` to 4096³.
"""

import math
from xml.sax.saxutils import escape

# The bars: the candidate as the report names it, its legend, its colour.
BARS = [("fmar", "fmar", "#d62728"), ("burn fused", "Burn fused", "#7f7f7f"),
        ("burn matmul", "Burn matmul alone", "#c7c7c7")]
MAX_WIDTH, MIN_WIDTH, SLOT = 980, 560, 160
PANEL = 330
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 52, 58


def tflops_text(value):
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}"


def forward_chart(panels):
    """The chart as SVG text, one panel per `(heading, shapes, values)`: `shapes` a list of
    `(shape, row group)` in order, `values` forward TFLOP/s keyed by `(shape, candidate)`, with
    `"pytorch"` for the anchor's line. `None` when no panel has a value."""
    panels = [panel for panel in panels if panel[2]]
    if not panels:
        return None
    height = PANEL * len(panels)
    most = max(len(shapes) for _, shapes, _ in panels)
    width = max(MIN_WIDTH, min(MAX_WIDTH, LEFT + RIGHT + SLOT * most))
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif">',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    for index, panel in enumerate(panels):
        svg += draw_panel(index * PANEL, width, *panel)
    svg.append("</svg>")
    return "\n".join(svg) + "\n"


def draw_panel(y0, width, heading, shapes, values):
    low = math.floor(math.log10(min(values.values())))
    high = math.ceil(math.log10(max(values.values())))
    high = max(high, low + 1)
    plot_w = width - LEFT - RIGHT
    plot_h = PANEL - TOP - BOTTOM
    base = y0 + TOP + plot_h

    def y_of(value):
        return base - (math.log10(value) - low) / (high - low) * plot_h

    out = [f'<text x="{LEFT}" y="{y0 + 18}" font-size="13" font-weight="bold">{escape(heading)}</text>']
    # Legend.
    x = LEFT
    for _, name, color in BARS:
        out.append(f'<rect x="{x}" y="{y0 + 28}" width="12" height="12" fill="{color}"/>')
        out.append(f'<text x="{x + 16}" y="{y0 + 38}" font-size="11">{escape(name)}</text>')
        x += 24 + 7 * len(name)
    if any(key[1] == "pytorch" for key in values):
        out.append(f'<line x1="{x}" y1="{y0 + 34}" x2="{x + 22}" y2="{y0 + 34}" stroke="black" '
                   f'stroke-width="1.5" stroke-dasharray="5,3"/>')
        out.append(f'<text x="{x + 26}" y="{y0 + 38}" font-size="11">PyTorch fused (anchor)</text>')
    # Axis and decades.
    for decade in range(low, high + 1):
        y = y_of(10 ** decade)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" stroke="#e5e5e5"/>')
        label = f"{10 ** decade:g}"
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{label}</text>')
    out.append(f'<line x1="{LEFT}" y1="{base}" x2="{LEFT}" y2="{y0 + TOP}" stroke="black"/>')
    out.append(f'<line x1="{LEFT}" y1="{base}" x2="{LEFT + plot_w}" y2="{base}" stroke="black"/>')
    middle = y0 + TOP + plot_h / 2
    out.append(f'<text x="14" y="{middle:.1f}" font-size="11" text-anchor="middle" '
               f'transform="rotate(-90 14 {middle:.1f})">TFLOP/s (forward)</text>')
    # Bars, per shape.
    slot = min(plot_w / len(shapes), SLOT)
    bar = slot * 0.8 / len(BARS)
    for s, (shape, group) in enumerate(shapes):
        x0 = LEFT + s * slot + slot * 0.1
        for i, (candidate, _, color) in enumerate(BARS):
            value = values.get((shape, candidate))
            x = x0 + i * bar
            if value is None:
                out.append(f'<text x="{x + bar / 2:.1f}" y="{base - 4}" font-size="9" '
                           f'text-anchor="middle" fill="#999999">n/a</text>')
                continue
            top = min(y_of(value), base)
            out.append(f'<rect x="{x:.1f}" y="{top:.1f}" width="{bar * 0.92:.1f}" '
                       f'height="{base - top:.1f}" fill="{color}"/>')
            out.append(f'<text x="{x + bar * 0.46:.1f}" y="{top - 3:.1f}" font-size="9" '
                       f'text-anchor="middle">{tflops_text(value)}</text>')
        theirs = values.get((shape, "pytorch"))
        if theirs is not None:
            y = y_of(theirs)
            out.append(f'<line x1="{x0 - slot * 0.05:.1f}" y1="{y:.1f}" x2="{x0 + slot * 0.85:.1f}" '
                       f'y2="{y:.1f}" stroke="black" stroke-width="1.5" stroke-dasharray="5,3"/>')
            out.append(f'<text x="{x0 + slot * 0.85:.1f}" y="{y - 3:.1f}" font-size="9" '
                       f'text-anchor="end">{tflops_text(theirs)}</text>')
        out.append(f'<text x="{LEFT + (s + 0.5) * slot:.1f}" y="{base + 16}" font-size="10" '
                   f'text-anchor="middle">{",".join(map(str, shape))}</text>')
        out.append(f'<text x="{LEFT + (s + 0.5) * slot:.1f}" y="{base + 30}" font-size="9" '
                   f'text-anchor="middle" fill="#666666">{group}</text>')
    out.append(f'<text x="{LEFT + plot_w / 2}" y="{base + 48}" font-size="11" '
               f'text-anchor="middle">shape b,m,k,n (bias [n])</text>')
    return out
