"""The HTML of the results report (tools/report.py): the summary, one section
per analysis and the legend. Every string that comes from an input file is
escaped here; the plots come from tools/report_plots.py."""

import html
import math
import os
import re
import statistics

import report_plots as plots
from html_page import page
from report_rules import RULES, number, si, where_time_goes

CSS = """
header{margin-bottom:1em}
.facts{display:flex;flex-wrap:wrap;gap:6px 8px;margin:.7em 0}
.fact{border:1px solid var(--line);border-radius:4px;padding:4px 10px;min-width:110px}
.fact b{display:block;font-size:11px;font-weight:500;color:var(--muted)}
.fact span{font-size:14px;font-weight:600}
.fact.alert{border-color:#e0a0a0;background:var(--bad)}
.glance{border-left:4px solid var(--accent);background:var(--head);padding:.5em 1em;
margin:.8em 0;max-width:110ch}
.glance ul{margin:.3em 0;padding-left:1.2em}
nav{margin:.6em 0}nav a{margin-right:1.2em;color:var(--accent);text-decoration:none}
.flag{display:inline-block;background:var(--warn);border:1px solid #e6c36a;border-radius:3px;
padding:0 5px;margin:1px 3px 1px 0;font-size:11.5px;white-space:nowrap}
td.err{color:#9b1c1c;white-space:normal;max-width:70ch}
td.wrap{white-space:normal;max-width:60ch}
.plots{display:flex;flex-wrap:wrap;gap:10px;margin:.4em 0 1em}
.plots figure{margin:0;border:1px solid var(--line);border-radius:4px;padding:4px}
svg.plot{max-width:100%;height:auto;display:block}
.legend{display:flex;flex-wrap:wrap;gap:0 24px;align-items:flex-start}
.legend table{max-width:660px}.legend td{white-space:normal}
.legend tr+tr th{background:none;font-weight:600;vertical-align:top}
th.group{text-align:center}table.fixed th{white-space:normal}
code.nw{white-space:nowrap}table.compare td:first-child{font-family:ui-monospace,monospace;font-size:12px}
.diff{background:var(--warn);font-weight:600}
"""

CONTEXT_KEYS = [("device", "device_name"), ("device kind", "torchbench_device"),
                ("precision", "precision"), ("commit", "torchbench_git_commit"),
                ("LibTorch", "libtorch_version"), ("host", "host_name"), ("date", "date"),
                ("intra-op threads", "intra_op_threads"), ("CUDA", "cuda_runtime_version"),
                ("cuDNN", "cudnn_version"), ("build type", "library_build_type")]


def e(x):
    return html.escape(str(x))


def fnum(v):
    """A readable number: thousands separators, about three significant digits."""
    if v is None:
        return "—"
    a = abs(v)
    if a >= 100:
        return f"{v:,.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return "0" if v == 0 else f"{v:.3g}"


def fcount(v):
    if v is None:
        return "—"
    return f"{v:,.0f}" if float(v).is_integer() else f"{v:,.1f}"


def fmib(v):
    return "—" if v is None else fnum(v / 2**20)


def fpct(v):
    return "—" if v is None else f"{v:.1f} %"


def fratio(v):
    return "—" if v is None else f"{v:.2f}×"


def td(text, cls="num", title=None):
    t = f' title="{e(title)}"' if title else ""
    return f'<td class="{cls}"{t}>{text}</td>'


def table(headers, rows, num=(), cls="", cols=None):
    """headers: HTML; num: the indices of right-aligned (numeric) columns;
    cols: column widths in px (a fixed layout, so that tables line up)."""
    ths = "".join(f'<th{" class=num" if i in num else ""}>{h}</th>'
                  for i, h in enumerate(headers))
    group = "<colgroup>" + "".join(f'<col style="width:{w}px">' for w in cols) + \
        "</colgroup>" if cols else ""
    style = f' style="table-layout:fixed;width:{sum(cols)}px"' if cols else ""
    cls = (cls + " fixed").strip() if cols else cls
    return f'<table class="{cls}"{style}>{group}<tr>{ths}</tr>{"".join(rows)}</table>'


def badge(rule, text=None, mode=None):
    name, why = RULES[rule]
    suffix = f" ({mode})" if mode in ("Train", "Eval") and rule != "eval_sync" else ""
    return f'<span class="flag" title="{e(text or why)}">{e(name + suffix)}</span>'


# --- summary ---------------------------------------------------------------

def fact(label, value, alert=False):
    return (f'<div class="fact{" alert" if alert else ""}"><b>{e(label)}</b>'
            f'<span>{e(value)}</span></div>')


def summary(title, analyses, search_files, domain_of, warnings, coverage=None, versus=None,
            abtest=None):
    files = [r.path for r, _, _ in analyses] + [s.path for s in search_files]
    out = [f"<header><h1>{e(title)}</h1><p class=\"muted\">from "
           + ", ".join(f"<code>{e(os.path.basename(f))}</code>" for f in files) + "</p>"]
    if analyses:
        run = analyses[0][0]
        n_flags = len(analyses[0][2])
        out.append('<div class="facts">' + "".join([
            fact("device", f"{run.ctx('device_name')} ({run.ctx('torchbench_device')})"),
            fact("precision", run.ctx("precision")),
            fact("commit", run.ctx("torchbench_git_commit")),
            fact("LibTorch", run.ctx("libtorch_version")),
            fact("date", run.ctx("date")),
            *instance_facts([r for r, _, _ in analyses]),
            fact("flags", n_flags, alert=False)]) + "</div>")
    if len(analyses) == 2:
        out.append(context_table([r for r, _, _ in analyses]))
    elif search_files and not analyses:
        ctx = search_files[0].context
        out.append('<div class="facts">' + "".join(
            fact(label, ctx.get(key) or "—") for label, key in CONTEXT_KEYS[:5]) + "</div>")
    out.append(glance(analyses, search_files, domain_of, warnings, coverage, versus, abtest))
    out.append("</header>")
    return "".join(out)


def instance_facts(runs):
    if len(runs) == 1:
        return [fact("instances", len(runs[0].instances)),
                fact("errored", len(runs[0].errored), alert=bool(runs[0].errored))]
    errored = [len(r.errored) for r in runs]
    return [fact("instances A / B", " / ".join(str(len(r.instances)) for r in runs)),
            fact("errored A / B", " / ".join(map(str, errored)), alert=any(errored))]


def context_table(runs):
    rows = []
    for label, key in CONTEXT_KEYS + [("file", None)]:
        a, b = ((os.path.basename(r.path) if key is None else r.ctx(key)) for r in runs)
        diff = a != b
        cls = ' class="diff"' if diff and key not in ("date", None) else ""
        rows.append(f"<tr><td>{e(label)}</td><td{cls}>{e(a)}</td><td{cls}>{e(b)}</td></tr>")
    return ("<table><tr><th></th><th>A (first file)</th><th>B (second file)</th></tr>"
            + "".join(rows) + "</table><p class=\"muted\">Highlighted: what differs between "
            "the runs. Sections 1–2 describe run A; section “B against A” compares both.</p>")


def glance(analyses, search_files, domain_of, warnings, coverage=None, versus=None,
           abtest=None):
    items = []
    if analyses:
        run, pairs, flags = analyses[0]
        models = {i.model for i in run.instances}
        domains = {domain_of(m) for m in models}
        items.append(f"{len(run.instances)} instances of {len(models)} models in "
                     f"{len(domains)} domain{'s' if len(domains) != 1 else ''}; "
                     f"{len(pairs)} models ran both Train and Eval.")
        for inst in run.errored:
            items.append(f"<b>errored</b> <code>{e(inst.name)}</code>: {e(inst.error)}")
        if flags:
            counts = {}
            for _, _, rule, _ in flags:
                counts[rule] = counts.get(rule, 0) + 1
            items.append(f"{len(flags)} flag{'s' if len(flags) != 1 else ''}: " + ", ".join(
                f"{badge(rule)}×{n}" for rule, n in counts.items()) + " (see Train against eval)")
        else:
            items.append("No heuristic flag was raised.")
    for sf in search_files:
        items.append(f"Batch search <code>{e(os.path.basename(sf.path))}</code>: "
                     f"{len(sf.searches)} model × mode curves.")
    if len(analyses) == 2:
        rows = compare_rows(analyses[0][0], analyses[1][0])
        ratios = [r["time"] for r in rows if r["time"]]
        if ratios:
            gm = math.exp(sum(map(math.log, ratios)) / len(ratios))
            slower = sum(1 for r in ratios if r > 1.05)
            faster = sum(1 for r in ratios if r < 0.95)
            items.append(f"B against A: geometric mean of step time B/A {gm:.3f} over "
                         f"{len(ratios)} instances; {slower} slower and {faster} faster by "
                         "more than 5 %.")
    if analyses and analyses[0][0].with_flops:
        items.append(peak_glance(analyses[0][0]))
    if coverage is not None:
        items.append(coverage_glance(coverage))
    if versus is not None:
        items.append(versus_glance(versus))
    if abtest is not None:
        items.append(abtest_glance(abtest))
    for w in warnings:
        items.append(f"warning: {e(w)}")
    return ('<div class="glance"><b>At a glance</b><ul>'
            + "".join(f"<li>{i}</li>" for i in items) + "</ul></div>")


# --- 1. results by domain --------------------------------------------------

# Fixed widths: the domains' tables line up one under the other.
DOMAIN_COLS = [230, 60, 80, 130, 110, 160, 90, 120, 140]


def domain_tables(run, domain_of):
    by_domain = {}
    for inst in sorted(run.instances, key=lambda i: i.sort_key()):
        by_domain.setdefault(domain_of(inst.model), []).append(inst)
    headers = ["model", "mode", "batch", "step time (ms)", "samples/s", "peak memory (MiB)",
               "GPU idle", "aten ops/step", "would-sync/step"]
    out = []
    for domain in sorted(by_domain, key=lambda d: (d == "unknown", d)):
        rows = []
        for inst in by_domain[domain]:
            head = (f'<td>{e(inst.model)}</td><td>{e(inst.mode)}</td>'
                    + td(fcount(inst.batch)))
            if not inst.ok:
                rows.append(f'<tr class="bad">{head}<td class="err" colspan="6">'
                            f"error: {e(inst.error or 'no time')}</td></tr>")
                continue
            idle = inst.get("gpu_idle_pct")
            idle_title = None
            if idle is not None:
                idle_title = ("GPU window: busy {} (kernels {}, memcpy {}); idle: host wait {}, "
                              "kernel wait {}, other {}").format(*(fpct(inst.get(k)) for k in (
                                  "gpu_busy_pct", "gpu_active_pct", "gpu_memcpy_pct",
                                  "gpu_idle_host_wait_pct", "gpu_idle_kernel_wait_pct",
                                  "gpu_idle_other_pct")))
            stat = {"median": f"median of {inst.reps} repetitions",
                    "mean": f"mean of {inst.reps} repetitions"}.get(inst.stat, "one run")
            note = f' <span class="muted" title="{e(inst.note)}">†</span>' if inst.note else ""
            rows.append(f"<tr>{head}" + td(fnum(inst.time_ms) + note, title=stat)
                        + td(fnum(inst.samples_per_s())) + td(fmib(inst.get("peak_mem")))
                        + td(fpct(idle), title=idle_title) + td(fcount(inst.ops()))
                        + td(fcount(inst.get("would_sync_per_step"))) + "</tr>")
        n = len(by_domain[domain])
        out.append(f'<h3>{e(domain)} <span class="muted">({n} instance{"s" if n != 1 else ""})'
                   "</span></h3>"
                   + table(headers, rows, num=range(2, 9), cols=DOMAIN_COLS))
    gpu = [(i.name, i.counters) for i in sorted(run.instances, key=lambda i: i.sort_key())
           if i.ok and i.get("gpu_idle_pct") is not None]
    if gpu:
        out.append("<h3>Where the GPU step goes</h3><p>Each bar is one step's GPU window: "
                   "kernels running, copies, and the idle time by cause.</p>"
                   + plots.gpu_breakdown(gpu))
    if any(i.note for i in run.instances):
        out.append('<p class="muted">† some repetitions errored: the value is from the others '
                   "(hover for the message).</p>")
    return "".join(out)


# --- 2. train against eval -------------------------------------------------

def pair_cells(a, b, fmt):
    return f"{fmt(a)} / {fmt(b)}" if a is not None or b is not None else "—"


def train_eval(run, pairs, flags, domain_of, profiles):
    out = ["<p>Models that ran both modes; the time ratio is per sample (step time ÷ batch), "
           "which equals the step ratio when both modes ran the same batch. Flags follow the "
           "rules in the legend; hover a flag for its detail.</p>"]
    by_model = {}
    for model, mode, rule, text in flags:
        by_model.setdefault(model, []).append((rule, mode, f"{mode}: {text}"))
    if not pairs:
        out.append("<p><i>No model ran both Train and Eval in this run.</i></p>")
    else:
        headers = ["model", "domain", "batch T / E", "step T / E (ms)", "time ratio",
                   "op ratio", "kernel ratio", "syncs/step T / E", "GPU idle T / E", "flags"]
        rows = []
        for p in pairs:
            t, v = p.train, p.eval
            (st, src), (sv, _) = t.syncs(), v.syncs()
            sync_title = "host-device syncs" if src == "syncs_per_step" else \
                "would_sync_per_step (CPU proxy: ops that would sync on a GPU)"
            cls = "warn" if any(r in ("ratio_high", "ratio_low") for r, _, _ in
                                by_model.get(p.model, [])) else "num"
            badges = "".join(badge(r, text, mode) for r, mode, text in by_model.get(p.model, []))
            rows.append(f"<tr><td>{e(p.model)}</td><td>{e(p.domain)}</td>"
                        + td(f"{e(t.batch)} / {e(v.batch)}")
                        + td(f"{fnum(t.time_ms)} / {fnum(v.time_ms)}")
                        + td(fratio(p.time_ratio) + ("" if p.same_batch else "*"),
                             cls="num warn" if cls == "warn" else "num")
                        + td(fratio(p.ops_ratio)) + td(fratio(p.kernel_ratio))
                        + td(pair_cells(st, sv, fcount), title=sync_title)
                        + td(pair_cells(t.get("gpu_idle_pct"), v.get("gpu_idle_pct"), fpct))
                        + f'<td class="wrap">{badges}</td></tr>')
        out.append(table(headers, rows, num=range(2, 9)))
        if not all(p.same_batch for p in pairs):
            out.append('<p class="muted">* different batches in Train and Eval: the ratio '
                       "compares time per sample.</p>")
        out.append(plots.ratio_bars([(p.model, p.time_ratio) for p in pairs]))
    if profiles:
        out.append(profile_table(pairs))
    out.append("<h3>Flags</h3>")
    if flags:
        rows = [f"<tr><td>{e(m)}</td><td>{e(mode)}</td><td>{badge(rule)}</td>"
                f'<td class="wrap">{e(text)}</td></tr>' for m, mode, rule, text in flags]
        out.append(table(["model", "mode", "rule", "detail"], rows))
    else:
        out.append("<p>No rule fired.</p>")
    return "".join(out)


def profile_table(pairs):
    rows = []
    for p in pairs:
        if not p.train_only_ops and not p.phases:
            continue
        ops = "; ".join(f"{n} ({fcount(c)} calls, {fnum((us or 0) / 1e3)} ms)"
                        for n, c, us in p.train_only_ops) or "—"
        total = sum(p.phases.values())
        phases = ", ".join(f"{k} {v / total:.0%}" for k, v in p.phases.items()) \
            if total > 0 else "—"
        rows.append(f"<tr><td>{e(p.model)}</td><td class=\"wrap\">{e(ops)}</td>"
                    f"<td>{e(phases)}</td></tr>")
    if not rows:
        return ("<h3>Host ops only in Train (profiles)</h3><p><i>No profile file of these "
                "instances was found (or none had top_ops_host).</i></p>")
    return ("<h3>Host ops only in Train (profiles)</h3><p>The top 3 ops by self host time "
            "in the Train profile that the Eval profile does not list, and the Train step's "
            "host time by phase.</p>"
            + table(["model", "ops only in Train (self host time per profile)",
                     "Train host time by phase"], rows))


# --- against the machine's peak (--torchbench_flops) -------------------------

PEAK_TABLE_LOW, PEAK_TABLE_HIGH = 15, 5  # the table: the lowest peak shares, and the highest
# The context's machine_peaks_source, in words.
PEAK_SOURCES = {"measured": "measured by the run", "flag": "--torchbench_peaks",
                "journal": "the resumed run's journal"}


def share_pct(v):
    return "—" if v is None else fpct(100 * v)


def flops_hover(inst, domain):
    """The hover text of one instance's point: its name and numbers."""
    lines = [inst.name, f"domain {domain}, step {fnum(inst.time_ms)} ms",
             f"{si(inst.get('flops_per_step'), 'FLOP')} per step"]
    parts = [(k, inst.get(f"flops_{k}")) for k in ("forward", "backward", "optimizer")]
    if any(v is not None for k, v in parts[1:]):  # Train: the step by phase
        lines.append("(" + ", ".join(f"{k} {si(v, 'FLOP')}" for k, v in parts
                                     if v is not None) + ")")
    lines.append(f"achieved {si(inst.flop_rate(), 'FLOP/s')}, "
                 f"{share_pct(inst.get('peak_share'))} of peak")
    if inst.get("matmul_conv_share") is not None:
        lines.append(f"GEMM/conv {share_pct(inst.get('matmul_conv_share'))} of the step")
    return "\n".join(lines)


def peak_glance(run):
    insts = [i for i in run.with_flops if i.get("peak_share") is not None]
    if not insts:
        return (f"Against the machine's peak: {len(run.with_flops)} instances counted their "
                "FLOPs (see Against the machine's peak).")
    insts.sort(key=lambda i: i.get("peak_share"))
    mid = statistics.median(i.get("peak_share") for i in insts)
    return (f"Against the machine's peak: median peak share {share_pct(mid)} over "
            f"{len(insts)} instances; lowest <code>{e(insts[0].name)}</code> "
            f"{share_pct(insts[0].get('peak_share'))} (see Against the machine's peak).")


def peak_section(run, domain_of):
    """Each instance's achieved FLOP/s against the machine's measured GEMM
    peaks (a run with --torchbench_flops): the facts, the plot, and the
    instances furthest below peak."""
    insts = sorted(run.with_flops, key=lambda i: i.sort_key())
    peaks = run.peaks
    facts = [fact(f"{short} GEMM peak", si(v, "FLOP/s")) for _, short, v in peaks["gemm"]]
    facts.append(fact("copy bandwidth", si(peaks["copy"], "B/s")))
    if peaks["threads"] is not None:
        facts.append(fact("peak threads", fcount(peaks["threads"])))
    source = peaks["source"] or "—"
    facts.append(fact("peaks from", PEAK_SOURCES.get(source, source)))
    out = ["<p>Each point is one instance: the FLOP/s it achieved (FLOPs per step ÷ step "
           "time) against the arithmetic intensity of its products where the run counted "
           "their bytes (else the FLOPs of one step), both on log scales. The horizontal lines are "
           "the machine's GEMM peak for each dtype as the run's context records them (“peaks "
           "from”); on the FLOPs-per-step axis the dotted diagonals are constant step "
           "times, on the intensity axis the sloped line is the copy bandwidth's roof. Peak "
           "share is the time a "
           "machine running every FLOP of the step at the GEMM peak of its dtype would take, "
           "over the measured step time. Hover a point for its numbers.</p>",
           '<div class="facts">' + "".join(facts) + "</div>"]
    if not peaks["gemm"]:
        out.append("<p><i>The run's context holds no GEMM peak: no peak line.</i></p>")
    # The roofline where every instance has its products' bytes (the program
    # counts them since product_bytes) and the run its bandwidth; else FLOPs
    # per step on the x axis.
    intensity = peaks["copy"] and all(i.get("product_bytes") for i in insts
                                      if i.get("flops_per_step"))
    svg = plots.roofline(
        [(i.name, domain_of(i.model), i.mode,
          ((i.get("flops_per_step") / i.get("product_bytes") if i.get("product_bytes") else 0)
           if intensity else i.get("flops_per_step")), i.flop_rate(),
          flops_hover(i, domain_of(i.model))) for i in insts],
        [(short, v) for _, short, v in peaks["gemm"]],
        bandwidth=peaks["copy"] if intensity else None)
    if svg:
        out.append(f'<div class="plots"><figure>{svg}</figure></div>')
    if intensity:
        out.append('<p class="muted">x: the arithmetic intensity of the step\'s products '
                   "(its FLOPs over the bytes its matrix products, convolutions and "
                   "attention read and write, each operand once: product_bytes); the "
                   "sloped line is the copy bandwidth's roof. Elementwise work is not in "
                   "either, so a point far below both roofs spends its time there; a point "
                   "above the sloped roof takes its operands from caches, faster than "
                   "memory.</p>")
    else:
        out.append('<p class="muted">Arithmetic intensity (FLOPs per byte) is not available: '
                   "the run has no product_bytes, so the x axis is FLOPs per step and the "
                   "copy bandwidth draws no memory roof.</p>")
    ranked = sorted((i for i in insts if i.get("peak_share") is not None),
                    key=lambda i: (i.get("peak_share"), i.name))
    if not ranked:
        out.append("<p><i>No instance has a peak share (peak_share).</i></p>")
        return "".join(out)
    mmc = any(i.get("matmul_conv_share") is not None for i in ranked)
    headers = ["instance", "domain", "step time (ms)", "FLOPs/step", "achieved FLOP/s",
               "peak share"] + (["GEMM/conv share"] if mmc else []) + ["what the time goes to"]
    cut = len(ranked) > PEAK_TABLE_LOW + PEAK_TABLE_HIGH
    shown = ranked[:PEAK_TABLE_LOW] + [None] + ranked[-PEAK_TABLE_HIGH:] if cut else ranked
    rows = []
    for inst in shown:
        if inst is None:
            rows.append(f'<tr><td class="muted" colspan="{len(headers)}">… '
                        f"{len(ranked) - PEAK_TABLE_LOW - PEAK_TABLE_HIGH} more …</td></tr>")
            continue
        share = inst.get("matmul_conv_share")
        what = where_time_goes(inst.get("flops_per_step"), inst.time_ms,
                               inst.get("peak_share"), share, inst.get("memory_bound_share"))
        rows.append(f"<tr><td>{e(inst.name)}</td><td>{e(domain_of(inst.model))}</td>"
                    + td(fnum(inst.time_ms)) + td(si(inst.get("flops_per_step")))
                    + td(si(inst.flop_rate())) + td(share_pct(inst.get("peak_share")))
                    + (td(share_pct(share)) if mmc else "")
                    + f'<td class="wrap">{e(what or "—")}</td></tr>')
    which = (f"the {PEAK_TABLE_LOW} lowest peak shares and the {PEAK_TABLE_HIGH} highest"
             if cut else "every instance")
    out.append(f"<h3>Furthest below peak</h3><p>By peak share, lowest first: {which}. "
               "What the time goes to: a peak share of 50 % or more is near GEMM peak; "
               "under 100 MFLOP in a step under 2 ms is launch/overhead-bound; "
               "half or more of the products' roofline time in calls bound by their bytes at the "
               "copy bandwidth (memory_bound_share), memory-bound products; with the "
               "profile's share of the step in matrix products, convolutions and attention "
               "(--torchbench_profile), under half is non-product work, else the products run "
               "below peak; without it, below peak. 0 FLOPs: no products at all.</p>"
               + table(headers, rows, num=range(2, 7 if mmc else 6)))
    left = len(insts) - len(ranked)
    if left:
        out.append(f'<p class="muted">{left} instance{"s" if left != 1 else ""} without a '
                   "peak share (peak_share) are plotted but not ranked.</p>")
    return "".join(out)


# --- 3. batch searches -----------------------------------------------------

def batch_searches(search_files):
    out = []
    for sf in search_files:
        ctx, st = sf.context, sf.settings
        settings = ", ".join(f"{k} {v}" for k, v in st.items()
                             if isinstance(v, (int, float, str)) and k not in ("device", "torchbench"))
        out.append(f"<h3><code>{e(os.path.basename(sf.path))}</code></h3><p>device "
                   f"{e(ctx.get('device_name') or '—')} ({e(ctx.get('torchbench_device') or '—')}"
                   f"), precision {e(ctx.get('precision') or '—')}"
                   + (f"; settings: {e(settings)}" if settings else "") + "</p>")
        figures = []
        for s in sf.searches:
            probes = [(float(p["batch_size"]), number(p.get("samples_per_s")),
                       str(p.get("status") or "?")) for p in s.probes]
            svg = plots.batch_curve(f"{s.model} {s.mode}", probes,
                                    number(s.summary.get("b_knee")),
                                    number(s.summary.get("b_peak")))
            if svg:
                figures.append(f"<figure>{svg}</figure>")
        if figures:
            out.append('<div class="plots">' + "".join(figures) + "</div>")
        rows = []
        for s in sf.searches:
            m = s.summary
            failed = [p for p in s.probes if p.get("status") != "ok"]
            fail_text = ", ".join(f"{fcount(number(p['batch_size']))}: {p.get('status')}"
                                  for p in failed) or "—"
            rows.append(f"<tr><td>{e(s.model)}</td><td>{e(s.mode)}</td>"
                        + "".join(td(fcount(number(m.get(k))))
                                  for k in ("b_knee", "b_peak"))
                        + td(fnum(number(m.get("peak_samples_per_s"))))
                        + "".join(td(fcount(number(m.get(k)))) for k in ("b_max_ok", "oom_edge"))
                        + f"<td>{e(m.get('stopped_by') or '—')}</td>"
                        + td(str(len(s.probes))) + f'<td class="wrap">{e(fail_text)}</td></tr>')
        out.append(table(["model", "mode", "knee batch", "peak batch", "peak samples/s",
                          "largest ok", "OOM edge", "stopped by", "probes", "failed probes"],
                         rows, num=(2, 3, 4, 5, 6, 8)))
        rows = []
        for device, models in sf.suggested.items():
            for model, sizes in (models.items() if isinstance(models, dict) else []):
                text = ", ".join(f"{k} {v}" for k, v in sizes.items()) \
                    if isinstance(sizes, dict) else str(sizes)
                rows.append(f"<tr><td>{e(device)}</td><td>{e(model)}</td>"
                            f"<td>{e(text)}</td></tr>")
        if rows:
            out.append("<p>Suggested batch sizes:</p>"
                       + table(["device", "model", "batch sizes"], rows))
    return "".join(out)


# --- 4. B against A --------------------------------------------------------

METRICS = [("time", "step time (ms)", lambda i: i.time_ms, fnum, 1),
           ("rate", "samples/s", lambda i: i.samples_per_s(), fnum, -1),
           ("mem", "peak memory (MiB)", lambda i: i.get("peak_mem"), fmib, 1),
           ("ops", "aten ops/step", lambda i: i.ops(), fcount, 1)]


def compare_rows(a, b):
    rows = []
    names = [i.name for i in sorted(a.instances, key=lambda i: i.sort_key())]
    names += [i.name for i in sorted(b.instances, key=lambda i: i.sort_key())
              if i.name not in a.by_name]
    for name in names:
        ia, ib = a.by_name.get(name), b.by_name.get(name)
        row = {"name": name, "a": ia, "b": ib}
        for key, _, get, _, _ in METRICS:
            va = get(ia) if ia is not None and ia.ok else None
            vb = get(ib) if ib is not None and ib.ok else None
            row[key + "_ab"] = (va, vb)
            row[key] = vb / va if va and vb is not None else None
        rows.append(row)
    return rows


def comparison(a, b):
    rows_out = []
    data = compare_rows(a, b)
    for r in data:
        cells = [f"<td>{e(r['name'])}</td>"]
        ia, ib = r["a"], r["b"]
        if ia is None or ib is None:
            status = f"only in {'B' if ia is None else 'A'}"
        else:
            errors = [(side, i.error) for side, i in (("A", ia), ("B", ib)) if not i.ok]
            if len(errors) == 2 and errors[0][1] == errors[1][1]:
                errors = [("A and B", errors[0][1])]
            status = "; ".join(f"errored in {side}: {msg}" for side, msg in errors)
        for key, _, _, fmt, direction in METRICS:
            va, vb = r[key + "_ab"]
            q = r[key]
            cls = "num"
            if q is not None and abs(q - 1) > 0.05:
                cls = "num bad" if (q - 1) * direction > 0 else "num good"
            cells += [td(fmt(va)), td(fmt(vb)),
                      td("—" if q is None else f"{q:.3f}", cls=cls)]
        cells.append(f'<td class="err">{e(status)}</td>' if status else "<td></td>")
        rows_out.append(f"<tr>{''.join(cells)}</tr>")
    head = ('<tr><th rowspan="2">instance</th>'
            + "".join(f'<th colspan="3" class="group">{e(label)}</th>'
                      for _, label, _, _, _ in METRICS)
            + '<th rowspan="2">note</th></tr><tr>'
            + '<th class="num">A</th><th class="num">B</th><th class="num">B/A</th>' * len(METRICS)
            + "</tr>")
    out = ["<p>Instances matched by name. B/A beyond ±5 % is highlighted: red where B is "
           "worse (slower, fewer samples/s, more memory or ops), green where better.</p>",
           f'<table class="compare">{head}{"".join(rows_out)}</table>',
           plots.compare_bars([(r["name"], r["time"]) for r in data])]
    return "".join(out)


# --- operator coverage (tools/coverage.py's analysis) -------------------------

def share(stats):
    """"covered / registry (ratio)" of a coverage stats dict."""
    r = stats.get("ratio")
    return f"{stats['covered']:,} / {stats['registry']:,} ({fpct(None if r is None else 100 * r)})"


def op_list(ops, limit=40):
    names = [o.split("::", 1)[-1] if o.startswith("aten::") else o for o in ops]
    more = f", … {len(names) - limit} more" if len(names) > limit else ""
    return e(", ".join(names[:limit]) + more) if names else "—"


def coverage_section(doc):
    """The coverage of a tools/coverage.py analysis: headline, plots, tables."""
    suite, mlperf = doc["suite"], doc["mlperf"]
    so, sv = suite["operators"], suite["overloads"]
    ratio = mlperf["suite_over_subset"]
    fams = doc["uncovered"]["families"]
    out = ['<div class="facts">' + "".join([
        fact("aten operators covered", share(so)),
        fact("aten overloads covered", share(sv)),
        fact("MLPerf-like subset", share(mlperf["operators"])),
        fact("suite / subset", fratio(ratio["operators"])),
        fact("models", suite["models"]), fact("instances", suite["instances"]),
        fact("uncovered", f"{doc['uncovered']['operators']:,} in {len(fams):,} families"),
        fact("LibTorch", f"{doc['libtorch_version']} ({', '.join(doc['devices'])})")]) + "</div>"]
    absent = f" (absent from these runs: {e(', '.join(mlperf['absent']))})" \
        if mlperf["absent"] else ""
    out.append(
        "<p>The denominator is the registry of <code>c10::Dispatcher</code> in the program "
        "that ran: its <code>aten::</code> operators by name (overloads merged; "
        f"{so['registry']:,}), or by overload ({sv['registry']:,}). An operator counts when a "
        "model dispatches it in any phase, composite operators' parts included; other "
        "namespaces (torchvision, …) are listed apart. The paper counts the Python "
        "<code>torch.*</code> functions a model calls against "
        "<code>torch.overrides.get_testing_overrides()</code> and finds the suite covers 2.3× "
        "what MLPerf covers; here the MLPerf-like subset is "
        f"{e(', '.join(mlperf['models']) or 'no model')}{absent}, and the suite reaches "
        f"{fratio(ratio['operators'])} its aten operators ({fratio(ratio['overloads'])} its "
        "overloads).</p>")
    bars = plots.coverage_bars(
        [(r["model"], r["stacked"]["forward"], r["stacked"]["backward"],
          r["stacked"]["optimizer"]) for r in sorted(
              doc["models"], key=lambda r: (-r["operators"]["covered"], r["model"]))],
        so["registry"])
    curve = plots.coverage_curve(
        [(c["model"], c["covered"]) for c in doc["cumulative"]], so["registry"],
        ("MLPerf-like subset", mlperf["operators"]["covered"]) if mlperf["models"] else None)
    figures = [f"<figure>{svg}</figure>" for svg in (bars, curve) if svg]
    if figures:
        out.append('<div class="plots">' + "".join(figures) + "</div>")
    else:
        out.append("<p><i>No benchmark instance in the coverage files.</i></p>")

    rows = []
    for r in doc["models"]:
        o, t = r["operators"], r["train_only"]
        t_text = "—" if t is None else \
            f"{t['backward_only']} / {t['optimizer_only']} / {t['other']}"
        other = ", ".join(f"{ns} {n}" for ns, n in r["other_namespaces"].items()) or "—"
        rows.append(f"<tr><td>{e(r['model'])}</td><td>{e(r['domain'])}</td>"
                    f"<td>{e('+'.join(r['modes']))}</td>" + td(share(o))
                    + "".join(td(fcount(o["phases"][p])) for p in ("forward", "backward",
                                                                    "optimizer"))
                    + td(f"{o['top_level']:,} / {o['nested_only']:,}")
                    + td(share(r["overloads"])) + td(fcount(len(r["unique"])),
                                                     title=", ".join(r["unique"][:60]) or None)
                    + td(t_text) + f"<td>{e(other)}</td></tr>")
    out.append("<h3>Per model</h3><p>Sorted by unique contribution: the aten operators no other "
               "model reaches (hover for them), the models a suite cannot drop. Forward, backward "
               "and optimizer count the distinct operators each phase reaches (an operator may "
               "be in several); only in Train: backward only / optimizer only / other, for the "
               "models that ran both modes.</p>"
               + table(["model", "domain", "modes", "aten operators", "forward", "backward",
                        "optimizer", "top-level / nested only", "overloads", "unique",
                        "only in Train", "other namespaces"], rows, num=range(3, 11)))
    rows = [f"<tr><td>{e(d['domain'])}</td>" + td(fcount(len(d["models"])))
            + td(share(d["operators"])) + td(share(d["overloads"])) + "</tr>"
            for d in doc["domains"]]
    rows.append("<tr><th>suite</th>" + td(fcount(suite["models"])) + td(share(so))
                + td(share(sv)) + "</tr>")
    out.append("<h3>Per domain</h3>" + table(["domain", "models", "aten operators",
                                              "overloads"], rows, num=(1, 2, 3)))
    t = doc["train_only"]
    n = len(t["models"])
    out.append(f"<h3>Only in Train</h3><p>Over the {n} model{'s' if n != 1 else ''} that ran "
               "both Train and Eval: the aten operators their Train steps reach and their Eval "
               "steps do not.</p>" + table(
                   ["where Train reaches them", "operators", "which"],
                   [f"<tr><td>{label}</td>" + td(fcount(len(t[key])))
                    + f'<td class="wrap">{op_list(t[key])}</td></tr>'
                    for key, label in (("backward_only", "backward only"),
                                       ("optimizer_only", "optimizer only"),
                                       ("other", "forward, or several phases"))], num=(1,)))
    rows = [f"<tr><td>{e(f['family'])}</td>" + td(fcount(f["count"]))
            + f'<td class="wrap">{op_list(f["operators"], 8)}</td></tr>' for f in fams]
    out.append("<h3>What no model reaches</h3><p>The registry's aten operators no model "
               "dispatches, by family (the name without leading or trailing underscores, "
               "<code>_backward</code>/<code>_forward</code>/<code>_out</code> and trailing "
               "digits, up to its first <code>_</code>), largest first: what to benchmark "
               "next.</p>" + (table(["family", "operators", "examples"], rows, num=(1,))
                              if rows else "<p><i>None: every operator is reached.</i></p>"))
    others = doc["registry"]["other_namespaces"]
    if others:
        rows = [f"<tr><td>{e(ns)}</td>"
                + td(f"{v['covered_operators']:,} / {v['operators']:,}")
                + td(f"{v['covered_overloads']:,} / {v['overloads']:,}") + "</tr>"
                for ns, v in sorted(others.items(), key=lambda kv: (-kv[1]["covered_operators"],
                                                                     kv[0]))]
        out.append("<h3>Other namespaces</h3><p>Not in the aten figures.</p>"
                   + table(["namespace", "operators", "overloads"], rows, num=(1, 2)))
    if doc["not_in_registry"]:
        out.append(f'<p class="muted">{len(doc["not_in_registry"]):,} dispatched operators are '
                   f"not in the registry and are not counted: {op_list(doc['not_in_registry'], 20)}"
                   "</p>")
    return "".join(out)


def coverage_glance(doc):
    so, m = doc["suite"]["operators"], doc["mlperf"]
    r = m["suite_over_subset"]["operators"]
    return (f"Operator coverage: {share(so)} of the registry's aten operators; the MLPerf-like "
            f"subset {share(m['operators'])}, the suite {fratio(r)} (see Operator coverage).")


def coverage_page(doc, title="torchbench-cpp operator coverage"):
    """A page of its own (tools/tb coverage --html)."""
    files = ", ".join(f"<code>{e(os.path.basename(f))}</code>" for f in doc.get("inputs", []))
    body = (f"<header><h1>{e(title)}</h1><p class=\"muted\">from {files}</p></header>"
            f'<section id="coverage"><h2>Operator coverage</h2>{coverage_section(doc)}</section>')
    return page(title, body, extra_css=CSS + plots.PLOT_CSS)


# --- legend and page -------------------------------------------------------

LEGEND = [
    ("step time", "real_time in ms per step: the median of the repetitions when the run had "
     "them, else the mean of the iterations; device time on GPUs."),
    ("samples/s", "items_per_second: samples per measured second."),
    ("peak memory", "peak_mem: the allocator's peak over the measured steps; MiB = 2²⁰ bytes."),
    ("GPU idle", "gpu_idle_pct: share of the per-step GPU window with no kernel or copy "
     "running (hover: host wait, kernel wait, other); “—” on CPU."),
    ("aten ops/step", "aten_ops_per_step (--torchbench_profile), else aten_ops "
     "(--torchbench_count_ops)."),
    ("would-sync/step", "would_sync_per_step: ops that would force a host-device sync on a "
     "GPU; the CPU proxy for syncs_per_step."),
    ("FLOPs, FLOP/s", "--torchbench_flops: flops_per_step, the floating-point operations "
     "of one step (k, M, G, T: 10³, 10⁶, 10⁹, 10¹²); achieved FLOP/s, flop_rate, is "
     "flops_per_step ÷ step time."),
    ("peak share", "peak_share: the step's time on an ideal machine at the measured GEMM peak "
     "of each dtype its FLOPs ran in, ÷ the measured step time; GEMM/conv share: "
     "matmul_conv_share, the profile's share of the step in matrix products, "
     "convolutions and attention."),
    ("ratios", "train ÷ eval: time per sample; ops and kernels per step. B/A: run B ÷ run A."),
    ("knee, peak", "batch search: the knee and the highest-throughput batch as the search "
     "reports them; red crosses are failed probes (OOM, error, crash, timeout)."),
]


def flags_nowrap(text):
    """Command-line flags in escaped text as code that does not break at its dashes."""
    return re.sub(r"--[a-z_]+", lambda m: f'<code class="nw">{m.group(0)}</code>', text)


def legend():
    metrics = [f"<tr><th>{e(k)}</th><td>{flags_nowrap(e(v))}</td></tr>" for k, v in LEGEND]
    rules = [f"<tr><th>{badge(rule)}</th><td>{e(why)}</td></tr>"
             for rule, (_, why) in RULES.items()]
    return ('<div class="legend"><table><tr><th colspan="2">metrics</th></tr>'
            + "".join(metrics) + '</table><table><tr><th colspan="2">flag rules (section 2)'
            "</th></tr>" + "".join(rules) + "</table></div>")


# --- C++ against Python (tools/versus_python.py) ----------------------------

def versus_glance(doc):
    parts = [f"{g['threads']} thread{'s' if g['threads'] != 1 else ''} {e(g['mode'])} "
             f"{fratio(g['geomean_ratio'])} ({g['verdicts']['slower']} slower)"
             for g in doc.get("summary", [])]
    return ("C++ step against TorchBench's Python step, geometric mean of C++/Python: "
            + "; ".join(parts) + " (see C++ against Python).")


def versus_section(doc):
    """The C++ step beside the Python reference step: per group the geometric
    means by domain, the ratio bars, the largest Python shares, every row."""
    ctx = doc.get("context", {})
    out = [f"<p>{e(ctx.get('cpu', '?'))}, {e(ctx.get('cores', '?'))} cores; LibTorch "
           f"{e(ctx.get('libtorch_version', '?'))} against torch {e(ctx.get('torch_version', '?'))}"
           f"; warm-up {e(ctx.get('warmup'))}, median of {e(ctx.get('steps'))} steps per round, "
           f"{e(ctx.get('rounds'))} rounds in fresh processes, interleaved. Generated "
           f"{e(ctx.get('date', '?'))} by <code>{e(ctx.get('command', '?'))}</code>. "
           "C++/Python below 1: the C++ step is faster; Python share = (Py − C++) / Py.</p>"]
    rows = []
    for g in doc.get("summary", []):
        v = g["verdicts"]
        domains = ", ".join(f"{e(d)} {fratio(x['geomean_ratio'])} ({x['instances']})"
                            for d, x in g["domains"].items())
        rows.append("<tr>" + td(e(g["threads"])) + td(e(g["mode"]), "") +
                    td(f"{g['paired']} / {g['instances']}") + td(fratio(g["geomean_ratio"])) +
                    td(v["faster"]) + td(v["even"]) + td(v["slower"]) + td(v["missing"]) +
                    td(domains, "wrap") + "</tr>")
    out.append(table(["threads", "mode", "paired / all", "geomean C++/Py", "faster", "even",
                      "slower", "missing", "per domain (instances)"], rows,
                     num=(0, 2, 3, 4, 5, 6, 7)))
    results = doc.get("results", [])
    paired = [r for r in results if r.get("ratio")]
    for g in doc.get("summary", []):
        items = sorted(((r["benchmark"], r["ratio"]) for r in paired
                        if r["threads"] == g["threads"] and r["mode"] == g["mode"]),
                       key=lambda x: x[1])
        if items:
            out.append(f"<h3>{e(g['mode'])}, {e(g['threads'])} thread(s)</h3>")
            out.append('<div class="plots"><figure>' + plots.compare_bars(
                items, band=ctx.get("tolerance", 0.05), what="C++/Python", faster="C++")
                + "</figure></div>")
    shares = sorted(paired, key=lambda r: -r["python_share"])[:5]
    if shares:
        out.append("<h3>Largest Python shares</h3><ul>" + "".join(
            f"<li><code>{e(r['benchmark'])}</code> ({r['threads']} thread(s)): "
            f"{r['python_share']:.0%} of the Python step "
            f"({fnum(r['python']['median_ms'])} ms against {fnum(r['cpp']['median_ms'])} ms)"
            "</li>" for r in shares) + "</ul>")
    rows = []
    for r in results:
        c, p = r.get("cpp", {}), r.get("python", {})
        why = "; ".join(f"{'C++' if s == 'cpp' else 'Python'}: {r[s]['error']}"
                        for s in ("cpp", "python") if "error" in r.get(s, {}))
        spread = (f"{r['ratio_min']:.2f}–{r['ratio_max']:.2f}" if r.get("ratio") else "—")
        rows.append("<tr>" + td(e(r["benchmark"]), "") + td(e(r["threads"])) +
                    td(e(r.get("reference", "")), "") + td(fnum(c.get("median_ms"))) +
                    td(fnum(p.get("median_ms"))) + td(fratio(r.get("ratio"))) + td(spread) +
                    td(fcount(c.get("aten_ops"))) + td(fcount(p.get("aten_ops"))) +
                    td(e(r.get("verdict", "")) + (f": {e(why)}" if why else ""),
                       "err" if why or r.get("verdict") == "slower" else "") + "</tr>")
    out.append(table(["instance", "threads", "reference", "C++ ms", "Python ms", "C++/Py",
                      "rounds", "C++ ops", "Py ops", "verdict"], rows,
                     num=(1, 3, 4, 5, 6, 7, 8)))
    return "".join(out)


# --- two LibTorch builds (tools/abtest.py) -----------------------------------

def abtest_glance(doc):
    sides = " against ".join(f"{s['label']} {e(s.get('version') or s['spec'])}"
                             for s in doc["sides"])
    parts = []
    for t in doc["threads"]:
        rows = t["gate"]["benchmarks"]
        n = {v: sum(1 for r in rows if r["verdict"] == v) for v in ("REGRESSION", "IMPROVEMENT")}
        parts.append(f"{t['threads']} thread(s): {n['REGRESSION']} regression(s), "
                     f"{n['IMPROVEMENT']} improvement(s) in {len(rows)}")
    return f"LibTorch {sides}: " + "; ".join(parts) + " (see LibTorch A/B)."


def abtest_section(doc):
    """Two LibTorch builds: the gate's verdicts per thread count, as bars and
    a table, and per attributed benchmark its operators and micro-benchmarks."""
    m = doc.get("machine", {})
    out = [f"<p>{e(m.get('cpu', '?'))} ({e(m.get('vector', ''))}), {e(m.get('cores', '?'))} "
           "cores. " + "; ".join(
               f"<b>{s['label']}</b> <code>{e(s['spec'])}</code>: LibTorch "
               f"{e(s.get('context', {}).get('libtorch_version', '?'))}, CPU capability "
               f"{e(s.get('context', {}).get('cpu_capability', '?'))}" for s in doc["sides"])
           + f". {doc['settings']['rounds']} rounds per side, interleaved, "
           f"{doc['settings']['repetitions']} repetitions each. Generated {e(doc.get('date'))} "
           f"by <code>{e(doc.get('command'))}</code>.</p>"]
    for t in doc["threads"]:
        g = t["gate"]
        rows = sorted(g["benchmarks"], key=lambda r: -abs(r.get("effect") or 0))
        out.append(f"<h3>{t['threads']} intra-op thread(s)</h3>")
        items = [(r["name"], 1 + r["effect"]) for r in rows if r.get("effect") is not None]
        if items:
            out.append('<div class="plots"><figure>' + plots.compare_bars(
                sorted(items, key=lambda x: x[1]), band=g.get("floor", 0.1), what="B/A",
                faster="B") + "</figure></div>")
        trs = []
        for r in rows:
            ci = r.get("ci") or [None, None]
            trs.append("<tr>" + td(e(r["name"]), "") + td(fnum(1e3 * r["base"]) if r.get("base") else "—")
                       + td(fnum(1e3 * r["cand"]) if r.get("cand") else "—")
                       + td(f"{r['effect']:+.1%}" if r.get("effect") is not None else "—")
                       + td(f"{ci[0]:+.1%} .. {ci[1]:+.1%}" if ci[0] is not None else "—")
                       + td(e(r["verdict"]), "err" if r["verdict"] == "REGRESSION" else "")
                       + "</tr>")
        out.append(table(["benchmark", "A ms", "B ms", "change", "95 % CI", "verdict"], trs,
                         num=(1, 2, 3)))
        for a in t["attribution"]:
            out.append(f"<h4>{e(a['name'])}: {a['effect']:+.1%} ({e(a['why'])})</h4>")
            if "diff" not in a:
                out.append(f"<p>Not attributed: {e(a.get('error', '?'))}</p>")
                continue
            d = a["diff"]
            trs = ["<tr>" + td(e(r["op"]) + (f" ({e(r['status'])})" if r["status"] else ""), "")
                   + td(fnum(r["a_us"])) + td(fnum(r["b_us"])) + td(f"{r['delta_us']:+,.1f}")
                   + td(f"{r['share']:+.0%}" if r["share"] is not None else "—")
                   + td(fnum(r["a_calls"])) + td(fnum(r["b_calls"])) + "</tr>" for r in d["ops"]]
            out.append(table(["operator", "A µs/step", "B µs/step", "change µs", "share of the "
                              "step's change", "A calls", "B calls"], trs, num=(1, 2, 3, 4, 5, 6)))
            notes = [f"{label}: {e(', '.join(d[key][:12]))}" for key, label in
                     (("appeared", "only in B"), ("disappeared", "only in A"),
                      ("calls_changed", "calls per step changed")) if d.get(key)]
            notes += [f"{e(k)}: {v['a']:g} → {v['b']:g}" for k, v in d.get("counters", {}).items()]
            if a.get("alone"):
                notes.insert(0, f"alone in a fresh process: {1e3 * a['alone']['a_s']:.3f} ms → "
                                f"{1e3 * a['alone']['b_s']:.3f} ms ({a['alone']['ratio'] - 1:+.1%})")
            for mb in a.get("microbench", []):
                notes.append(f"micro-benchmark {e(mb['op'])}: not run ({e(mb['error'])})"
                             if "error" in mb else
                             f"micro-benchmark <code>{e(mb['op'] + mb['signature'])}</code>: "
                             f"{mb['a_us']:.1f} µs → {mb['b_us']:.1f} µs ({mb['ratio']:.2f}×): "
                             f"<b>{e(mb['verdict'])}</b>")
            if notes:
                out.append("<ul>" + "".join(f"<li>{n}</li>" for n in notes) + "</ul>")
    return "".join(out)


def render(title, analyses, search_files, domain_of, warnings, profiles=False, coverage=None,
           versus=None, abtest=None):
    sections = []
    if analyses:
        run, pairs, flags = analyses[0]
        sections.append(("domains", "Results by domain", domain_tables(run, domain_of)))
        sections.append(("train-eval", "Train against eval",
                         train_eval(run, pairs, flags, domain_of, profiles)))
        if run.with_flops:
            sections.append(("peak", "Against the machine's peak", peak_section(run, domain_of)))
    if search_files:
        sections.append(("batch", "Throughput against batch size", batch_searches(search_files)))
    if len(analyses) == 2:
        sections.append(("compare", "B against A", comparison(analyses[0][0], analyses[1][0])))
    if coverage is not None:
        sections.append(("coverage", "Operator coverage", coverage_section(coverage)))
    if versus is not None:
        sections.append(("versus", "C++ against Python", versus_section(versus)))
    if abtest is not None:
        sections.append(("abtest", "LibTorch A/B", abtest_section(abtest)))
    sections.append(("legend", "Legend", legend()))
    nav = "<nav>" + "".join(f'<a href="#{sid}">{n}. {e(name)}</a>'
                            for n, (sid, name, _) in enumerate(sections, 1)) + "</nav>"
    body = [summary(title, analyses, search_files, domain_of, warnings, coverage, versus,
                    abtest), nav]
    for n, (sid, name, content) in enumerate(sections, 1):
        body.append(f'<section id="{sid}"><h2>{n}. {e(name)}</h2>{content}</section>')
    return page(title, "\n".join(body), extra_css=CSS + plots.PLOT_CSS)
