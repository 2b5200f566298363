#!/usr/bin/env python3
"""How close each instance runs to the machine's peak: the Markdown table of
one or more runs of the program with --torchbench_flops.

    tools/tb flops-table RUN.json [RUN.json ...] --markdown OUT.md
        [--made-with "COMMAND"]... [--title "TITLE"]...

Per run (its context's machine peaks, threads and LibTorch in its head, and
the command that made it, --made-with, one per run in order): every instance
with flops_per_step, sorted by peak_share: step time, GFLOP per step (and
its backward share for Train), achieved GFLOP/s, peak share, the profile's
matmul_conv_share when the run had --torchbench_profile (the step's share in
matrix products, convolutions and attention), the roofline share (each
product at the longer of its FLOPs at the peak and its bytes at the copy
bandwidth, over the step) and the memory-bound share of that roofline time
(the program's roofline_share and memory_bound_share), and what the time goes to
(report_rules.where_time_goes, the HTML report's label). Then the
five instances nearest the peak and the five furthest, and per domain the
median peak share (both without the instances that have no products at all,
named apart). Instances without FLOP counters (errored, or a run
without the flag) are counted in the head, never silently left out.

Exit status: 0 written; 2 bad input (an unreadable file, a run without any
FLOP counter, a --made-with count that does not match the runs).
"""

import argparse
import datetime
import os
import shlex
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from report_rules import where_time_goes  # noqa: E402
from tbench import errors, files, results  # noqa: E402

DTYPE_SHORT = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "float64": "fp64"}


def rows_of(doc):
    """Each instance's row: the median aggregate where there are
    repetitions, else its one iteration row; errored instances apart."""
    by_name, errored = {}, []
    for row in doc.get("benchmarks", []):
        name = results.instance_name(row)
        if row.get("error_occurred"):
            message = str(row.get("error_message", "error")).split(";")[0].split(" (")[0]
            errored.append(f"{name} ({message[:60]})")
            continue
        if row.get("run_type") == "aggregate":
            if row.get("aggregate_name") == "median":
                by_name[name] = row
        elif name not in by_name:
            by_name[name] = row
    return by_name, errored


def domains_of(context):
    out = {}
    for item in str(context.get("torchbench_model_domains", "")).split(","):
        model, _, domain = item.partition(":")
        if model:
            out[model] = domain or "?"
    return out


def peaks_text(context):
    parts = []
    for key, value in context.items():
        if key.startswith("peak_gemm_") and key.endswith("_flops_per_second"):
            dtype = key[len("peak_gemm_"):-len("_flops_per_second")]
            parts.append(f"{DTYPE_SHORT.get(dtype, dtype)} GEMM {float(value) / 1e9:.0f} GFLOP/s")
    copy = context.get("peak_copy_bytes_per_second")
    if copy:
        parts.append(f"copy {float(copy) / 1e9:.1f} GB/s")
    return ", ".join(parts)


def instance_rows(doc):
    """(rows with FLOP counters, names without) of one run."""
    by_name, errored = rows_of(doc)
    context = doc.get("context", {})
    domains = domains_of(context)
    out, missing = [], list(errored)
    for name, row in by_name.items():
        flops = row.get("flops_per_step")
        share = row.get("peak_share")
        if flops is None or share is None:
            missing.append(name)
            continue
        step_ms = results.real_time(row, "ms")
        out.append({
            "name": name,
            "domain": domains.get(name.split("/")[0], "?"),
            "train": "/Train/" in name,
            "step_ms": step_ms,
            "flops": flops,
            "backward": row.get("flops_backward"),
            "rate": row.get("flop_rate", flops / (step_ms / 1e3)),
            "share": share,
            "product": row.get("matmul_conv_share"),
            "roofline": row.get("roofline_share"),
            "memory": row.get("memory_bound_share"),
        })
    out.sort(key=lambda r: r["share"])
    return out, sorted(missing)


def fmt_row(r):
    backward = ""
    if r["train"] and r["backward"] is not None and r["flops"] > 0:
        backward = f" ({100 * r['backward'] / r['flops']:.0f} % bwd)"
    product = f"{100 * r['product']:.0f} %" if r["product"] is not None else "—"
    memory = f"{100 * r['memory']:.0f} %" if r["memory"] is not None else "—"
    roof = f"{100 * r['roofline']:.1f} %" if r["roofline"] is not None else "—"
    goes = where_time_goes(r["flops"], r["step_ms"], r["share"], r["product"],
                           r["memory"]) or "—"
    return (f"| {r['name']} | {r['domain']} | {r['step_ms']:.2f} | {r['flops'] / 1e9:.3g}{backward} | "
            f"{r['rate'] / 1e9:.3g} | {100 * r['share']:.1f} % | {roof} | {memory} | {product} | "
            f"{goes} |")


def section(path, doc, made_with, title=None):
    context = doc.get("context", {})
    rows, missing = instance_rows(doc)
    if not rows:
        raise errors.InputError(f"{path}: no instance has flops_per_step and peak_share "
                              "(run the program with --torchbench_flops)")
    lines = [f"## {title or os.path.basename(path)}", ""]
    if made_with:
        lines += ["```", made_with, "```", ""]
    lines += [
        f"- Machine peaks ({context.get('machine_peaks_source', '?')}, "
        f"{context.get('peak_threads', '?')} threads): {peaks_text(context)}",
        f"- LibTorch {context.get('libtorch_version', '?')}, {context.get('device_name', '?')}, "
        f"commit {context.get('torchbench_git_commit', '?')}, run {context.get('date', '?')}",
        f"- {len(rows)} instances with FLOP counters"
        + (f"; without ({len(missing)}): {', '.join(missing)}" if missing else ""),
        "",
    ]
    # A step without products has no distance to a GEMM peak: named apart.
    none = [r["name"] for r in rows if r["flops"] == 0]
    ranked = [r for r in rows if r["flops"] > 0]
    if none:
        lines += [f"No matrix products ({len(none)}; 0 FLOPs, elementwise or integer "
                  f"work): {', '.join(none)}.", ""]

    def brief(rs):
        return "; ".join(f"{r['name']} {100 * r['share']:.1f} %" for r in rs)
    lines += [f"Nearest the peak: {brief(ranked[::-1][:5])}.", "",
              f"Furthest from it: {brief(ranked[:5])}.", ""]
    by_domain = {}
    for r in ranked:
        by_domain.setdefault(r["domain"], []).append(r["share"])
    lines += ["| domain | instances | median peak share |", "|---|---:|---:|"]
    for domain in sorted(by_domain):
        shares = by_domain[domain]
        lines.append(f"| {domain} | {len(shares)} | {100 * statistics.median(shares):.1f} % |")
    lines += ["", "| instance | domain | step ms | GFLOP/step | GFLOP/s | peak share | "
              "roofline share | memory-bound | products' share of step | time goes to |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    lines += [fmt_row(r) for r in rows]
    return lines + [""]


def main(argv=None):
    p = errors.ArgumentParser(description=__doc__.split("\n\n")[0], tool="flops-table",
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", help="the program's JSON (--benchmark_out) with --torchbench_flops")
    p.add_argument("--markdown", required=True, help="the table to write")
    p.add_argument("--made-with", action="append", default=[],
                   help="the command that made each run, in order (recorded in its section)")
    p.add_argument("--title", action="append", default=[],
                   help="each run's section title, in order (default: its file name)")
    args = p.parse_args(argv)
    try:
        for flag, given in (("--made-with", args.made_with), ("--title", args.title)):
            if given and len(given) != len(args.runs):
                raise errors.InputError(f"{len(given)} {flag} for {len(args.runs)} runs")
        made = args.made_with or [None] * len(args.runs)
        titles = args.title or [None] * len(args.runs)
        today = datetime.date.today().isoformat()
        # The runs' own commands are in their sections: here, the table's.
        shown = [a for a in (argv or sys.argv[1:])]
        shown = [a if not prev.startswith("--made-with") else "…"
                 for prev, a in zip([""] + shown, shown)]
        command = "tools/tb flops-table " + " ".join(
            a if a == "…" else shlex.quote(a) for a in shown)
        lines = ["# FLOPs, achieved FLOP/s and the share of the machine's peak", "",
                 f"Generated {today} by `{command}`.", "",
                 "peak share: the step's FLOPs at the measured GEMM peak of the dtype each ran "
                 "in, over the measured step (1 = as fast as this LibTorch's best large GEMM). "
                 "FLOPs: matrix products, convolutions and attention (FlopCounterMode's formulas; "
                 "lib/program/flop_counter.h says where they differ), forward and backward. "
                 "roofline share: each product call at the longer of its FLOPs at the peak "
                 "and its operands' bytes at the measured copy bandwidth, over the step; "
                 "memory-bound: the part of that roofline time in calls whose bytes are the "
                 "longer (matrix-vector shapes). A roofline share above 100 % means the "
                 "operands came from caches faster than the copy's memory bandwidth (small "
                 "weights reused step after step).", ""]
        for path, made_with, title in zip(args.runs, made, titles):
            try:
                doc = results.load(path)
            except (OSError, ValueError) as e:
                raise errors.InputError(f"{path}: {e}")
            lines += section(path, doc, made_with, title)
        files.write_text(args.markdown, "\n".join(lines))
    except errors.InputError as e:
        print(f"flops-table: {e}", file=sys.stderr)
        return 2
    print(f"flops-table: wrote {args.markdown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
