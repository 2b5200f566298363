"""The regression gate's reports (tools/gate.py): the console table,
Markdown for a CI job page, one self-contained HTML page with strip plots of
every benchmark's repetitions, and JSON."""

import html
import math
import shlex

import numpy as np

from html_page import page
from tbench import program, results

VERDICTS = ["REGRESSION", "IMPROVEMENT", "UNCHANGED", "NOISY", "INSUFFICIENT",
            "MISSING"]

def fmt_time(s):
    if s is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return f"{s / scale:.4g} {unit}"
    return f"{s / 1e-9:.4g} ns"


def fmt_pct(x, sign=True):
    if x is None:
        return "-"
    if math.isinf(x):
        return "+inf%"
    return f"{x:+.1%}" if sign else f"{x:.1%}"


def fmt_counter(v, kind):
    if kind == "memory":
        for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
            if v >= scale:
                return f"{v / scale:.4g} {unit}"
        return f"{v:.0f} B"
    return f"{v:.0f}" if float(v).is_integer() else f"{v:g}"


def sorted_rows(rows):
    def key(r):
        return (r["verdict"] == "MISSING", -(r.get("effect") or 0), r["name"])
    return sorted(rows, key=key)


def table_cells(r):
    ci = r.get("ci")
    delta = fmt_pct(r.get("effect"))
    if ci:
        delta += f" [{ci[0]:+.1%}, {ci[1]:+.1%}]"
    noise = "-" if "noise" not in r else f"{r['noise']:.1%} ({r['noise_source']})"
    return [r["name"], r["metric"], fmt_time(r.get("base")), fmt_time(r.get("cand")), delta,
            f"{r['q']:.2g}" if "q" in r else "-",
            fmt_pct(r.get("threshold"), sign=False), noise,
            r["verdict"] + (f" ({r['reason']})" if r.get("reason") and r["verdict"] != "MISSING" else "")]


HEADERS = ["benchmark", "metric", "base", "cand", "Δ% [95% CI]", "p (corr.)", "threshold",
           "noise", "verdict"]


def counts(result):
    out = {v: 0 for v in VERDICTS}
    for r in result["rows"]:
        out[r["verdict"]] += 1
    return out


def console(result, header_lines):
    lines = list(header_lines)
    rows = [table_cells(r) for r in sorted_rows(result["rows"]) if r["verdict"] != "MISSING"]
    table = [HEADERS] + rows
    widths = [max(len(row[i]) for row in table) for i in range(len(HEADERS) - 1)]
    for row in table:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  " + row[-1])
    changed = [c for c in result["counters"] if c["verdict"] in ("REGRESSION", "IMPROVEMENT")]
    noisy = sorted({c["counter"] for c in result["counters"] if c["verdict"] == "NOISY"})
    for c in changed:
        lines.append(f"{c['name']}  {c['counter']}: {fmt_counter(c['base'], c['kind'])} -> "
                     f"{fmt_counter(c['cand'], c['kind'])}  {c['verdict']}")
    for key in noisy:
        n = sum(1 for c in result["counters"] if c["verdict"] == "NOISY" and c["counter"] == key)
        lines.append(f"{key}: NOISY (not gated) in {n} benchmark(s): it varies between "
                     "repetitions")
    for r in result["rows"]:
        if r["verdict"] == "MISSING":
            lines.append(f"MISSING {r['name']}: {r['reason']}")
    c = counts(result)
    cr = {v: sum(1 for x in result["counters"] if x["verdict"] == v)
          for v in ("REGRESSION", "IMPROVEMENT")}
    lines.append("time: " + ", ".join(f"{n} {v}" for v, n in c.items() if n) +
                 f"; counters: {cr['REGRESSION']} REGRESSION, {cr['IMPROVEMENT']} IMPROVEMENT")
    return "\n".join(lines)


def describe_side(runs):
    commits = sorted({str(r.value("torchbench_git_commit")) for r in runs})
    return ", ".join(commits), ", ".join(r.path for r in runs)


def geomean(result):
    """The geometric mean of the candidate/base ratios, less 1 (a change)."""
    g = results.geomean([r["cand"] / r["base"] for r in result["rows"] if "effect" in r])
    return g - 1 if g is not None else None


def rerun_command(runs, rows):
    flagged = [r["name"] for r in rows if r["verdict"] in ("REGRESSION", "IMPROVEMENT")]
    if not flagged:
        return None
    ctx = runs[0]
    args = [ctx.value("executable") or "build/benchmarks/torchbench"]
    if ctx.value("torchbench_device"):
        args.append(f"--torchbench_device={ctx.value('torchbench_device')}")
    if ctx.value("precision"):
        args.append(f"--torchbench_precision={ctx.value('precision')}")
    args += [program.filter_flag(flagged), "--benchmark_repetitions=9",
             "--benchmark_enable_random_interleaving=true", "--benchmark_out=rerun.json"]
    return shlex.join(args)


def markdown(result, base_runs, cand_runs, args, warns, argv):
    base_commit, base_files = describe_side(base_runs)
    cand_commit, cand_files = describe_side(cand_runs)
    ctx = base_runs[0]
    env = ", ".join(f"{k} `{ctx.value(k)}`" for k in
                    ("torchbench_device", "device_name", "precision", "libtorch_version",
                     "intra_op_threads", "host_name") if ctx.value(k) is not None)
    c = counts(result)
    failed = any(r["verdict"] == "REGRESSION" for r in result["rows"] + result["counters"])
    out = [f"## torchbench-cpp regression gate: {'FAIL' if failed else 'pass'}", "",
           f"- base: `{base_commit}` ({base_files})",
           f"- cand: `{cand_commit}` ({cand_files})",
           f"- environment: {env}",
           f"- rule: REGRESSION iff Δ > threshold and corrected p < {args.alpha}; threshold = "
           f"max({result['floor']:.0%} floor, {args.k:g} × noise); p: two-sided Mann–Whitney U "
           f"over repetitions, {'Benjamini–Hochberg' if args.correction == 'bh' else 'Holm'}-"
           f"corrected; Δ = median(cand)/median(base) − 1, 95% bootstrap CI; NOISY when the "
           f"smallest detectable change > {args.max_detectable:g}%; memory +{args.memory_threshold:g}%;"
           " deterministic counters exact",
           "- verdicts: " + ", ".join(f"{v} {n}" for v, n in c.items() if n),
           ]
    g = geomean(result)
    if g is not None:
        out.append(f"- geometric mean of time ratios: {fmt_pct(g)}")
    for w in warns + result["warnings"]:
        out.append(f"- ⚠ {w}")
    out += ["", "| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    for r in sorted_rows(result["rows"]):
        if r["verdict"] != "MISSING":
            cells = table_cells(r)
            cells[0] = f"`{cells[0]}`"
            if r["verdict"] in ("REGRESSION", "IMPROVEMENT"):
                cells[-1] = f"**{cells[-1]}**"
            out.append("| " + " | ".join(x.replace("|", "\\|") for x in cells) + " |")
    shown = [x for x in result["counters"]
             if x["verdict"] != "UNCHANGED" or x["base"] != x["cand"]]
    out += ["", "### Counters", ""]
    if shown:
        out += ["| benchmark | counter | base | cand | Δ | verdict |", "|---|---|---|---|---|---|"]
        for x in shown:
            delta = (x["cand"] / x["base"] - 1) if x["base"] else (math.inf if x["cand"] else 0)
            out.append(f"| `{x['name']}` | {x['counter']} | {fmt_counter(x['base'], x['kind'])} | "
                       f"{fmt_counter(x['cand'], x['kind'])} | {fmt_pct(delta)} | "
                       f"{x['verdict']}{' (' + x['reason'] + ')' if x.get('reason') else ''} |")
    else:
        n = len(result["counters"])
        out.append(f"No counter changed ({n} compared: deterministic exactly, "
                   f"memory within {args.memory_threshold:g}%).")
    missing = [r for r in result["rows"] if r["verdict"] == "MISSING"]
    if missing:
        out += ["", "### Missing", ""]
        out += [f"- `{r['name']}`: {r['reason']}" for r in missing]
    out += ["", "### Reproduce", "", "```sh", "tools/tb gate " + shlex.join(argv)]
    rerun = rerun_command(base_runs, result["rows"])
    if rerun:
        out += ["# rerun the flagged benchmarks on each build:", rerun]
    out += ["```", ""]
    return "\n".join(out)


def strip_plot(r, width=320, height=46):
    b, c = r.get("base_reps_s") or [], r.get("cand_reps_s") or []
    b, c = [v for v in b if v > 0], [v for v in c if v > 0]
    values = b + c
    if not values:
        return ""
    # Log scale: a repetition 10x slower than the rest stays on the plot
    # without squashing the others.
    lo, hi = min(values) / 1.01, max(values) * 1.01
    x0, x1 = 44, width - 6

    def x(v):
        return x0 + math.log(v / lo) / math.log(hi / lo) * (x1 - x0)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'role="img" aria-label="repetitions of {html.escape(r["name"])}">']
    for label, vals, y, color in (("base", b, 14, "#4a72b0"), ("cand", c, 32, "#d9822b")):
        parts.append(f'<text x="2" y="{y + 4}" font-size="10" fill="#555">{label}</text>')
        for v in vals:
            parts.append(f'<circle cx="{x(v):.1f}" cy="{y}" r="3" fill="{color}" '
                         f'fill-opacity="0.6"><title>{fmt_time(v)}</title></circle>')
        if vals:
            m = x(float(np.median(vals)))
            parts.append(f'<line x1="{m:.1f}" x2="{m:.1f}" y1="{y - 7}" y2="{y + 7}" '
                         f'stroke="{color}" stroke-width="2"/>')
    parts.append(f'<text x="{x0}" y="{height - 1}" font-size="9" fill="#888">{fmt_time(lo)}</text>')
    parts.append(f'<text x="{x1}" y="{height - 1}" font-size="9" fill="#888" '
                 f'text-anchor="end">{fmt_time(hi)} (log)</text></svg>')
    return "".join(parts)


def html_page(result, base_runs, cand_runs, args, warns, argv):
    md = markdown(result, base_runs, cand_runs, args, warns, argv)
    head = md.split("\n\n|")[0]
    colors = {"REGRESSION": "#fbe3e3", "IMPROVEMENT": "#e3f4e3", "NOISY": "#fdf3d9",
              "INSUFFICIENT": "#fdf3d9", "MISSING": "#eee"}
    items = []
    for line in head.splitlines():
        if line.startswith("## "):
            items.append(f"<h1>{html.escape(line[3:])}</h1><ul>")
        elif line.startswith("- "):
            items.append(f"<li>{html.escape(line[2:]).replace('`', '')}</li>")
    items.append("</ul>")
    rows = []
    for r in sorted_rows(result["rows"]):
        cells = table_cells(r)
        if r["verdict"] == "MISSING":
            cells[-1] = f"MISSING ({r['reason']})"
        tds = "".join(f"<td>{html.escape(x)}</td>" for x in cells)
        rows.append(f'<tr style="background:{colors.get(r["verdict"], "#fff")}">{tds}'
                    f"<td>{strip_plot(r)}</td></tr>")
    ths = "".join(f"<th>{html.escape(h)}</th>" for h in HEADERS + ["repetitions"])
    counters = "".join(
        f"<tr><td>{html.escape(x['name'])}</td><td>{html.escape(x['counter'])}</td>"
        f"<td>{fmt_counter(x['base'], x['kind'])}</td><td>{fmt_counter(x['cand'], x['kind'])}</td>"
        f"<td>{html.escape(x['verdict'])}</td></tr>"
        for x in result["counters"] if x["verdict"] != "UNCHANGED" or x["base"] != x["cand"])
    counter_table = (f"<h2>Counters that changed</h2><table><tr><th>benchmark</th><th>counter</th>"
                     f"<th>base</th><th>cand</th><th>verdict</th></tr>{counters}</table>"
                     if counters else "<p>No counter changed.</p>")
    return page("torchbench-cpp regression gate",
                "".join(items) + f"<table><tr>{ths}</tr>{''.join(rows)}</table>" + counter_table
                + f"<h2>Reproduce</h2><pre>{html.escape('tools/tb gate ' + shlex.join(argv))}</pre>")


def json_doc(result, args, warns, exit_code):
    return {"exit_code": exit_code, "floor": result["floor"], "k": args.k,
            "alpha": args.alpha, "correction": args.correction, "warnings": warns,
            "benchmarks": [{k: v for k, v in r.items()} for r in result["rows"]],
            "counters": result["counters"]}
