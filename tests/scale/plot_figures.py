#!/usr/bin/env python3
# Usage: plot_figures.py FIGURES.json OUT.svg [--compare OTHER.json --labels A B]
"""Draws the figures of tests/scale/sweep1000_e2e.sh (BUILD/scale-sweep1000.json) as an SVG.

Panel (a): seconds from each run's first pod create to all its pods created, bound, Running and its
result collected; panel (b): the operator's API requests per run and its peak in any 10 s, with the
client's limit (qps x 10) dashed. Both against the run's GPUs (ranks) on a log2 axis; y is log10.
With --compare, panel (a) shows tCreated and tRunning of both settings (first solid, second dashed)
and panel (b) both settings' requests. Python 3 standard library only; the same input gives the
same bytes (numbers printed with two decimals at most, no timestamps). The look follows
core/plot/scaling_plot.cpp: Okabe and Ito's colours, grey grid, ticks 1, 2, 5 x 10^k.
"""
import argparse
import collections
import json
import math
import os
import sys

INK, GREY, LIMIT = "#222222", "#555555", "#D62728"
WIDTH, HEIGHT = 1200, 640
# A series: its key in each run, legend text, colour, marker, unit, line width and marker radius.
Series = collections.namedtuple("Series", "key text colour shape unit width size", defaults=(2.5, 4.5))
TIMES = [Series("tCreated", "all pods created (tCreated)", "#0072B2", "circle", "s"),
         Series("tBound", "all pods bound (tBound)", "#E69F00", "square", "s"),
         Series("tRunning", "all pods Running (tRunning)", "#009E73", "triangle", "s"),
         Series("tResult", "result collected (tResult)", "#CC79A7", "diamond", "s")]
# A run shorter than 10 s has its peak equal to its total: the peak is drawn thin over a thick total.
REQUESTS = [Series("operatorRequests", "API requests per run (operatorRequests)", "#0072B2", "circle", "requests",
                   5, 6.5),
            Series("peakRequestsPer10s", "peak requests in any 10 s (peakRequestsPer10s)", "#E69F00", "square",
                   "requests", 1.8, 3.5)]
DASHES = [None, "6 4"]  # first setting solid, second dashed


def num(v):
    """A coordinate: at most two decimals, trailing zeros dropped (core/svg_writer's svg_number)."""
    s = "%.2f" % v if math.isfinite(v) else "0"
    s = s.rstrip("0").rstrip(".") if "." in s else s
    return "0" if s == "-0" else s


def esc(text):
    return (str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&apos;"))


class Svg:
    """Elements with attributes in the order given, indented by depth."""

    def __init__(self, width, height):
        self.lines = ['<?xml version="1.0" encoding="UTF-8"?>']
        self.stack = []
        self.open("svg", xmlns="http://www.w3.org/2000/svg", width=width, height=height,
                  viewBox="0 0 %s %s" % (num(width), num(height)),
                  font_family="DejaVu Sans, Helvetica, Arial, sans-serif")

    def _tag(self, name, attrs):
        parts = [name] + ['%s="%s"' % (k.rstrip("_").replace("_", "-"), esc(num(v) if isinstance(v, (int, float)) else v))
                          for k, v in attrs.items() if v is not None]
        return "  " * len(self.stack) + "<" + " ".join(parts)

    def open(self, name, **attrs):
        self.lines.append(self._tag(name, attrs) + ">")
        self.stack.append(name)

    def close(self):
        name = self.stack.pop()
        self.lines.append("  " * len(self.stack) + "</%s>" % name)

    def leaf(self, name, **attrs):
        self.lines.append(self._tag(name, attrs) + "/>")

    def text(self, name, content, **attrs):
        self.lines.append(self._tag(name, attrs) + ">" + esc(content) + "</%s>" % name)

    def finish(self):
        while self.stack:
            self.close()
        return "\n".join(self.lines) + "\n"


class LogScale:
    """Maps [lo, hi] (both > 0) onto pixels [p0, p1] by the logarithm of the value."""

    def __init__(self, lo, hi, p0, p1):
        self.a, self.b, self.p0, self.p1 = math.log(lo), math.log(hi), p0, p1

    def map(self, v):
        return self.p0 + (math.log(v) - self.a) / (self.b - self.a) * (self.p1 - self.p0)


def power_of_two_ticks(lo, hi):
    a, b = math.floor(math.log2(lo) + 1e-9), math.ceil(math.log2(hi) - 1e-9)
    return [2.0 ** k for k in range(a, max(a, b) + 1)]


def log_ticks(lo, hi):
    """1, 2, 5 x 10^k from the largest <= lo to the smallest >= hi; only powers of ten beyond 10."""
    a, b = math.floor(math.log10(lo) + 1e-9), math.ceil(math.log10(hi) - 1e-9)
    for steps in ([1, 2, 5], [1]):
        candidates = [float("%.12g" % (m * 10.0 ** e)) for e in range(a, max(a, b) + 1) for m in steps]
        ticks = []
        for i, c in enumerate(candidates):
            if i + 1 < len(candidates) and candidates[i + 1] <= lo * (1 + 1e-9):
                continue  # the first tick is the largest <= lo
            ticks.append(c)
            if c >= hi * (1 - 1e-9):
                break
        if len(ticks) <= 10:
            return ticks
    return ticks


def tick_text(v):
    if v >= 1e6:
        return "%gM" % (v / 1e6)
    if v >= 1e4:
        return "%gk" % (v / 1e3)
    return "%g" % v


def value_text(v, unit):
    return ("%.3g s" % v) if unit == "s" else "{:,.0f}".format(v)


def load(path):
    with open(path) as f:
        figures = json.load(f)
    figures["runs"] = sorted(figures.get("runs", []), key=lambda r: (r.get("gpus", 0), r.get("index", 0)))
    return figures


def points(figures, key):
    """(gpus, value, run) of the runs with a value > 0 (a log axis has no place for 0)."""
    out = []
    for r in figures["runs"]:
        v = r.get(key)
        if isinstance(v, (int, float)) and v > 0 and r.get("gpus", 0) > 0:
            out.append((r["gpus"], float(v), r))
    return out


def limit_of(figures):
    qps = figures.get("qps")
    return qps * 10 if isinstance(qps, (int, float)) and qps > 0 else None


class Panel:
    """A plot area (left, top, right, bottom) with the GPUs' log2 x axis and a log10 y axis."""

    def __init__(self, area, max_gpus, values):
        self.left, self.top, self.right, self.bottom = area
        self.x_ticks = power_of_two_ticks(1, max(1, max_gpus))
        self.x = LogScale(self.x_ticks[0] / 1.3, self.x_ticks[-1] * 1.3, self.left, self.right)
        values = [v for v in values if v > 0] or [1, 10]
        self.y_ticks = log_ticks(min(values), max(values))
        lo, hi = self.y_ticks[0], self.y_ticks[-1]
        self.y = LogScale(lo, hi if hi > lo else lo * 10, self.bottom, self.top)


def draw_grid(svg, p):
    svg.open("g", class_="grid", stroke="#E6E6E6", stroke_width=1)
    for t in p.y_ticks:
        svg.leaf("line", x1=p.left, y1=p.y.map(t), x2=p.right, y2=p.y.map(t))
    for t in p.x_ticks:
        svg.leaf("line", x1=p.x.map(t), y1=p.top, x2=p.x.map(t), y2=p.bottom)
    svg.close()


def draw_axes(svg, p, x_title, y_title):
    """Grid, axis lines, ticks with their labels, and the axes' titles."""
    draw_grid(svg, p)
    svg.open("g", class_="axis x", font_size=12, fill=INK)
    for t in p.x_ticks:
        x = p.x.map(t)
        svg.leaf("line", x1=x, y1=p.bottom, x2=x, y2=p.bottom + 5, stroke=INK)
        svg.text("text", "%g" % t, x=x, y=p.bottom + 19, text_anchor="middle")
    svg.leaf("line", x1=p.left, y1=p.bottom, x2=p.right, y2=p.bottom, stroke=INK)
    svg.text("text", x_title, class_="axis-title", x=(p.left + p.right) / 2, y=p.bottom + 40,
             text_anchor="middle", font_size=13)
    svg.close()
    svg.open("g", class_="axis y", font_size=12, fill=INK)
    for t in p.y_ticks:
        y = p.y.map(t)
        svg.leaf("line", x1=p.left - 5, y1=y, x2=p.left, y2=y, stroke=INK)
        svg.text("text", tick_text(t), x=p.left - 8, y=y + 4, text_anchor="end")
    svg.leaf("line", x1=p.left, y1=p.top, x2=p.left, y2=p.bottom, stroke=INK)
    yc, xc = (p.top + p.bottom) / 2, p.left - 50
    svg.text("text", y_title, class_="axis-title", x=xc, y=yc, text_anchor="middle", font_size=13,
             transform="rotate(-90 %s %s)" % (num(xc), num(yc)))
    svg.close()


def draw_marker(svg, shape, x, y, colour, hollow, tip=None, r=4.5):
    """A point's marker of radius about `r`: filled (first setting) or hollow (second), with a tooltip."""
    style = dict(fill="#FFFFFF" if hollow else colour, stroke=colour if hollow else "#FFFFFF",
                 stroke_width=1.5)
    if shape == "circle":
        attrs = dict(class_="point", cx=x, cy=y, r=r, **style)
    elif shape == "square":
        attrs = dict(class_="point", x=x - r * 0.9, y=y - r * 0.9, width=r * 1.8, height=r * 1.8, **style)
    else:
        k = num(r * 1.2)
        d = ("M%s %sl%s %sh%sz" % (num(x), num(y - r * 1.2), k, num(r * 2), num(-r * 2.4)) if shape == "triangle"
             else "M%s %sl%s %sl-%s %sl-%s -%sz" % (num(x), num(y - r * 1.2), k, k, k, k, k, k))
        attrs = dict(class_="point", d=d, **style)
    name = {"circle": "circle", "square": "rect"}.get(shape, "path")
    if tip is None:
        svg.leaf(name, **attrs)
        return
    svg.open(name, **attrs)
    svg.text("title", tip)
    svg.close()


def draw_line(svg, p, line):
    """One series: a polyline through its points in order of GPUs, then the markers."""
    s, pts = line["series"], line["points"]
    svg.open("g", class_="series", data_key=s.key, data_setting=line["setting"], data_label=s.text)
    if len(pts) > 1:
        xy = " ".join("%s,%s" % (num(p.x.map(g)), num(p.y.map(v))) for g, v, _ in pts)
        svg.leaf("polyline", class_="series-line", points=xy, fill="none", stroke=s.colour, stroke_width=s.width,
                 stroke_dasharray=line["dash"])
    prefix = line["setting"] + ": " if line["setting"] else ""
    for g, v, run in pts:
        tip = "%s%g GPUs, %s pods: %s %s" % (prefix, g, run.get("pods", "?"), s.text, value_text(v, s.unit))
        draw_marker(svg, s.shape, p.x.map(g), p.y.map(v), s.colour, line["hollow"], tip, s.size)
    svg.close()


def draw_limit(svg, p, value, label):
    """The client's limit: a dashed horizontal line across the panel, labelled at its right end."""
    y = p.y.map(value)
    svg.open("g", class_="limit", data_value="%g" % value)
    svg.leaf("line", x1=p.left, y1=y, x2=p.right, y2=y, stroke=LIMIT, stroke_width=1.5, stroke_dasharray="7 4")
    svg.text("text", label, x=p.right - 4, y=y - 5, text_anchor="end", font_size=11, fill=LIMIT)
    svg.close()


def draw_panel(svg, p, pid, title, y_title, lines, limits):
    svg.open("g", class_="panel", id=pid, data_x_scale="log2", data_y_scale="log")
    svg.text("text", title, class_="panel-title", x=p.left, y=p.top - 12, font_size=14, font_weight="bold",
             fill=INK)
    draw_axes(svg, p, "GPUs (ranks) in the run, log2 scale", y_title)
    for value, label in limits:
        draw_limit(svg, p, value, label)
    for line in lines:
        draw_line(svg, p, line)
    if not any(line["points"] for line in lines):
        svg.text("text", "no runs with these figures", x=(p.left + p.right) / 2, y=(p.top + p.bottom) / 2,
                 text_anchor="middle", font_size=13, fill=GREY)
    svg.close()


def largest_run_values(series, datasets):
    """': 7.86 s at 1000 GPUs' (or ': A 7.49 s, B 3.1 s at 1000 GPUs'): the largest run's value."""
    parts, gpus = [], set()
    for label, figures in datasets:
        pts = points(figures, series.key)
        if pts:
            parts.append((label + " " if label else "") + value_text(pts[-1][1], series.unit))
            gpus.add(pts[-1][0])
    if not parts:
        return ""
    return ": " + ", ".join(parts) + (" at %g GPUs" % gpus.pop() if len(gpus) == 1 else "")


def build(series_list, datasets):
    """The lines of a panel (each series of each setting) and its legend entries."""
    lines, legend = [], []
    for series in series_list:
        for i, (label, figures) in enumerate(datasets):
            lines.append(dict(series=series, setting=label or "", points=points(figures, series.key),
                              dash=DASHES[i], hollow=i > 0))
        legend.append(dict(kind="series", series=series, text=series.text,
                           detail=largest_run_values(series, datasets)))
    if len(datasets) > 1:
        for i, (label, _) in enumerate(datasets):
            legend.append(dict(kind="style", dash=DASHES[i], hollow=i > 0,
                               text="%s: %s" % (label, "solid, filled" if i == 0 else "dashed, hollow")))
    return lines, legend


def limits_of(datasets):
    """(value, label) of the client's limit qps x 10 per 10 s, once per distinct qps."""
    out = []
    for label, figures in datasets:
        limit = limit_of(figures)
        if limit is None or any(limit == v for v, _ in out):
            continue
        who = label + ": " if label and len({limit_of(f) for _, f in datasets}) > 1 else ""
        out.append((limit, "%sclient limit: qps %g x 10 s = %g" % (who, figures["qps"], limit)))
    return out


def text_width(s, size=12):
    return 0.57 * size * len(s)


def legend_layout(entries, width):
    """Each entry's left x (relative to the legend), row and whether its detail takes a row of its own
    (an entry too wide for one row); rows left-aligned in `width`."""
    at, x, row = [], 0.0, 0
    for e in entries:
        full = e["text"] + e.get("detail", "")
        two = 30 + text_width(full) > width and bool(e.get("detail"))
        w = 30 + text_width(e["text"] if two else full) + 24
        if two and x > 0:
            x, row = 0.0, row + 1
        if x > 0 and x + w > width:
            x, row = 0.0, row + 1
        at.append((x, row, two))
        x, row = (0.0, row + 2) if two else (x + w, row)
    return at


def draw_legend_sample(svg, e, x, y):
    if e["kind"] == "limit":
        svg.leaf("line", x1=x, y1=y, x2=x + 24, y2=y, stroke=LIMIT, stroke_width=1.5, stroke_dasharray="7 4")
        return
    s = e.get("series") or Series("", "", INK, "circle", "")
    svg.leaf("line", x1=x, y1=y, x2=x + 24, y2=y, stroke=s.colour, stroke_width=min(s.width, 3),
             stroke_dasharray=e.get("dash"))
    draw_marker(svg, s.shape, x + 12, y, s.colour, e.get("hollow", False), r=min(s.size, 5))


def draw_legend(svg, entries, left, width, top):
    svg.open("g", class_="legend", font_size=12, fill=INK)
    for e, (x, row, two) in zip(entries, legend_layout(entries, width)):
        x, y = left + x, top + 20 * row
        svg.open("g", class_="legend-entry", data_kind=e["kind"])
        draw_legend_sample(svg, e, x, y)
        if two:
            svg.text("text", e["text"], x=x + 30, y=y + 4)
            svg.text("text", e["detail"].lstrip(": "), x=x + 30, y=y + 24, fill=GREY)
        else:
            svg.text("text", e["text"] + e.get("detail", ""), x=x + 30, y=y + 4)
        svg.close()
    svg.close()


def legend_rows(entries, width):
    return 1 + max([row + two for _, row, two in legend_layout(entries, width)] or [0])


def subtitle(label, figures):
    """The sweep's totals: the operator's CPU, memory, status size and client qps, the fake nodes."""
    f, parts = figures, []
    if "operatorCpuSeconds" in f:
        parts.append("operator CPU %g s" % f["operatorCpuSeconds"])
    if "operatorVmHWMKiB" in f:
        parts.append("peak RSS %.1f MiB" % (f["operatorVmHWMKiB"] / 1024))
    if "statusBytes" in f:
        parts.append("status {:,} bytes".format(f["statusBytes"]))
    if "operatorRequestsTotal" in f:
        parts.append("{:,} requests in all".format(f["operatorRequestsTotal"]))
    if "qps" in f:
        parts.append("client qps %g" % f["qps"])
    if "kwokNodes" in f:
        parts.append("%s kwok nodes x %s GPUs" % (f["kwokNodes"], f.get("gpusPerNode", "?")))
    parts.append("%d runs" % len(f["runs"]) + (", test %g s" % f["testSeconds"] if "testSeconds" in f else ""))
    return (label + ": " if label else "") + " \u00b7 ".join(parts)


def panel_values(lines, limits):
    """The values a panel's y axis covers; a limit with room above it for its label."""
    return [v for line in lines for _, v, _ in line["points"]] + [v * 1.5 for v, _ in limits]


def render(datasets):
    """The whole SVG: title, one subtitle line per setting, panels (a) and (b), their legends."""
    compare = len(datasets) > 1
    times, t_legend = build([TIMES[0], TIMES[2]] if compare else TIMES, datasets)
    reqs, r_legend = build(REQUESTS, datasets)
    limits = limits_of(datasets)
    r_legend += [dict(kind="limit", text=label) for _, label in limits]
    top = 96 + 18 * (len(datasets) - 1)
    bottom = top + 400
    areas = [(85, top, WIDTH / 2 - 30, bottom), (WIDTH / 2 + 85, top, WIDTH - 30, bottom)]
    widths = [a[2] - a[0] + 40 for a in areas]
    rows = max(legend_rows(t_legend, widths[0]), legend_rows(r_legend, widths[1]))
    height = bottom + 66 + 20 * rows
    max_gpus = max([r.get("gpus", 1) for _, f in datasets for r in f["runs"]] or [1])
    title = ("Operator at scale: %s (solid) vs %s (dashed), by run size" % (datasets[0][0], datasets[1][0])
             if compare else "Operator at scale: time to start a run and API requests, by run size")
    svg = Svg(WIDTH, height)
    svg.text("title", title)
    svg.leaf("rect", class_="background", width=WIDTH, height=height, fill="#FFFFFF")
    svg.text("text", title, class_="title", x=20, y=30, font_size=18, font_weight="bold", fill=INK)
    for i, (label, figures) in enumerate(datasets):
        svg.text("text", subtitle(label, figures), class_="subtitle", x=20, y=52 + 18 * i, font_size=12, fill=GREY)
    pa = Panel(areas[0], max_gpus, panel_values(times, []))
    draw_panel(svg, pa, "a", "(a) Seconds from a run's first pod create", "seconds (log scale)", times, [])
    pb = Panel(areas[1], max_gpus, panel_values(reqs, limits))
    draw_panel(svg, pb, "b", "(b) Operator API requests per run and per 10 s", "requests (log scale)", reqs,
               limits)
    draw_legend(svg, t_legend, areas[0][0] - 40, widths[0], bottom + 66)
    draw_legend(svg, r_legend, areas[1][0] - 40, widths[1], bottom + 66)
    return svg.finish()


def main(argv):
    ap = argparse.ArgumentParser(description="Plot tests/scale/sweep1000_e2e.sh's figures as SVG.")
    ap.add_argument("figures", help="FIGURES.json of the sweep")
    ap.add_argument("out", help="OUT.svg")
    ap.add_argument("--compare", metavar="OTHER.json", help="a second sweep's figures, drawn dashed")
    ap.add_argument("--labels", nargs=2, metavar=("A", "B"), help="names of the two settings")
    args = ap.parse_args(argv)
    if args.labels and not args.compare:
        ap.error("--labels needs --compare")
    datasets = [(None, load(args.figures))]
    if args.compare:
        labels = args.labels or [os.path.basename(args.figures), os.path.basename(args.compare)]
        datasets = [(labels[0], datasets[0][1]), (labels[1], load(args.compare))]
    with open(args.out, "w", encoding="utf-8", newline="\n") as f:
        f.write(render(datasets))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
