#!/usr/bin/env python3
"""Operator (API-surface) coverage of torchbench runs (tools/tb coverage).

  coverage.py RUN... [-o coverage.json] [--html coverage.html] [--mlperf MODEL,...]

Each RUN is a coverage file of the torchbench program
(--torchbench_op_coverage=FILE, JSON lines) or a run's Google Benchmark JSON
whose context names one ("op_coverage_file": tried as given, that is relative
to the current directory, then relative to the JSON's own directory). A
coverage file holds a registry line, {"registry": {"libtorch_version",
"device", "ops": every operator of c10::Dispatcher's registry,
"ns::name[.overload]"}}, and one line per benchmark instance, {"instance",
"model", "domain", "mode", ..., "ops": [{"op", "overload", "phase",
"top_level", "calls", "keys"}]}. An instance that repeats (in one file or
across files, in the order given) counts once: the last line wins.

The denominator is the registry's aten:: operators, counted by name
("aten::add", its overloads merged: the headline) and by overload
("aten::add.Tensor"). Other namespaces (torchvision::, prims::, ...) are
reported apart, never in the aten ratio. Computed, per instance, per model
(modes merged), per domain and for the suite: covered / registered, both ways,
distinct operators per phase (forward, backward, optimizer), top-level and
nested-only; each model's unique contribution (operators no other model
reaches); the registry's operators no model reaches, by family (family():
leading and trailing underscores, the suffixes _backward/_forward/_out and a
trailing digit run stripped, then the first word before '_'); the operators
only Train reaches (over the models that ran both modes) split into
backward-only, optimizer-only and other; an MLPerf-like subset (--mlperf,
default resnet50, hf_Bert_large, dlrm, vision_maskrcnn: those present) against
the suite; and the suite's cumulative coverage as models are added greedily
by marginal gain.

Output: a short text on stdout; -o the whole analysis as JSON (sorted: the
same inputs give the same bytes); --html a self-contained page (its plots
need matplotlib, as tools/tb report; `tools/tb report ... --coverage FILE`
puts the same section in the results report). The analysis itself is the
standard library only. A -o file given alone as RUN is read back as it is
(to print it or draw it again).

Exit status: 0 done, 2 bad input or usage (one line "tb coverage: ..." on
stderr: a file missing or unreadable, a whole line that is not JSON, no
registry line, registries of two LibTorch versions, a run JSON that names no
coverage file, an --mlperf model that no input holds). A last line cut short
(no newline: a child killed mid-append) is skipped with one "tb coverage:
note: FILE:LINE: ..." line. -o and --html are written to a temporary file
beside their target and renamed over it.
"""

import argparse
import json
import os
import re
import sys

from tbench import files
from tbench.errors import InputError

TOOL = "torchbench-coverage"
FORMAT = 1
PHASES = ("forward", "backward", "optimizer")
MLPERF_DEFAULT = ("resnet50", "hf_Bert_large", "dlrm", "vision_maskrcnn")
MODE_ORDER = {"Train": 0, "Eval": 1}
FAMILY_SUFFIXES = ("_backward", "_forward", "_out")


# --- reading ---------------------------------------------------------------

def read_text(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None


def whole_json(text):
    """The file as one JSON value, or None when it is not one (JSON lines)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def is_record(doc):
    return isinstance(doc, dict) and ("registry" in doc or "instance" in doc)


def split_op(full):
    """"aten::add.Tensor" -> ("aten", "aten::add", "aten::add.Tensor")."""
    ns, sep, rest = full.partition("::")
    if not sep:
        ns, rest = "", full
    name = rest.split(".", 1)[0]
    return ns, f"{ns}::{name}" if sep else name, full


class Registry:
    def __init__(self):
        self.version = None
        self.version_file = None
        self.devices = set()
        self.ops = set()

    def add(self, path, where, reg):
        if not isinstance(reg, dict) or not isinstance(reg.get("ops"), list) or \
                not all(isinstance(o, str) for o in reg["ops"]):
            raise InputError(f"{where}: a registry without its 'ops' list of operator names")
        version = str(reg.get("libtorch_version") or "unknown")
        if self.version is None:
            self.version, self.version_file = version, path
        elif version != self.version:
            raise InputError(f"two registries with different libtorch_version: {self.version} "
                             f"({self.version_file}) and {version} ({path})")
        self.devices.add(str(reg.get("device") or "unknown"))
        self.ops.update(reg["ops"])

    def split(self):
        """(aten names, aten overloads, {namespace: (names, overloads)} of the others)."""
        names, overloads, others = set(), set(), {}
        for full in self.ops:
            ns, name, overload = split_op(full)
            if ns == "aten":
                names.add(name)
                overloads.add(overload)
            else:
                n, o = others.setdefault(ns or "(none)", (set(), set()))
                n.add(name)
                o.add(overload)
        return names, overloads, others


class Instance:
    """One benchmark instance: who it is and the operators it dispatched."""

    def __init__(self, where, rec):
        name = rec.get("instance")
        if not isinstance(name, str) or not name:
            raise InputError(f"{where}: an instance line without its 'instance' name")
        self.name = name
        parts = name.split("/")
        self.model = str(rec.get("model") or parts[0])
        self.mode = str(rec.get("mode") or next((p for p in parts if p in MODE_ORDER), "?"))
        self.domain = str(rec.get("domain") or "unknown")
        self.batch_size = rec.get("batch_size")
        self.device = rec.get("device")
        self.precision = rec.get("precision")
        ops = rec.get("ops")
        if not isinstance(ops, list):
            raise InputError(f"{where}: instance {name}: no 'ops' list")
        # (operator name, overload name, phase, top level) per entry.
        self.entries = []
        for op in ops:
            if not isinstance(op, dict) or not isinstance(op.get("op"), str) or \
                    "::" not in op["op"]:
                raise InputError(f"{where}: instance {name}: an op entry without its "
                                 "'op' (namespace::name)")
            phase = op.get("phase", "forward")
            if phase not in PHASES:
                raise InputError(f"{where}: instance {name}: {op['op']}: phase {phase!r} "
                                 f"is none of {', '.join(PHASES)}")
            overload = str(op.get("overload") or "")
            full = op["op"] + ("." + overload if overload else "")
            self.entries.append((op["op"], full, phase, op.get("top_level", True) is not False))

    def sort_key(self):
        return (self.model.lower(), MODE_ORDER.get(self.mode, 2), str(self.batch_size), self.name)


def coverage_path(path, doc):
    """The coverage file a run's Google Benchmark JSON names."""
    ctx = doc.get("context") if isinstance(doc.get("context"), dict) else {}
    name = ctx.get("op_coverage_file")
    if not isinstance(name, str) or not name:
        raise InputError(f"{path}: a benchmark JSON whose context names no op_coverage_file "
                         "(run the program with --torchbench_op_coverage=FILE)")
    candidates = [name]
    if not os.path.isabs(name):
        beside = os.path.join(os.path.dirname(path), name)
        if os.path.normpath(beside) != os.path.normpath(name):
            candidates.append(beside)
    for c in candidates:
        if os.path.exists(c):
            return c
    raise InputError(f"{path}: its op_coverage_file {name} is not there (looked for "
                     + " and ".join(candidates) + ")")


def read_records(path, named_by=None, note=None):
    """(the coverage file read, [(where, record)]): a coverage file, or the one a run names.
    A last line cut short (no newline: a child killed mid-append) is skipped
    with a note naming FILE:LINE; a whole line that is not JSON refuses the file."""
    text = read_text(path)
    doc = whole_json(text)
    if isinstance(doc, dict) and doc.get("tool") == TOOL:
        raise InputError(f"{path}: a tools/tb coverage -o file: give it alone, without "
                         "--mlperf, or give the coverage files it was made of")
    if isinstance(doc, dict) and not is_record(doc):
        if named_by is not None:
            raise InputError(f"{named_by}: its op_coverage_file {path} is not a coverage file")
        if "benchmarks" in doc or "context" in doc:
            return read_records(coverage_path(path, doc), named_by=path, note=note)
        raise InputError(f"{path}: neither a coverage file (JSON lines, a registry line "
                         "first) nor a benchmark JSON naming one")
    records = [(path, doc)] if is_record(doc) else []
    for line in [] if records else files.json_lines(path, text):
        if line.torn:
            (note or print_note)(f"{line.where}: skipped: {line.problem}")
            continue
        if not line.ok:
            raise InputError(f"{line.where}: {line.problem}")
        if not isinstance(line.value, dict):
            raise InputError(f"{line.where}: not a JSON object")
        if is_record(line.value):  # other kinds of line, if a later program writes them, are skipped
            records.append((line.where, line.value))
    if not any("registry" in r for _, r in records):
        raise InputError(f"{path}: no registry line (a coverage file of "
                         "--torchbench_op_coverage starts with one)")
    return path, records


def print_note(message):
    print(f"tb coverage: note: {message}", file=sys.stderr)


def load(paths, note=None):
    """(registry, [instances], [files read]): the last of a repeated instance wins
    (a child killed after its coverage line and before its journal record
    appends the instance again when the run is resumed)."""
    registry = Registry()
    instances = {}
    read = []
    for path in paths:
        file, records = read_records(path, note=note)
        read.append(file)
        for where, rec in records:
            if "registry" in rec:
                registry.add(file, where, rec["registry"])
            else:
                inst = Instance(where, rec)
                instances.pop(inst.name, None)
                instances[inst.name] = inst
    return registry, list(instances.values()), read


# --- analysis --------------------------------------------------------------

def family(op):
    """The family of an operator name: "aten::_foreach_add_" -> "foreach",
    "aten::upsample_bilinear2d_backward" -> "upsample", "aten::log10" -> "log"."""
    name = op.split("::", 1)[-1].split(".", 1)[0]
    base = name.strip("_")
    stripped = True
    while stripped:
        stripped = False
        for suffix in FAMILY_SUFFIXES:
            if base.endswith(suffix) and len(base) > len(suffix):
                base = base[:-len(suffix)].rstrip("_")
                stripped = True
    base = re.sub(r"\d+$", "", base) or base
    return base.split("_", 1)[0] or name


def usage(entries, level):
    """{operator (level 0: name, 1: overload): [phases, reached at top level]}."""
    out = {}
    for entry in entries:
        key = entry[level]
        u = out.setdefault(key, [set(), False])
        u[0].add(entry[2])
        u[1] = u[1] or entry[3]
    return out


def merged(usages):
    out = {}
    for us in usages:
        for key, (phases, top) in us.items():
            u = out.setdefault(key, [set(), False])
            u[0] |= phases
            u[1] = u[1] or top
    return out


def ratio(a, b):
    return round(a / b, 6) if b else None


def stats(use, universe):
    """Covered / registered over `universe`, per phase, top-level and nested only."""
    keys = [k for k in use if k in universe]
    top = sum(1 for k in keys if use[k][1])
    return {"covered": len(keys), "registry": len(universe),
            "ratio": ratio(len(keys), len(universe)),
            "phases": {p: sum(1 for k in keys if p in use[k][0]) for p in PHASES},
            "top_level": top, "nested_only": len(keys) - top}


def stacked(use, universe):
    """Each operator once, in its first phase: forward, else backward, else optimizer."""
    out = dict.fromkeys(PHASES, 0)
    for k, (phases, _) in use.items():
        if k in universe:
            out[next(p for p in PHASES if p in phases)] += 1
    return out


def train_only(train, evl, universe):
    """The operators Train reaches and Eval does not, by where Train reaches them."""
    out = {"backward_only": [], "optimizer_only": [], "other": []}
    for k in sorted(train):
        if k in universe and k not in evl:
            phases = train[k][0]
            kind = "backward_only" if phases == {"backward"} else \
                "optimizer_only" if phases == {"optimizer"} else "other"
            out[kind].append(k)
    return out


def counts(split):
    return {k: len(v) for k, v in split.items()}


def analyse(registry, instances, inputs, mlperf=None):
    """The whole analysis as a JSON-able dict, every list sorted."""
    names, overloads, others = registry.split()
    models = {}
    for inst in sorted(instances, key=Instance.sort_key):
        models.setdefault(inst.model, []).append(inst)
    use = {i.name: (usage(i.entries, 0), usage(i.entries, 1)) for i in instances}

    def union(insts, level):
        return merged(use[i.name][level] for i in insts)

    model_ops = {m: union(insts, 0) for m, insts in models.items()}
    model_ovl = {m: union(insts, 1) for m, insts in models.items()}
    covered_by = {m: {k for k in u if k in names} for m, u in model_ops.items()}
    reach = {}
    for m, ops in covered_by.items():
        for k in ops:
            reach[k] = reach.get(k, 0) + 1
    domain_of = {m: next((i.domain for i in insts if i.domain != "unknown"), "unknown")
                 for m, insts in models.items()}

    def other_counts(use_ops):
        out = {}
        for ns, (ns_names, _) in sorted(others.items()):
            n = sum(1 for k in use_ops if k in ns_names)
            if n:
                out[ns] = n
        return out

    model_rows = []
    for m, insts in models.items():
        modes = sorted({i.mode for i in insts}, key=lambda x: (MODE_ORDER.get(x, 2), x))
        trains = [i for i in insts if i.mode == "Train"]
        evals = [i for i in insts if i.mode == "Eval"]
        t_only = None
        if trains and evals:
            t_only = counts(train_only(union(trains, 0), union(evals, 0), names))
        unique = sorted(k for k in covered_by[m] if reach[k] == 1)
        model_rows.append({
            "model": m, "domain": domain_of[m], "modes": modes,
            "instances": [i.name for i in insts],
            "operators": stats(model_ops[m], names), "overloads": stats(model_ovl[m], overloads),
            "stacked": stacked(model_ops[m], names),
            "unique": unique, "train_only": t_only,
            "other_namespaces": other_counts(model_ops[m]),
            "covered": sorted(covered_by[m])})
    model_rows.sort(key=lambda r: (-len(r["unique"]), -r["operators"]["covered"], r["model"]))

    suite_ops = merged(model_ops.values())
    suite_ovl = merged(model_ovl.values())
    domains = {}
    for m in models:
        domains.setdefault(domain_of[m], []).append(m)
    domain_rows = [{"domain": d, "models": sorted(ms),
                    "operators": stats(merged(model_ops[m] for m in ms), names),
                    "overloads": stats(merged(model_ovl[m] for m in ms), overloads)}
                   for d, ms in sorted(domains.items())]

    instance_rows = [{"instance": i.name, "model": i.model, "mode": i.mode,
                      "batch_size": i.batch_size, "device": i.device, "precision": i.precision,
                      "operators": stats(use[i.name][0], names),
                      "overloads": stats(use[i.name][1], overloads)}
                     for i in sorted(instances, key=lambda i: i.name)]

    uncovered = sorted(names - set(suite_ops))
    fams = {}
    for k in uncovered:
        fams.setdefault(family(k), []).append(k)
    families = [{"family": f, "count": len(ops), "operators": ops}
                for f, ops in sorted(fams.items(), key=lambda kv: (-len(kv[1]), kv[0]))]

    paired = sorted(m for m, insts in models.items()
                    if {"Train", "Eval"} <= {i.mode for i in insts})
    t_split = train_only(
        union([i for m in paired for i in models[m] if i.mode == "Train"], 0),
        union([i for m in paired for i in models[m] if i.mode == "Eval"], 0), names)

    # The MLPerf-like subset: the models named, or the default ones present.
    chosen = list(MLPERF_DEFAULT) if mlperf is None else mlperf
    absent = [m for m in chosen if m not in models]
    if mlperf is not None and absent:
        raise InputError(f"--mlperf: no input holds {', '.join(absent)} (the inputs' models: "
                         f"{', '.join(sorted(models)) or 'none'})")
    subset = sorted(m for m in dict.fromkeys(chosen) if m in models)
    sub_ops = stats(merged(model_ops[m] for m in subset), names)
    sub_ovl = stats(merged(model_ovl[m] for m in subset), overloads)
    suite = {"models": len(models), "instances": len(instances),
             "operators": stats(suite_ops, names), "overloads": stats(suite_ovl, overloads)}
    mlperf_doc = {
        "models": subset, "absent": sorted(absent), "default": mlperf is None,
        "operators": sub_ops, "overloads": sub_ovl,
        "suite_over_subset": {
            "operators": ratio(suite["operators"]["covered"], sub_ops["covered"]),
            "overloads": ratio(suite["overloads"]["covered"], sub_ovl["covered"])}}

    # Greedy: the model that adds the most operators not yet covered, ties by name.
    cumulative, have, left = [], set(), set(models)
    while left:
        m = min(left, key=lambda x: (-len(covered_by[x] - have), x))
        gain = len(covered_by[m] - have)
        have |= covered_by[m]
        left.discard(m)
        cumulative.append({"model": m, "gain": gain, "covered": len(have)})

    seen = set(suite_ovl)
    return {
        "tool": TOOL, "format": FORMAT, "inputs": inputs,
        "libtorch_version": registry.version, "devices": sorted(registry.devices),
        "registry": {
            "aten": {"operators": len(names), "overloads": len(overloads)},
            "other_namespaces": {
                ns: {"operators": len(n), "overloads": len(o),
                     "covered_operators": sum(1 for k in suite_ops if k in n),
                     "covered_overloads": sum(1 for k in suite_ovl if k in o)}
                for ns, (n, o) in sorted(others.items())}},
        "suite": suite,
        "mlperf": mlperf_doc,
        "cumulative": cumulative,
        "train_only": {"models": paired, "counts": counts(t_split), **t_split},
        "uncovered": {"operators": len(uncovered), "families": families},
        "domains": domain_rows,
        "models": model_rows,
        "instances": instance_rows,
        "not_in_registry": sorted(k for k in seen if k not in registry.ops),
    }


def load_doc(paths, mlperf=None, note=None):
    """The analysis of RUN files, or a -o file given alone, read back. note(message)
    is told of each line skipped (default: printed on stderr)."""
    if len(paths) == 1:
        text = read_text(paths[0])
        doc = whole_json(text)
        if isinstance(doc, dict) and doc.get("tool") == TOOL:
            if doc.get("format") != FORMAT or not isinstance(doc.get("suite"), dict):
                raise InputError(f"{paths[0]}: a tools/tb coverage file of another format "
                                 f"({doc.get('format')!r}; this tool writes {FORMAT})")
            if mlperf is not None:
                raise InputError(f"{paths[0]}: --mlperf needs the coverage files, not a "
                                 "tools/tb coverage -o file")
            return doc
    registry, instances, read = load(paths, note)
    return analyse(registry, instances, read, mlperf)


# --- text ------------------------------------------------------------------

def pct(r):
    return "—" if r is None else f"{100 * r:.1f} %"


def plural(n, word):
    return f"{n} {word}{'s' if n != 1 else ''}"


def text(doc, top=10):
    """The short summary printed on stdout."""
    s, reg = doc["suite"], doc["registry"]
    so, sv = s["operators"], s["overloads"]
    n_domains = len(doc["domains"])
    out = [f"operator coverage: {plural(s['instances'], 'instance')} of "
           f"{plural(s['models'], 'model')} in "
           f"{n_domains} domain{'s' if n_domains != 1 else ''}; LibTorch "
           f"{doc['libtorch_version']}, registry of {', '.join(doc['devices'])}",
           f"suite: {so['covered']} / {so['registry']} aten operators ({pct(so['ratio'])}); "
           f"{sv['covered']} / {sv['registry']} overloads ({pct(sv['ratio'])})",
           "  operators by phase: " + ", ".join(f"{p} {so['phases'][p]}" for p in PHASES)
           + f"; top-level {so['top_level']}, nested only {so['nested_only']}"]
    reached = {ns: v for ns, v in reg["other_namespaces"].items() if v["covered_operators"]}
    if reg["other_namespaces"]:
        rest = len(reg["other_namespaces"]) - len(reached)
        none = sum(v["operators"] for ns, v in reg["other_namespaces"].items()
                   if ns not in reached)
        out.append("  other namespaces (not in the ratio): " + ", ".join(
            f"{ns} {v['covered_operators']} / {v['operators']}" for ns, v in reached.items())
            + ("; " if reached and rest else "")
            + (f"none reached in {rest}{' more' if reached else ''} namespace"
               f"{'s' if rest != 1 else ''} ({none} operators)" if rest else ""))
    m = doc["mlperf"]
    absent = f"; absent: {', '.join(m['absent'])}" if m["absent"] else ""
    r = m["suite_over_subset"]
    out.append(f"MLPerf-like subset ({', '.join(m['models']) or 'no model'}{absent}): "
               f"{m['operators']['covered']} / {m['operators']['registry']} "
               f"({pct(m['operators']['ratio'])}); suite / subset "
               + ("—" if r["operators"] is None else f"{r['operators']:.2f}×")
               + " (overloads " + ("—" if r["overloads"] is None else f"{r['overloads']:.2f}×")
               + ")")
    if doc["domains"]:
        out.append("domains: " + ", ".join(
            f"{d['domain']} {d['operators']['covered']} ({pct(d['operators']['ratio'])})"
            for d in doc["domains"]))
    rows = doc["models"]
    if rows:
        out.append("models by unique contribution (aten operators no other model reaches):")
        width = max(len(r["model"]) for r in rows[:top])
        for r in rows[:top]:
            o = r["operators"]
            out.append(f"  {r['model']:<{width}}  {len(r['unique']):>4} unique  "
                       f"{o['covered']:>5} covered ({pct(o['ratio'])})  {r['domain']}, "
                       f"{'+'.join(r['modes'])}")
        if len(rows) > top:
            out.append(f"  … {len(rows) - top} more (-o, --html)")
    cum = doc["cumulative"]
    if cum:
        total = cum[-1]["covered"]
        need = next((i + 1 for i, c in enumerate(cum) if c["covered"] >= 0.9 * total), len(cum))
        steps = ", ".join(f"+{c['model']} {c['covered']}" for c in cum[:5])
        out.append(f"greedy: {need} of {len(cum)} models reach 90 % of the suite's {total}: "
                   f"{steps}{', …' if len(cum) > 5 else ''}")
    t = doc["train_only"]
    n = len(t["models"])
    out.append(f"only in Train ({n} model{'s' if n != 1 else ''} with Train and Eval): "
               f"{sum(t['counts'].values())} operators: {t['counts']['backward_only']} "
               f"backward only, {t['counts']['optimizer_only']} optimizer only, "
               f"{t['counts']['other']} other")
    u = doc["uncovered"]
    fams = u["families"]
    out.append(f"uncovered: {u['operators']} aten operators in {len(fams)} families"
               + (", the largest:" if fams else ""))
    for f in fams[:6]:
        out.append(f"  {f['family']} {f['count']} ("
                   + ", ".join(o.split("::", 1)[-1] for o in f["operators"][:3])
                   + (", …" if f["count"] > 3 else "") + ")")
    if doc["not_in_registry"]:
        out.append(f"note: {len(doc['not_in_registry'])} dispatched operators are not in the "
                   f"registry (not counted): {', '.join(doc['not_in_registry'][:5])}"
                   + (", …" if len(doc["not_in_registry"]) > 5 else ""))
    return "\n".join(out)


# --- command ---------------------------------------------------------------

def parse_mlperf(value):
    models = [m.strip() for m in value.split(",") if m.strip()]
    if not models:
        raise InputError("--mlperf: no model named")
    return models


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="tools/tb coverage", description="Operator coverage of torchbench runs: the "
        "registry's aten operators each model, domain and the suite dispatch.")
    p.add_argument("runs", nargs="+", metavar="RUN",
                   help="coverage files (--torchbench_op_coverage=FILE) or Google Benchmark "
                        "JSON whose context names one (op_coverage_file)")
    p.add_argument("-o", "--output", metavar="JSON", help="write the whole analysis as JSON")
    p.add_argument("--html", metavar="HTML", help="write a self-contained HTML page")
    p.add_argument("--mlperf", metavar="MODEL,...",
                   help="the MLPerf-like subset (default: "
                        f"{','.join(MLPERF_DEFAULT)}, those present)")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        mlperf = parse_mlperf(args.mlperf) if args.mlperf is not None else None
        doc = load_doc(args.runs, mlperf)
        page = None
        if args.html:
            try:
                import report_page  # matplotlib, only for --html
            except ImportError as e:
                raise InputError(f"--html: {e.name or e} is not installed for {sys.executable}: "
                                 "run tools/tb setup") from None
            page = report_page.coverage_page(doc)
        if args.output:
            try:
                files.write_json(args.output, doc, indent=1)
            except OSError as e:
                raise InputError(f"{args.output}: cannot write: {e.strerror or e}") from None
        if page is not None:
            try:
                files.write_text(args.html, page)
            except OSError as e:
                raise InputError(f"{args.html}: cannot write: {e.strerror or e}") from None
    except InputError as e:
        print(f"tb coverage: {e}", file=sys.stderr)
        return 2
    print(text(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
