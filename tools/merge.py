#!/usr/bin/env python3
"""Merges the JSON files of a sharded torchbench run into one Google
Benchmark JSON file that compare.py reads like an unsharded run's.

    tools/merge.py SHARD.json... -o ALL.json [--allow-missing] [--strict]
    tools/tb merge SHARD.json... -o ALL.json

Each input is the --benchmark_out (format json) of one shard of one run
(`torchbench --torchbench_shard=I/N`, or the Slurm / Kubernetes variables).
The merge checks, and prints one line per problem on stderr, naming the file:

- each input is JSON with a "context" and a "benchmarks" array, and its
  context names its shard (torchbench_shard "I/N", torchbench_shard_plan,
  torchbench_shard_instances): otherwise bad input, exit 2;
- no shard index appears twice, no instance is held by two shards, and no
  shard holds an instance its plan did not give it: bad input, exit 2;
- every input has the same N and plan hash, the same torchbench_git_commit,
  libtorch_version, device kind (cpu, cuda, ...: the type of
  torchbench_device), precision and the other settings that change what is
  measured (seed, warm-up steps, optimizer path, channels-last, version):
  otherwise a mismatch, exit 3;
- every shard 0..N-1 is there, and each holds every instance its
  torchbench_shard_instances names: otherwise the missing shards and
  instances are listed by name, exit 1 (--allow-missing: listed, the merged
  file written from what there is, exit 0);
- instances that errored (error_occurred) are listed; with --strict they
  fail the merge, exit 1.

With several problems the exit status is the first of 2, 3, 1 that applies;
nothing is written unless the merge succeeds. The output is written to a
temporary file beside it, then renamed over it.

The merged file: the context of the lowest shard, with the shard keys made
the merged run's (torchbench_shard "merged N shards", torchbench_shard_instances
every instance, torchbench_merged_from the input files, torchbench_merged_hosts
each shard's host); the benchmark rows of every shard, each instance's rows
kept together in the order its shard wrote them, instances in the order the
unsharded run reports them (models by name, each model's instances in their
planned order: the program registers models sorted by name and a shard
keeps whole models), family_index renumbered so that compare.py, which sorts
by it, keeps that order.
"""

import argparse
import json
import os
import re
import sys

from tbench import errors, files

OK, MISSING, BAD_INPUT, MISMATCH = 0, 1, 2, 3

# Context keys that must agree between the shards of one run: a difference
# means the shards measured different things.
SAME_SETTINGS = (
    ("torchbench_git_commit", "commit"),
    ("libtorch_version", "LibTorch version"),
    ("precision", "precision"),
    ("optimizer_path", "optimizer path"),
    ("channels_last", "channels-last"),
    ("seed", "seed"),
    ("warmup_steps", "warm-up steps"),
    ("torchbench_version", "torchbench version"),
)
# Context keys worth a note when they differ (the merge still succeeds).
NOTED_SETTINGS = (
    ("device_name", "device name"),
    ("intra_op_threads", "intra-op threads"),
    ("cuda_runtime_version", "CUDA runtime"),
    ("cudnn_version", "cuDNN"),
)
SHARD_KEYS = ("torchbench_shard", "torchbench_shard_plan", "torchbench_shard_instances")


class Problems:
    """Collects one message per problem and the exit status they give."""

    def __init__(self):
        self.codes = []  # (exit status, allowed by --allow-missing)

    def add(self, code, message, missing=False):
        self.codes.append((code, missing))
        print(f"merge: {message}", file=sys.stderr)

    def note(self, message):
        print(f"merge: note: {message}", file=sys.stderr)

    def status(self, allow_missing=False):
        codes = {c for c, missing in self.codes if not (allow_missing and missing)}
        for code in (BAD_INPUT, MISMATCH, MISSING):
            if code in codes:
                return code
        return OK


class Shard:
    def __init__(self, path, doc):
        self.path = path
        self.context = doc["context"]
        self.rows = doc["benchmarks"]
        index, count = self.context["torchbench_shard"].split("/")
        self.index, self.count = int(index), int(count)
        self.plan = self.context["torchbench_shard_plan"]
        given = self.context["torchbench_shard_instances"]
        self.given = [name for name in given.split(",") if name] if given else []

    def setting(self, key):
        value = self.context.get(key, "")
        if key == "torchbench_device":
            return str(value).split(":")[0]
        return str(value)


def instance_of(row):
    """The instance a row belongs to: aggregates carry it in run_name."""
    return row.get("run_name") or row.get("name", "")


def read_shard(path, problems):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        problems.add(BAD_INPUT, f"{path}: cannot read it: {e.strerror}")
        return None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        problems.add(BAD_INPUT, f"{path}: not valid JSON ({e}); a shard cut short by a crash "
                     "can be finished with --torchbench_resume=<its journal>")
        return None
    if (not isinstance(doc, dict) or not isinstance(doc.get("context"), dict)
            or not isinstance(doc.get("benchmarks"), list)):
        problems.add(BAD_INPUT, f"{path}: not Google Benchmark JSON (no \"context\" object and "
                     "\"benchmarks\" array; run with --benchmark_out_format=json)")
        return None
    context = doc["context"]
    shard = context.get("torchbench_shard")
    if not isinstance(shard, str) or not re.fullmatch(r"\d+/\d+", shard):
        what = f"its torchbench_shard is '{shard}'" if shard is not None else \
            "its context has no torchbench_shard"
        problems.add(BAD_INPUT, f"{path}: not a torchbench shard file ({what}; a shard comes "
                     "from torchbench --torchbench_shard=I/N or a Slurm/Kubernetes array)")
        return None
    index, count = (int(x) for x in shard.split("/"))
    if not 0 <= index < count:
        problems.add(BAD_INPUT, f"{path}: shard '{shard}' is outside 0 <= I < N")
        return None
    for key in SHARD_KEYS[1:]:
        if not isinstance(context.get(key), str):
            problems.add(BAD_INPUT, f"{path}: not a torchbench shard file (its context has no "
                         f"{key})")
            return None
    for number, row in enumerate(doc["benchmarks"]):
        if not isinstance(row, dict) or not isinstance(row.get("name"), str):
            problems.add(BAD_INPUT, f"{path}: benchmark row {number} has no name")
            return None
    return Shard(path, doc)


def check_agreement(shards, problems):
    first = shards[0]
    for shard in shards[1:]:
        if shard.count != first.count:
            problems.add(MISMATCH, f"{shard.path}: shard {shard.index}/{shard.count} of "
                         f"{shard.count} shards, but {first.path} is one of {first.count}")
        elif shard.plan != first.plan:
            problems.add(MISMATCH, f"{shard.path}: shard plan {shard.plan}, but {first.path} has "
                         f"{first.plan} (the shards were planned from different selections, "
                         "flags or cost files)")
        for key, what in (("torchbench_device", "device kind"),) + SAME_SETTINGS:
            if shard.setting(key) != first.setting(key):
                problems.add(MISMATCH, f"{shard.path}: {what} '{shard.setting(key)}' ({key}), but "
                             f"{first.path} has '{first.setting(key)}'")
        for key, what in NOTED_SETTINGS:
            if shard.setting(key) != first.setting(key):
                problems.note(f"{shard.path}: {what} '{shard.setting(key)}', but {first.path} has "
                              f"'{first.setting(key)}'")


def merge(paths, allow_missing=False, strict=False):
    """Returns (exit status, merged document or None)."""
    problems = Problems()
    shards = [s for s in (read_shard(p, problems) for p in paths) if s is not None]
    unreadable = len(shards) < len(paths)
    by_index = {}
    for shard in shards:
        if shard.index in by_index:
            problems.add(BAD_INPUT, f"{shard.path}: shard {shard.index}/{shard.count} again "
                         f"(also {by_index[shard.index].path})")
        else:
            by_index[shard.index] = shard
    shards = sorted(by_index.values(), key=lambda s: s.index)
    if not shards:
        if not problems.codes:
            problems.add(BAD_INPUT, "no shard files given")
        return problems.status(), None
    check_agreement(shards, problems)

    owner = {}  # instance -> the shard it was given to
    for shard in shards:
        for name in shard.given:
            if name in owner:
                problems.add(BAD_INPUT, f"{shard.path}: instance {name} was also given to shard "
                             f"{owner[name].index} ({owner[name].path})")
            else:
                owner[name] = shard
    groups = {}  # instance -> its rows, in its shard's order
    for shard in shards:
        given = set(shard.given)
        seen = set()
        for row in shard.rows:
            name = instance_of(row)
            if name not in given:
                problems.add(BAD_INPUT, f"{shard.path}: holds {name}, which its plan did not give "
                             "it (not in its torchbench_shard_instances)")
                given.add(name)  # One message per instance.
                continue
            key = (row["name"], row.get("run_type"), row.get("repetition_index"))
            if key in seen:
                problems.add(BAD_INPUT, f"{shard.path}: holds {row['name']} "
                             f"(repetition {row.get('repetition_index')}) twice")
                continue
            seen.add(key)
            groups.setdefault(name, []).append(row)

    missing_shards = [i for i in range(shards[0].count) if i not in by_index]
    for index in missing_shards if not unreadable else ():  # It may be the unreadable one.
        problems.add(MISSING, f"shard {index}/{shards[0].count} is missing (no file given has "
                     f"torchbench_shard \"{index}/{shards[0].count}\"); its instances are unknown "
                     "here", missing=True)
    missing = []
    for shard in shards:
        lacking = [n for n in shard.given if n not in groups]
        missing += lacking
        for name in lacking:
            problems.add(MISSING, f"{shard.path}: lacks {name}, which shard "
                         f"{shard.index}/{shard.count} was given (interrupted? resume it with "
                         "--torchbench_resume=<its journal>)", missing=True)

    errored = []
    for name, rows in groups.items():
        for row in rows:
            if row.get("error_occurred"):
                errored.append(name)
                message = f"{owner[name].path}: {name} errored: {row.get('error_message', '')}"
                if strict:
                    problems.add(MISSING, message + " (--strict)")
                else:
                    problems.note(message)
                break

    status = problems.status(allow_missing)
    if status != OK:
        return status, None

    # The unsharded run's order: models by name (bytewise, as std::map),
    # each model's instances in the planned order its shard lists them.
    order = []
    for shard in shards:
        for position, name in enumerate(shard.given):
            if name in groups:
                order.append((name.split("/")[0].encode(), shard.index, position, name))
    order.sort()
    rows = []
    for family, (_, _, _, name) in enumerate(order):
        for row in groups[name]:
            row = dict(row)
            row["family_index"] = family
            rows.append(row)

    context = dict(shards[0].context)
    count = shards[0].count
    context["torchbench_shard"] = (f"merged {count} shards" if not missing_shards else
                                   f"merged {len(shards)} of {count} shards (missing "
                                   f"{', '.join(str(i) for i in missing_shards)})")
    context["torchbench_shard_instances"] = ",".join(o[3] for o in order)
    context["torchbench_merged_from"] = ",".join(os.path.basename(s.path) for s in shards)
    context["torchbench_merged_hosts"] = ",".join(str(s.context.get("host_name", "?"))
                                                  for s in shards)
    if missing:
        context["torchbench_merged_missing"] = ",".join(missing)
    print(f"merge: {len(shards)} of {count} shards, {len(order)} instances"
          + (f", {len(errored)} errored" if errored else "")
          + (f", {len(missing)} missing" if missing else ""), file=sys.stderr)
    return OK, {"context": context, "benchmarks": rows}


def main(argv=None):
    parser = errors.ArgumentParser(prog="merge", tool="merge", with_usage=True,
                                   description="Merge the JSON files of a sharded torchbench run.")
    parser.add_argument("shards", nargs="+", metavar="SHARD.json")
    parser.add_argument("-o", "--output", required=True, metavar="ALL.json")
    parser.add_argument("--allow-missing", action="store_true",
                        help="write what there is; missing shards and instances are still listed")
    parser.add_argument("--strict", action="store_true", help="errored instances fail the merge")
    args = parser.parse_args(argv)
    status, doc = merge(args.shards, allow_missing=args.allow_missing, strict=args.strict)
    if doc is None:
        print(f"merge: {args.output} not written", file=sys.stderr)
        return status
    try:
        files.write_json(args.output, doc)
    except OSError as e:
        print(f"merge: cannot write {args.output}: {e}", file=sys.stderr)
        return BAD_INPUT
    print(f"merge: wrote {args.output}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
