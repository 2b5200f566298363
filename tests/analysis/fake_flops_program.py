#!/usr/bin/env python3
"""A stand-in for the torchbench program, for tools/flops_check.py's tests:
its model list (resnet18 and mobilenet_v2, both pip-referenced), its
listing, and a run with --torchbench_flops that writes Google Benchmark JSON
whose flops_* counters are FAKE_FLOPS's ({instance name: FLOP per step},
JSON; forward gets it all). An instance FAKE_FLOPS lacks is a build without
the flag: one line and exit status 2, as the program says of an unknown flag.
"""
import json
import os
import re
import sys

MODELS = {"resnet18": "computer_vision", "mobilenet_v2": "computer_vision"}


def flags(argv):
    out = {}
    for arg in argv:
        name, _, value = arg.lstrip("-").partition("=")
        out[name] = value
    return out


def names(f):
    batches = f.get("torchbench_batch_sizes", "1").split(",")
    pattern = re.compile(f.get("benchmark_filter", "."))
    for model in MODELS:
        for mode in ("Train", "Eval"):
            for b in batches:
                name = f"{model}/{mode}/batch_size:{b}"
                if pattern.search(name):
                    yield name


def main():
    f = flags(sys.argv[1:])
    if "torchbench_list_models" in f:
        print(json.dumps([{"name": m, "domain": d, "train_batch_size": 32,
                           "eval_batch_size": 32} for m, d in MODELS.items()]))
        return 0
    selected = list(names(f))
    if "benchmark_list_tests" in f:
        print("\n".join(selected))
        return 0
    table = json.loads(os.environ.get("FAKE_FLOPS", "{}"))
    counting = "torchbench_flops" in f or "torchbench_peaks" in f
    if counting and not all(n in table for n in selected):
        print("torchbench: unknown flag --torchbench_flops", file=sys.stderr)
        return 2
    rows = [{"name": f"{n}/manual_time", "run_name": n, "run_type": "iteration",
             "repetitions": 1, "repetition_index": 0, "iterations": 1, "real_time": 1.0,
             "cpu_time": 1.0, "time_unit": "ms", "flops_per_step": float(table[n]),
             "flops_forward": float(table[n]), "flops_backward": 0.0, "flops_optimizer": 0.0}
            for n in selected]
    with open(f["benchmark_out"], "w") as out:
        json.dump({"context": {"libtorch_version": "fake"}, "benchmarks": rows}, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
