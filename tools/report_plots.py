"""The plots of the HTML report (tools/report.py), each drawn by matplotlib as
SVG and returned as a string to put inline in the page: text stays text, no
font or image is embedded or linked, and every id is made unique per plot so
that several plots live in one document."""

import html
import io
import itertools
import math
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import (FixedLocator, FuncFormatter, LogLocator,  # noqa: E402
                               MaxNLocator, NullFormatter, NullLocator)

from report_rules import si  # noqa: E402

BLUE, ORANGE, RED, GREEN, GREY = "#3b6ea8", "#d9822b", "#c0392b", "#2e8b57", "#9aa3ad"
STYLE = {
    "svg.fonttype": "none",      # <text>, not glyph outlines
    "svg.hashsalt": "torchbench-report",
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Arial", "Helvetica", "Liberation Sans"],
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.edgecolor": "#8c959f",
    "axes.titlesize": 9.5,
    "axes.titleweight": "bold",
    "axes.labelcolor": "#333333",
    "xtick.color": "#444444",
    "ytick.color": "#444444",
    "grid.color": "#e4e7eb",
    "grid.linewidth": 0.8,
}
# What matplotlib's SVG files say in a <style> of their own, scoped to the plots.
PLOT_CSS = "svg.plot *{stroke-linejoin:round;stroke-linecap:butt}"
_ids = itertools.count(1)


def to_svg(fig, label, titles=None):
    """The figure as an inline <svg> element, closed. titles: {gid: text}, a
    hover title (<title>) for each artist drawn with that gid."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", pad_inches=0.06,
                metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    text = re.sub(r"<metadata>.*?</metadata>\s*", "", text, flags=re.S)
    # matplotlib's <style> would apply to the whole page: PLOT_CSS scopes it.
    text = re.sub(r"<style[^>]*>.*?</style>\s*", "", text, flags=re.S)
    for gid, title in (titles or {}).items():
        text = text.replace(f'<g id="{gid}">', f'<g id="{gid}"><title>{html.escape(title)}'
                            "</title>", 1)
    prefix = f"p{next(_ids)}-"
    text = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}{m.group(1)}"', text)
    text = re.sub(r'url\(#([^)]+)\)', lambda m: f"url(#{prefix}{m.group(1)})", text)
    text = re.sub(r'href="#([^"]+)"', lambda m: f'href="#{prefix}{m.group(1)}"', text)
    # Scales down with the window; role and label for screen readers.
    label = label.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")
    return text.replace("<svg ", f'<svg role="img" aria-label="{label}" class="plot" ', 1)


def _text(s):
    """Plain text for matplotlib: a $ would start mathtext."""
    return str(s).replace("$", r"\$")


def _fig(width, height):
    # Called inside plt.rc_context(STYLE), which must also hold at savefig.
    return plt.figure(figsize=(width, height))


def ratio_bars(items, low=2.0, high=4.0, typical=3.0):
    """items: [(model, train/eval ratio)]: horizontal bars, the typical band shaded."""
    items = [(m, r) for m, r in items if r is not None]
    if not items:
        return ""
    with plt.rc_context(STYLE):
        fig = _fig(6.4, 0.9 + 0.24 * len(items))
        ax = fig.add_subplot()
        names = [_text(m) for m, _ in items][::-1]
        values = [r for _, r in items][::-1]
        colors = [BLUE if low <= r <= high else ORANGE for r in values]
        y = range(len(values))
        # A log axis when one model's ratio would squash the others' bars.
        log = max(values) > 12 or min(values) < 0.5
        base = min(0.5, min(values) / 1.5) if log else 0.0
        ax.barh(y, [v - base for v in values], left=base, color=colors, height=0.65)
        top = max(max(values) * (1.6 if log else 1.15), high * 1.25)
        if log:
            ax.set_xscale("log")
            ticks = [t for t in (0.25, 0.5, 1, 2, 3, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
                     if base <= t <= top]
            ax.xaxis.set_major_locator(FixedLocator(ticks))
            ax.xaxis.set_minor_locator(NullLocator())
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.axvspan(low, high, color="#3b6ea8", alpha=0.07, lw=0)
        ax.axvline(typical, color="#555555", lw=0.8, ls="--")
        ax.text(typical, len(values) - 0.35, " typical ~3×", fontsize=8, color="#555555",
                va="bottom")
        for yi, v in zip(y, values):
            ax.text(v * 1.04 if log else v + top * 0.01, yi, f"{v:.2f}×", va="center",
                    fontsize=8, color="#333333")
        ax.set_yticks(list(y), names)
        ax.set_xlim(base, top)
        ax.set_ylim(-0.6, len(values) - 0.1 + 0.6)
        ax.set_xlabel("train step / eval step, per sample (×" + (", log scale)" if log else ")"))
        ax.grid(axis="x")
        ax.set_axisbelow(True)
        return to_svg(fig, "train/eval time ratio per model")


def gpu_breakdown(items):
    """items: [(instance name, {counter: pct})]: where each step's GPU window goes."""
    parts = [("gpu_active_pct", "kernels", BLUE), ("gpu_memcpy_pct", "memcpy", "#8e6cc0"),
             ("gpu_idle_host_wait_pct", "idle: host wait", ORANGE),
             ("gpu_idle_kernel_wait_pct", "idle: kernel wait", "#e3b34c"),
             ("gpu_idle_other_pct", "idle: other", GREY)]
    if not items:
        return ""
    with plt.rc_context(STYLE):
        fig = _fig(7.2, 1.1 + 0.24 * len(items))
        ax = fig.add_subplot()
        names = [_text(n) for n, _ in items][::-1]
        left = [0.0] * len(items)
        for key, label, color in parts:
            vals = [c.get(key) or 0.0 for _, c in items][::-1]
            ax.barh(range(len(items)), vals, left=left, color=color, height=0.65, label=label)
            left = [a + b for a, b in zip(left, vals)]
        ax.set_yticks(range(len(items)), names)
        ax.set_xlim(0, max(100.0, max(left)))
        ax.set_xlabel("share of the per-step GPU window (%)")
        ax.legend(ncol=5, loc="lower left", bbox_to_anchor=(0, 1.0), frameon=False,
                  fontsize=8, handlelength=1.2, columnspacing=1.0)
        ax.grid(axis="x")
        ax.set_axisbelow(True)
        return to_svg(fig, "GPU step window breakdown per instance")


def _log2_axis(ax, batches):
    ax.set_xscale("log", base=2)
    lo, hi = min(batches), max(batches)
    ticks = [2 ** k for k in range(int(math.floor(math.log2(lo))),
                                   int(math.ceil(math.log2(hi))) + 1)]
    if len(ticks) > 7:
        step = math.ceil(len(ticks) / 7)
        ticks = ticks[::step]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlim(lo / 1.4, hi * 1.4)


def batch_curve(title, probes, knee=None, peak=None):
    """probes: [(batch, samples/s or None, status)]: throughput against batch size."""
    if not probes:
        return ""
    with plt.rc_context(STYLE):
        fig = _fig(3.3, 2.3)
        ax = fig.add_subplot()
        good = [(b, s) for b, s, st in probes if st == "ok" and s is not None]
        bad = [(b, st) for b, s, st in probes if st != "ok" or s is None]
        _log2_axis(ax, [b for b, _, _ in probes])
        top = max([s for _, s in good] or [1.0]) * 1.18
        ax.set_ylim(0, top)
        if good:
            ax.plot([b for b, _ in good], [s for _, s in good], "-o", color=BLUE, ms=3.5,
                    lw=1.4)
        by_batch = dict(good)
        if knee in by_batch:
            ax.axvline(knee, color=GREEN, lw=0.9, ls="--")
            ax.plot([knee], [by_batch[knee]], "D", color=GREEN, ms=6, label=f"knee {knee:g}")
        if peak in by_batch:
            ax.plot([peak], [by_batch[peak]], "*", color=ORANGE, ms=11, label=f"peak {peak:g}")
        for i, (b, status) in enumerate(bad):
            ax.plot([b], [top * 0.03], "x", color=RED, ms=7, mew=1.8,
                    label="failed" if i == 0 else None)
            ax.annotate(status, (b, top * 0.03), textcoords="offset points", xytext=(0, 7),
                        ha="center", va="bottom", rotation=90, fontsize=7.5, color=RED)
        ax.set_title(_text(title), loc="left")
        ax.set_xlabel("batch size (log2)")
        ax.set_ylabel("samples/s")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 10
                                                   else f"{v:g}"))
        ax.grid(True)
        ax.set_axisbelow(True)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="upper left", fontsize=7, frameon=False, handlelength=1.0,
                      borderaxespad=0.2, labelspacing=0.3)
        return to_svg(fig, f"throughput against batch size: {title}")


def compare_bars(items, band=0.05, what="B/A", faster="B"):
    """items: [(instance name, B/A time ratio)]: bars from 1, red slower, green faster."""
    items = [(n, r) for n, r in items if r is not None and r > 0]
    if not items:
        return ""
    with plt.rc_context(STYLE):
        fig = _fig(7.2, 0.9 + 0.22 * len(items))
        ax = fig.add_subplot()
        names = [_text(n) for n, _ in items][::-1]
        values = [r for _, r in items][::-1]
        colors = [RED if r > 1 + band else GREEN if r < 1 - band else GREY for r in values]
        ax.barh(range(len(values)), [v - 1 for v in values], left=1, color=colors, height=0.65)
        ax.axvline(1, color="#333333", lw=0.9)
        ax.axvspan(1 - band, 1 + band, color="#999999", alpha=0.12, lw=0)
        span = max(abs(v - 1) for v in values)
        span = max(span * 1.25, band * 3)
        ax.set_xlim(max(0.0, 1 - span), 1 + span)
        for yi, v in enumerate(values):
            ax.text(v + (span * 0.015 if v >= 1 else -span * 0.015), yi, f"{v:.3f}",
                    va="center", ha="left" if v >= 1 else "right", fontsize=7.5, color="#333333")
        ax.set_yticks(range(len(values)), names)
        ax.set_xlabel(f"step time {what.replace('/', ' / ')} (< 1: {faster} faster; "
                      f"shaded: ±{band:.0%})")
        ax.grid(axis="x")
        ax.set_axisbelow(True)
        return to_svg(fig, f"step time ratio {what} per instance")


def coverage_bars(items, registry):
    """items: [(model, forward, + backward, + optimizer)] (each operator once, in its first
    phase), largest first: operators covered per model, stacked by phase."""
    if not items:
        return ""
    with plt.rc_context(STYLE):
        fig = _fig(7.2, 1.1 + 0.2 * len(items))
        ax = fig.add_subplot()
        names = [_text(m) for m, *_ in items][::-1]
        left = [0] * len(items)
        parts = [(1, "forward", BLUE), (2, "+ backward", ORANGE), (3, "+ optimizer", GREEN)]
        for i, label, color in parts:
            vals = [row[i] for row in items][::-1]
            ax.barh(range(len(items)), vals, left=left, color=color, height=0.7, label=label)
            left = [a + b for a, b in zip(left, vals)]
        top = max(left)
        for yi, v in enumerate(left):
            ax.text(v + top * 0.01, yi, f"{v}", va="center", fontsize=7.5, color="#333333")
        ax.set_yticks(range(len(items)), names)
        ax.set_ylim(-0.6, len(items) - 0.4)
        ax.set_xlim(0, top * 1.1 or 1)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel(f"aten operators reached (of {registry:,} in the registry)")
        ax.legend(ncol=3, loc="lower left", bbox_to_anchor=(0, 1.0), frameon=False,
                  fontsize=8, handlelength=1.2, columnspacing=1.0)
        ax.grid(axis="x")
        ax.set_axisbelow(True)
        return to_svg(fig, "aten operators per model by phase")


def coverage_curve(steps, registry, subset=None):
    """steps: [(model, cumulative operators)] in the order models are added; subset:
    (name, operators), a line to compare with."""
    if not steps:
        return ""
    with plt.rc_context(STYLE):
        fig = _fig(7.2, 3.2)
        ax = fig.add_subplot()
        n = len(steps)
        x = list(range(n + 1))
        y = [0] + [c for _, c in steps]
        ax.plot(x, y, "-o" if n <= 40 else "-", color=BLUE, ms=3, lw=1.5, label="cumulative")
        for xi, (m, c) in list(zip(x[1:], steps))[:5 if n <= 20 else 3]:
            right = xi > 0.6 * n
            ax.annotate(_text(m), (xi, c), textcoords="offset points",
                        xytext=(-5, 4) if right else (5, -3), ha="right" if right else "left",
                        va="bottom" if right else "top", fontsize=7, color="#333333")
        ax.axhline(y[-1], color=BLUE, lw=0.8, ls=":", label=f"suite: {y[-1]:,}")
        if subset and subset[1]:
            ax.axhline(subset[1], color=ORANGE, lw=1.0, ls="--",
                       label=_text(f"{subset[0]}: {subset[1]:,}"))
        ax.set_xlim(0, n + 0.5)
        ax.set_ylim(0, max(y) * 1.12 or 1)
        ax.xaxis.set_major_locator(FixedLocator(x) if n <= 20 else MaxNLocator(integer=True))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("models added, largest marginal gain first")
        ax.set_ylabel("aten operators covered")
        if registry:
            right_axis = ax.secondary_yaxis("right", functions=(lambda v: 100 * v / registry,
                                                                lambda p: p * registry / 100))
            right_axis.set_ylabel("% of the registry's aten operators")
        ax.legend(loc="lower right", fontsize=8, frameon=True, framealpha=0.9,
                  edgecolor="#d0d7de")
        ax.grid(True)
        ax.set_axisbelow(True)
        return to_svg(fig, "cumulative aten operator coverage as models are added")


# A colour per domain (models/<domain>/); a domain not named here takes the
# next of EXTRA_COLORS.
DOMAIN_COLORS = {"vision": BLUE, "nlp": ORANGE, "speech": "#8e6cc0", "recommendation": GREEN,
                 "rl": RED, "science": "#e3b34c", "other": "#4f9a9e", "unknown": GREY}
EXTRA_COLORS = ("#8c564b", "#d46aa8", "#17becf", "#a8a83a", "#34495e")
MODE_MARKERS = {"Train": "o", "Eval": "^"}
PEAK_STYLES = ("--", "-.", ":", (0, (5, 1, 1, 1, 1, 1)))


def domain_colors(domains):
    """{domain: colour} for these domains: DOMAIN_COLORS', else the next extra one."""
    extra = itertools.cycle(EXTRA_COLORS)
    return {d: DOMAIN_COLORS.get(d) or next(extra) for d in sorted(set(domains))}


def _seconds(t):
    """A power of ten of seconds as "1 s", "10 ms", "100 µs", "1 ns"."""
    for factor, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
        if t >= factor * 0.999:
            return f"{t / factor:g} {unit}"
    return f"{t:.0e} s"


def roofline(points, peaks, bandwidth=None):
    """points: [(instance, domain, mode, x, FLOP/s, hover text)]; peaks:
    [(dtype, FLOP/s)]: each instance's achieved FLOP/s (log-log), coloured by
    domain, Train and Eval as distinct markers, a horizontal line per
    measured GEMM peak. x is FLOPs per step, with dotted diagonals of
    constant step time (FLOP/s = FLOPs ÷ seconds); or, with `bandwidth`
    (bytes/s), the products' arithmetic intensity (FLOPs per byte moved),
    with the memory roof FLOP/s = intensity × bandwidth up to each peak: the
    roofline."""
    points = [p for p in points if p[3] and p[3] > 0 and p[4] and p[4] > 0]
    if not points:
        return ""
    if bandwidth:
        return _intensity_roofline(points, peaks, bandwidth)
    colors = domain_colors(p[1] for p in points)
    xs, ys = [p[3] for p in points], [p[4] for p in points]
    tops = [v for _, v in peaks]
    x0, x1 = min(xs) / 3, max(xs) * 3
    y0, y1 = min(ys + tops) / 3, max(ys + tops) * 3
    with plt.rc_context(STYLE):
        fig = _fig(7.2, 4.2)
        ax = fig.add_subplot()
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(x0, x1)
        ax.set_ylim(y0, y1)
        # Constant step time: each decade of seconds from 1 µs whose line
        # crosses the plot, or each third (1 µs, 1 ms, 1 s) when over 6.
        decades = [k for k in range(max(-6, math.ceil(math.log10(x0 / y1))),
                                    math.floor(math.log10(x1 / y0)) + 1)]
        if len(decades) > 6:
            decades = [k for k in decades if k % 3 == 0]
        for k in decades:
            t = 10.0 ** k
            # Labelled where it enters the plot: the bottom edge, else the left
            # one; a line that only cuts a corner is left out.
            x, y = (t * y0, y0) if t * y0 > x0 else (x0, x0 / t)
            if x > x1 / 4 or y > y1 / 4:
                continue
            ax.plot([x0, x1], [x0 / t, x1 / t], color="#b8bfc7", lw=0.7, ls=":", zorder=1)
            ax.annotate(_seconds(t) + "/step", (x, y), textcoords="offset points",
                        xytext=(3, 2), ha="left", va="bottom", fontsize=6.5, color="#8c959f")
        # One line per GEMM peak; labels of peaks within 1.6× of each other
        # (bf16 and fp16, often) share one text, not to overlap.
        groups = []
        for i, (dtype, v) in enumerate(sorted(peaks, key=lambda p: -p[1])):
            ax.axhline(v, color="#333333", lw=1.0, ls=PEAK_STYLES[i % len(PEAK_STYLES)],
                       zorder=2)
            if groups and groups[-1][-1][1] / v < 1.6:
                groups[-1].append((dtype, v))
            else:
                groups.append([(dtype, v)])
        for group in groups:
            text = "; ".join(f"{d} GEMM peak {si(v, 'FLOP/s')}" for d, v in group)
            ax.annotate(_text(text), (x1, group[0][1]), textcoords="offset points",
                        xytext=(-3, 2), ha="right", va="bottom", fontsize=7.5,
                        color="#333333")
        titles = _instances_on_log_axes(ax, points, colors, "FLOPs per step (log)")
        return to_svg(fig, "achieved FLOP/s against FLOPs per step, with the GEMM peaks",
                      titles)


def _instances_on_log_axes(ax, points, colors, xlabel):
    """The instances' points (domain colours, a marker per mode, each with its
    hover id), log axes in SI units, the legend; returns the hover titles."""
    titles = {}
    for n, (name, domain, mode, x, y, hover) in enumerate(points):
        line, = ax.plot([x], [y], MODE_MARKERS.get(mode, "s"), color=colors[domain],
                        ms=5.5, mec="white", mew=0.5, alpha=0.9, zorder=3)
        line.set_gid(f"pt{n}")
        titles[f"pt{n}"] = hover
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(LogLocator(base=10))
        axis.set_minor_formatter(NullFormatter())
        axis.set_major_formatter(FuncFormatter(lambda v, _: si(v)))
    ax.set_xlabel(xlabel)
    ax.set_ylabel("achieved FLOP/s (log)")
    handles = [Line2D([], [], ls="", marker="o", color=c, ms=5.5, label=_text(d))
               for d, c in colors.items()]
    handles += [Line2D([], [], ls="", marker=m, color="#666666", ms=5.5, label=mode)
                for mode, m in MODE_MARKERS.items()
                if any(p[2] == mode for p in points)]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0),
              frameon=False, fontsize=8, handletextpad=0.3, labelspacing=0.35)
    ax.grid(True)
    ax.set_axisbelow(True)
    return titles


def _intensity_roofline(points, peaks, bandwidth):
    colors = domain_colors(p[1] for p in points)
    xs, ys = [p[3] for p in points], [p[4] for p in points]
    tops = [v for _, v in peaks]
    ridge = max(tops) / bandwidth if tops else max(xs)
    x0, x1 = min(xs + [ridge]) / 3, max(xs + [ridge]) * 3
    y0, y1 = min(ys + tops + [x0 * bandwidth]) / 3, max(ys + tops) * 3
    with plt.rc_context(STYLE):
        fig = _fig(7.2, 4.2)
        ax = fig.add_subplot()
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(x0, x1)
        ax.set_ylim(y0, y1)
        for i, (dtype, v) in enumerate(sorted(peaks, key=lambda p: -p[1])):
            knee = v / bandwidth
            ax.plot([knee, x1], [v, v], color="#333333", lw=1.0,
                    ls=PEAK_STYLES[i % len(PEAK_STYLES)], zorder=2)
            ax.annotate(_text(f"{dtype} GEMM peak {si(v, 'FLOP/s')}"), (x1, v),
                        textcoords="offset points", xytext=(-3, 2), ha="right", va="bottom",
                        fontsize=7.5, color="#333333")
        top = max(tops) if tops else y1
        ax.plot([x0, top / bandwidth], [x0 * bandwidth, top], color="#333333", lw=1.0,
                zorder=2)
        ax.annotate(_text(f"copy bandwidth {si(bandwidth, 'B/s')}"), (x0, x0 * bandwidth),
                    textcoords="offset points", xytext=(4, 6), ha="left", va="bottom",
                    fontsize=7.5, color="#333333", rotation=0)
        titles = _instances_on_log_axes(
            ax, points, colors, "arithmetic intensity of the products, FLOPs per byte (log)")
        return to_svg(fig, "the roofline: achieved FLOP/s against the products' arithmetic "
                      "intensity, with the GEMM peaks and the copy bandwidth", titles)
