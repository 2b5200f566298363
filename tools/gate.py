#!/usr/bin/env python3
"""The regression gate: compares two sets of torchbench-cpp runs (Google
Benchmark JSON) and fails on regressions that are larger than the noise.

  gate.py BASE.json CAND.json [options]
  gate.py --base A1.json A2.json --cand B1.json B2.json [options]
  gate.py --calibrate RUN1.json RUN2.json RUN3.json ... -o noise.json

Per benchmark (name) it uses the raw repetitions (run_type "iteration";
errored or skipped rows and Google Benchmark's aggregate rows are dropped,
aggregates are recomputed), pooled over every file of a side:

- time (real_time: the device time on GPUs, steady clock on CPU): effect =
  median(cand) / median(base) - 1, a 95 % bootstrap interval of that ratio
  (2000 resamples, fixed seed per name), a two-sided Mann-Whitney U test,
  p-values corrected over the benchmarks compared (Benjamini-Hochberg by
  default, --correction holm);
  threshold = max(floor, k x noise), noise = the calibrated A/A spread (aa95)
  or, without a noise file, the larger within-run robust CV of the two sides;
  REGRESSION iff effect > threshold and corrected p < alpha, IMPROVEMENT
  symmetric, UNCHANGED otherwise; NOISY when the smallest change the runs can
  show (max of threshold and the minimum detectable effect) exceeds
  --max-detectable, INSUFFICIENT when a side has too few repetitions for the
  test to reach alpha; MISSING when a side has no result;
- deterministic counters (aten_ops, optimizer_ops, params, *_per_step...):
  exact, any increase is a regression;
- peak memory counters (peak_mem, peak_host_rss): an increase of more than
  --memory-threshold (5 %) of the median is a regression.

Exit status: 0 pass (improvements, NOISY, INSUFFICIENT and MISSING included),
1 at least one regression (or MISSING with --strict), 2 bad input or usage
(unreadable or non-Google-Benchmark JSON, no common benchmark, a context
mismatch without --allow-env-mismatch). --compare-key libtorch_version lets
the sides differ in that key (two LibTorch builds, tools/tb abtest).
"""

import argparse
import datetime
import itertools
import json
import math
import os
import re
import sys
import warnings
import zlib

import numpy as np
from scipy import stats

from tbench import files, results
from tbench.errors import InputError
from gate_report import (console, describe_side, html_page, json_doc,
                         markdown)

# Google Benchmark's own numeric fields; every other number in a row is a
# user counter.
GB_FIELDS = {"family_index", "per_family_instance_index", "repetitions",
             "repetition_index", "threads", "iterations", "real_time",
             "cpu_time"}
# Counters that are rates or repeat the time: not gated on their own.
DERIVED_COUNTERS = {"items_per_second", "bytes_per_second", "wall_time",
                    "batch_size"}
DETERMINISTIC_RE = re.compile(
    r"^(aten_ops|optimizer_ops|params)$|_ops$|_per_step$|^(syncs|kernels|memcpy)")
MEMORY_RE = re.compile(r"^peak_(mem|host_rss)$|peak.*(mem|rss)|(mem|rss).*peak")

# Context keys that must agree between every input file: a difference means
# the runs measured different things. torchbench_git_commit (the harness
# build) is expected to differ between base and candidate.
REQUIRED_KEYS = ["torchbench_device", "device_name", "precision",
                 "libtorch_version", "intra_op_threads", "channels_last",
                 "optimizer_path", "seed"]
# Worth a warning, not a refusal.
WARN_KEYS = ["host_name", "num_cpus", "inter_op_threads", "warmup_steps",
             "cuda_runtime_version", "cudnn_version", "library_build_type",
             "cpu_memory_counter", "timer", "cpu_capability"]
FINGERPRINT_KEYS = ["host_name", "num_cpus", "mhz_per_cpu", "torchbench_device",
                    "device_name", "precision", "libtorch_version",
                    "intra_op_threads", "inter_op_threads",
                    "cuda_runtime_version", "cudnn_version"]

Z_POWER = 0.8416  # z of 80 % power
MEDIAN_EFFICIENCY = math.sqrt(math.pi / 2)  # sd(median) / sd(mean), normal
BOOTSTRAP = 2000
# A memory counter is gated only when its repetitions agree within this.
MEMORY_STABLE = 0.01


# ---------------------------------------------------------------- reading

class Run:
    """One Google Benchmark JSON file: its context and, per benchmark name,
    the raw repetitions that ran (times in seconds, counters)."""

    def __init__(self, path):
        self.path = path
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise InputError(f"{path}: cannot read: {e.strerror}") from None
        except UnicodeDecodeError:
            raise InputError(f"{path}: not Google Benchmark JSON (not UTF-8 text)") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise InputError(f"{path}: corrupt JSON (line {e.lineno}, column {e.colno}: "
                             f"{e.msg}); a run cut short? rerun it or resume its journal") from None
        if (not isinstance(data, dict) or not isinstance(data.get("context"), dict)
                or not isinstance(data.get("benchmarks"), list)):
            raise InputError(f"{path}: not Google Benchmark JSON (no 'context' object and "
                             "'benchmarks' list; write runs with --benchmark_out=FILE "
                             "--benchmark_out_format=json)")
        self.context = data["context"]
        self.times = {}      # name -> [seconds per step, one per repetition]
        self.counters = {}   # name -> {counter -> [values]}
        self.errors = {}     # name -> error message
        self.order = []      # names in file order
        self.aggregates_only = False
        for i, row in enumerate(data["benchmarks"]):
            if not isinstance(row, dict) or not isinstance(row.get("name"), str):
                raise InputError(f"{path}: not Google Benchmark JSON (benchmarks[{i}] has no name)")
            name = row.get("run_name") or row["name"]
            if name not in self.times and name not in self.errors:
                self.order.append(name)
            if row.get("error_occurred") or row.get("skipped"):
                self.errors.setdefault(name, str(row.get("error_message") or "skipped"))
                continue
            if row.get("run_type", "iteration") != "iteration":
                self.aggregates_only = True  # reset below when reps exist
                continue
            unit = row.get("time_unit", "ns")
            value = row.get("real_time")
            if results.scale(unit, "s") is None or not isinstance(value, (int, float)):
                raise InputError(f"{path}: not Google Benchmark JSON ({row['name']}: "
                                 f"real_time {value!r} in unit {unit!r})")
            if not math.isfinite(value) or value <= 0:
                self.errors.setdefault(name, f"real_time {value!r}")
                continue
            self.times.setdefault(name, []).append(value * results.scale(unit, "s"))
            counters = self.counters.setdefault(name, {})
            for key, v in row.items():
                if (key not in GB_FIELDS and isinstance(v, (int, float))
                        and not isinstance(v, bool)):
                    counters.setdefault(key, []).append(float(v))
        if self.times:
            self.aggregates_only = False

    def value(self, key):
        v = self.context.get(key)
        return None if v is None else str(v)


def load_runs(paths):
    return [Run(p) for p in paths]


# ---------------------------------------------------------------- context

def context_value(run, key):
    v = run.value(key)
    if key == "torchbench_device" and v is not None:
        return v.split(":")[0]  # the kind: cuda:0 and cuda:1 compare
    return v


def check_contexts(sides, allow, compared=()):
    """sides: [(label, [Run])]. Returns warnings; raises InputError on a
    mismatch of a required key unless allow. `compared`: keys whose values
    are what the comparison is about (libtorch_version in tools/tb abtest):
    they may differ between the sides, not within one."""
    runs = [(label, r) for label, rs in sides for r in rs]
    errors, notes = [], []
    for key in compared:
        for label, rs in sides:
            values = {context_value(r, key) for r in rs}
            if len(values) > 1:
                errors.append(f"{key} differs within the {label} runs: "
                              + ", ".join(repr(v) for v in sorted(values, key=str)))
    for keys, sink in ((REQUIRED_KEYS, errors), (WARN_KEYS, notes)):
        for key in keys:
            if key in compared:
                continue
            values = {}
            for label, r in runs:
                values.setdefault(context_value(r, key), []).append(f"{r.path} ({label})")
            if len(values) > 1:
                parts = "; ".join(f"{'absent' if v is None else repr(v)} in {', '.join(files)}"
                                  for v, files in values.items())
                sink.append(f"{key} differs: {parts}")
    if errors and not allow:
        raise InputError("the runs measured different setups: " + " | ".join(errors) +
                         " (a different torchbench_git_commit is expected; "
                         "--allow-env-mismatch compares anyway)")
    warns = [f"context mismatch allowed (--allow-env-mismatch): {e}" for e in errors]
    warns += [f"note: {n}" for n in notes]
    # Google Benchmark records the 1-minute load average at the start of a
    # run: very different loads mean another job shared the machine.
    loads = []
    for label, r in runs:
        la = r.context.get("load_avg")
        if isinstance(la, list) and la and isinstance(la[0], (int, float)):
            loads.append((la[0], f"{r.path} ({label})"))
    if loads:
        lo, hi = min(loads), max(loads)
        if hi[0] - lo[0] > 1.0 and hi[0] > 2 * lo[0]:
            warns.append(f"load average at the start differed: {lo[0]:.2f} in {lo[1]}, "
                         f"{hi[0]:.2f} in {hi[1]}: another job shared the machine; "
                         "interleave base and cand runs")
    return warns


def fingerprint(run):
    return {k: run.value(k) for k in FINGERPRINT_KEYS if run.value(k) is not None}


# ---------------------------------------------------------------- statistics

def robust_cv(x):
    x = np.asarray(x, float)
    med = np.median(x)
    return float(1.4826 * np.median(np.abs(x - med)) / med) if med > 0 else 0.0


def classic_cv(x):
    x = np.asarray(x, float)
    return float(np.std(x, ddof=1) / np.mean(x)) if len(x) > 1 and np.mean(x) > 0 else 0.0


def min_attainable_p(n1, n2):
    """Smallest two-sided exact Mann-Whitney p for sample sizes n1, n2."""
    return min(1.0, 2.0 / math.comb(n1 + n2, n1))


def mann_whitney_p(base, cand):
    allv = np.concatenate([base, cand])
    if np.all(allv == allv[0]):
        return 1.0
    ties = len(np.unique(allv)) < len(allv)
    method = "exact" if not ties and len(base) * len(cand) <= 2500 else "asymptotic"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = stats.mannwhitneyu(cand, base, alternative="two-sided", method=method).pvalue
    return 1.0 if not np.isfinite(p) else float(p)


def ratio_ci(name, base, cand, seed):
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    b = np.asarray(base)[rng.integers(0, len(base), (BOOTSTRAP, len(base)))]
    c = np.asarray(cand)[rng.integers(0, len(cand), (BOOTSTRAP, len(cand)))]
    ratios = np.median(c, axis=1) / np.median(b, axis=1)
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    return float(lo) - 1, float(hi) - 1


def correct(pvalues, method):
    p = np.asarray(pvalues, float)
    if len(p) == 0:
        return p
    if method == "holm":
        order = np.argsort(p)
        adjusted = np.empty_like(p)
        running = 0.0
        for rank, i in enumerate(order):
            running = max(running, (len(p) - rank) * p[i])
            adjusted[i] = min(1.0, running)
        return adjusted
    return stats.false_discovery_control(p, method="bh")


def spread_of(values):
    """(max - min) / min of a counter's repetitions."""
    lo, hi = min(values), max(values)
    return (hi - lo) / lo if lo > 0 else (0.0 if hi == lo else math.inf)


def percentile95(values):
    return float(np.percentile(np.asarray(values, float), 95)) if values else 0.0


# ---------------------------------------------------------------- calibration

def calibrate(runs, out_path, metric_note):
    if len(runs) < 3:
        raise InputError(f"--calibrate needs at least 3 runs of the same build, got {len(runs)}")
    warns = check_contexts([("calibration", runs)], allow=False)
    commits = {r.value("torchbench_git_commit") for r in runs}
    if len(commits) > 1:
        warns.append(f"calibration runs come from different builds {sorted(map(str, commits))}: "
                     "calibrate on repeated runs of one build")
    names = []
    for r in runs:
        names += [n for n in r.order if n not in names]
    benchmarks = {}
    for name in names:
        per_run = [r.times[name] for r in runs if len(r.times.get(name, [])) >= 2]
        if len(per_run) < 3:
            warns.append(f"{name}: in fewer than 3 runs with >= 2 repetitions; not calibrated")
            continue
        medians = [float(np.median(t)) for t in per_run]
        pairs = [max(a, b) / min(a, b) - 1 for a, b in itertools.combinations(medians, 2)]
        benchmarks[name] = {
            "runs": len(per_run),
            "repetitions": [len(t) for t in per_run],
            "cv": float(np.median([classic_cv(t) for t in per_run])),
            "robust_cv": float(np.median([robust_cv(t) for t in per_run])),
            "aa95": percentile95(pairs),
            "run_medians_s": medians,
        }
    if not benchmarks:
        raise InputError("--calibrate: no benchmark has repetitions in 3 or more runs")
    doc = {
        "format": "torchbench-gate-noise/1",
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "metric": metric_note,
        "runs": [r.path for r in runs],
        "torchbench_git_commit": sorted(map(str, commits)),
        "fingerprint": fingerprint(runs[0]),
        "benchmarks": benchmarks,
    }
    files.write_json(out_path, doc, indent=1)
    return doc, warns


def load_noise(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise InputError(f"{path}: cannot read the noise file: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: corrupt noise file (line {e.lineno}, column {e.colno}: "
                         f"{e.msg}); recreate it with --calibrate") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: corrupt noise file (not UTF-8 text); recreate it with "
                         "--calibrate") from None
    if (not isinstance(doc, dict) or doc.get("format") != "torchbench-gate-noise/1"
            or not isinstance(doc.get("benchmarks"), dict)):
        raise InputError(f"{path}: not a noise file of tools/tb gate --calibrate")
    return doc


# ---------------------------------------------------------------- comparison

def pool(runs):
    times, counters, errors, order = {}, {}, {}, []
    for r in runs:
        for name in r.order:
            if name not in order:
                order.append(name)
        for name, t in r.times.items():
            times.setdefault(name, []).extend(t)
        for name, cs in r.counters.items():
            for key, values in cs.items():
                counters.setdefault(name, {}).setdefault(key, []).extend(values)
        for name, msg in r.errors.items():
            errors.setdefault(name, msg)
    return times, counters, errors, order


def compare(base_runs, cand_runs, args, noise_doc):
    bt, bc, be, border = pool(base_runs)
    ct, cc, ce, corder = pool(cand_runs)
    names = border + [n for n in corder if n not in border]
    common = [n for n in names if bt.get(n) and ct.get(n)]
    if not common:
        raise InputError(
            "no benchmark has results on both sides: base (" + ", ".join(r.path for r in base_runs) +
            f") has {len([n for n in border if bt.get(n)])}, cand (" +
            ", ".join(r.path for r in cand_runs) + f") has {len([n for n in corder if ct.get(n)])}"
            ", none in common")
    device = context_value(base_runs[0], "torchbench_device") or "unknown"
    floor = args.floor / 100 if args.floor is not None else (0.05 if device == "cuda" else 0.10)
    calibrated = noise_doc["benchmarks"] if noise_doc else {}
    z = stats.norm.ppf(1 - args.alpha / 2) + Z_POWER

    rows = []
    for name in names:
        b, c = bt.get(name, []), ct.get(name, [])
        row = {"name": name, "metric": "real_time", "n_base": len(b), "n_cand": len(c),
               "base_reps_s": b, "cand_reps_s": c}
        rows.append(row)
        if not b or not c:
            side, errs = ("base", be) if not b else ("cand", ce)
            row["verdict"] = "MISSING"
            row["reason"] = (f"errored in {side}: {errs[name]}" if name in errs
                             else f"not in {side}")
            continue
        b, c = np.asarray(b), np.asarray(c)
        mb, mc = float(np.median(b)), float(np.median(c))
        cv_b, cv_c = robust_cv(b), robust_cv(c)
        cv = max(cv_b, cv_c)
        if name in calibrated:
            noise, source = float(calibrated[name]["aa95"]), "aa95"
        else:
            noise, source = cv, "cv"
        threshold = max(floor, args.k * noise)
        mde = z * MEDIAN_EFFICIENCY * cv * math.sqrt(1 / len(b) + 1 / len(c))
        row.update(base=mb, cand=mc, effect=mc / mb - 1, cv_base=cv_b, cv_cand=cv_c,
                   noise=noise, noise_source=source, threshold=threshold, mde=mde)
        if min(len(b), len(c)) < 3 or min_attainable_p(len(b), len(c)) >= args.alpha:
            row["verdict"] = "INSUFFICIENT"
            row["reason"] = (f"{len(b)} base / {len(c)} cand repetitions: the U test cannot "
                             f"reach p < {args.alpha}")
            continue
        row["ci"] = ratio_ci(name, b, c, args.seed)
        row["p"] = mann_whitney_p(b, c)

    tested = [r for r in rows if "p" in r]
    for r, q in zip(tested, correct([r["p"] for r in tested], args.correction)):
        r["q"] = float(q)
        detectable = max(r["threshold"], r["mde"])
        if detectable > args.max_detectable / 100:
            r["verdict"] = "NOISY"
            r["reason"] = (f"smallest detectable change {detectable:.1%} > "
                           f"{args.max_detectable:g}%")
        elif r["effect"] > r["threshold"] and q < args.alpha:
            r["verdict"] = "REGRESSION"
        elif r["effect"] < -r["threshold"] and q < args.alpha:
            r["verdict"] = "IMPROVEMENT"
        else:
            r["verdict"] = "UNCHANGED"
            if q < args.alpha:
                r["reason"] = "significant, within the threshold"

    counter_rows = []
    for name in common:
        keys = sorted(set(bc.get(name, {})) & set(cc.get(name, {})))
        for key in keys:
            if key in DERIVED_COUNTERS:
                continue
            vb, vc = bc[name][key], cc[name][key]
            if DETERMINISTIC_RE.search(key):
                kind = "exact"
                if len(set(vb)) > 1 or len(set(vc)) > 1:
                    counter_rows.append({"name": name, "counter": key, "kind": kind,
                                         "base": max(vb), "cand": max(vc), "verdict": "NOISY",
                                         "reason": "varies between repetitions: not gated"})
                    continue
                x, y = vb[0], vc[0]
                verdict = "REGRESSION" if y > x else "IMPROVEMENT" if y < x else "UNCHANGED"
            elif MEMORY_RE.search(key):
                kind = "memory"
                x, y = float(np.median(vb)), float(np.median(vc))
                change = (y / x - 1) if x > 0 else (math.inf if y > 0 else 0.0)
                limit = args.memory_threshold / 100
                # A peak that moves between repetitions of one run measures
                # the process (what earlier instances left behind), not the
                # benchmark: reported, not gated.
                spread = max(spread_of(vb), spread_of(vc))
                if spread > MEMORY_STABLE:
                    counter_rows.append({"name": name, "counter": key, "kind": kind, "base": x,
                                         "cand": y, "verdict": "NOISY",
                                         "reason": f"varies {spread:.1%} between repetitions: "
                                                   "not gated"})
                    continue
                verdict = ("REGRESSION" if change > limit else
                           "IMPROVEMENT" if change < -limit else "UNCHANGED")
            else:
                continue
            counter_rows.append({"name": name, "counter": key, "kind": kind, "base": x,
                                 "cand": y, "verdict": verdict})

    noise_warn = []
    if not noise_doc and (len(base_runs) == 1 or len(cand_runs) == 1):
        noise_warn.append("no noise file and one run on a side: thresholds see only the spread "
                          "within a run, not between runs (another job slowing a whole run "
                          "looks like a regression); calibrate (--noise) or give several "
                          "interleaved runs per side")
    if noise_doc:
        fp = fingerprint(cand_runs[0])
        diff = [f"{k}: {noise_doc['fingerprint'].get(k)!r} (noise file) vs {fp.get(k)!r}"
                for k in sorted(set(fp) | set(noise_doc.get("fingerprint", {})))
                if noise_doc["fingerprint"].get(k) != fp.get(k)]
        if diff:
            noise_warn.append("the noise file was calibrated on another machine or setup (" +
                              "; ".join(diff) + "): its thresholds may not fit these runs")
    return {"rows": rows, "counters": counter_rows, "floor": floor, "device": device,
            "warnings": noise_warn}


# ---------------------------------------------------------------- main

def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="tools/tb gate", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Exit status: 0 pass, 1 regression, 2 bad input or usage.")
    p.add_argument("files", nargs="*", metavar="BASE.json CAND.json")
    p.add_argument("--base", nargs="+", default=[], metavar="JSON",
                   help="base runs (one or more files; repetitions are pooled per name)")
    p.add_argument("--cand", nargs="+", default=[], metavar="JSON", help="candidate runs")
    p.add_argument("--calibrate", nargs="+", metavar="JSON",
                   help="write a noise file from >= 3 repeated runs of one build (-o)")
    p.add_argument("-o", "--output", help="the noise file --calibrate writes")
    p.add_argument("--noise", help="noise file from --calibrate")
    p.add_argument("--floor", type=float, help="threshold floor in %% (default 5 on cuda, 10 on cpu)")
    p.add_argument("--k", type=float, default=2.0,
                   help="threshold = max(floor, K x noise) (default 2)")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    p.add_argument("--correction", choices=["bh", "holm"], default="bh",
                   help="multiple-comparison correction: Benjamini-Hochberg (default) or Holm")
    p.add_argument("--max-detectable", type=float, default=25.0,
                   help="NOISY above this smallest detectable change, in %% (default 25)")
    p.add_argument("--memory-threshold", type=float, default=5.0,
                   help="peak memory increase that fails, in %% (default 5)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--strict", action="store_true", help="MISSING benchmarks fail too")
    p.add_argument("--allow-env-mismatch", action="store_true",
                   help="compare runs whose contexts differ (warn instead of exit 2)")
    p.add_argument("--compare-key", action="append", default=[], metavar="KEY",
                   help="a context key the sides are meant to differ in (e.g. "
                        "libtorch_version for two LibTorch builds); repeatable")
    p.add_argument("--markdown", metavar="FILE", help="write a Markdown summary "
                   "(to $GITHUB_STEP_SUMMARY it appends)")
    p.add_argument("--html", metavar="FILE", help="write a self-contained HTML comparison")
    p.add_argument("--json", metavar="FILE", help="write the results as JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="no table on stdout")
    a = p.parse_args(argv)
    if a.calibrate:
        if a.files or a.base or a.cand or not a.output:
            p.error("--calibrate RUN... -o noise.json takes no base/cand files")
    else:
        if a.files and (a.base or a.cand):
            p.error("give BASE.json CAND.json or --base ... --cand ..., not both")
        if a.files:
            if len(a.files) != 2:
                p.error("give exactly BASE.json CAND.json (several files: --base ... --cand ...)")
            a.base, a.cand = [a.files[0]], [a.files[1]]
        if not a.base or not a.cand:
            p.error("need base and candidate runs: BASE.json CAND.json")
    if a.floor is not None and not 0 <= a.floor < 100:
        p.error("--floor is a percentage, e.g. 10")
    return a


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    try:
        if args.calibrate:
            doc, warns = calibrate(load_runs(args.calibrate), args.output,
                                   "real_time (seconds per step)")
            for w in warns:
                print(f"gate: warning: {w}", file=sys.stderr)
            worst = sorted(doc["benchmarks"].items(), key=lambda kv: -kv[1]["aa95"])
            print(f"gate: wrote {args.output}: {len(doc['benchmarks'])} benchmarks from "
                  f"{len(args.calibrate)} runs")
            for name, b in worst:
                print(f"  {name}  cv {b['cv']:.1%}  robust cv {b['robust_cv']:.1%}  "
                      f"aa95 {b['aa95']:.1%}")
            return 0
        base_runs, cand_runs = load_runs(args.base), load_runs(args.cand)
        for r in base_runs + cand_runs:
            if not r.times and not r.errors:
                if r.aggregates_only:
                    raise InputError(f"{r.path}: holds only aggregates, no repetitions "
                                     "(drop --benchmark_report_aggregates_only; "
                                     "--benchmark_display_aggregates_only is fine)")
        warns = check_contexts([("base", base_runs), ("cand", cand_runs)],
                               args.allow_env_mismatch, args.compare_key)
        noise_doc = load_noise(args.noise) if args.noise else None
        result = compare(base_runs, cand_runs, args, noise_doc)
    except InputError as e:
        print(f"gate: {e}", file=sys.stderr)
        return 2

    regressions = [r for r in result["rows"] + result["counters"] if r["verdict"] == "REGRESSION"]
    missing = [r for r in result["rows"] if r["verdict"] == "MISSING"]
    code = 1 if regressions or (args.strict and missing) else 0
    for w in warns + result["warnings"]:
        print(f"gate: warning: {w}", file=sys.stderr)
    if not args.quiet:
        base_commit, _ = describe_side(base_runs)
        cand_commit, _ = describe_side(cand_runs)
        print(console(result, [f"base {base_commit}  vs  cand {cand_commit}  "
                               f"({result['device']}, floor {result['floor']:.0%}, "
                               f"k {args.k:g}, {args.correction})"]))
    if args.markdown:
        text = markdown(result, base_runs, cand_runs, args, warns, argv)
        if os.path.exists(args.markdown) and args.markdown == os.environ.get(
                "GITHUB_STEP_SUMMARY"):
            with open(args.markdown, "a", encoding="utf-8") as f:  # GitHub's file: appended
                f.write(text)
        else:
            files.write_text(args.markdown, text)
    if args.html:
        files.write_text(args.html, html_page(result, base_runs, cand_runs, args, warns, argv))
    if args.json:
        files.write_json(args.json, json_doc(result, args, warns, code), indent=1)
    print(f"gate: {'FAIL' if code else 'pass'}: {len(regressions)} regression(s)"
          + (f", {len(missing)} missing (--strict)" if args.strict and missing else ""),
          file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
