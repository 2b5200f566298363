#!/usr/bin/env python3
"""A stand-in for the torchbench program, for tools/compiled_table.py's tests:
its model list (--torchbench_list_models=json, MODELS below) and a run of
--torchbench_backend=eager|aoti|torchscript that writes Google Benchmark JSON.

FAKE_COMPILED_TIMES (JSON) says what each backend's call gives each instance:
{"<backend>": {"<instance>": ms | [ms of the backend's 1st call, 2nd, ...] |
"error: <message>"}}; an instance it lacks errors as the program does for a
missing package. A backend whose value is "crash" exits 3 without writing
JSON. Compiled rows carry compiled_error_vs_python (1e-7) and, for the
pip-referenced models, compiled_error_vs_port (2e-7).

FAKE_COMPILED_LOG, when set, names a file each call appends a JSON line to:
{"argv": [...], "threads": OMP_NUM_THREADS}.
"""
import json
import os
import re
import sys

MODELS = {"resnet18": "vision", "bert": "nlp", "dlrm": "recommendation",
          "yolo": "vision", "slowpoke": "nlp"}
PIP = {"resnet18", "bert", "slowpoke"}


def flags(argv):
    out = {}
    for arg in argv:
        name, _, value = arg.lstrip("-").partition("=")
        out[name] = value
    return out


def calls_before(log, backend):
    """How many calls of `backend` the log holds (this one not yet)."""
    if not log or not os.path.exists(log):
        return 0
    with open(log) as f:
        return sum(1 for line in f
                   if f"--torchbench_backend={backend}" in json.loads(line)["argv"])


def row(name, rep, reps, value, backend, model):
    r = {"name": name, "family_index": 0, "per_family_instance_index": 0, "run_name": name,
         "run_type": "iteration", "repetitions": reps, "repetition_index": rep, "threads": 1,
         "iterations": 10, "time_unit": "ms"}
    if isinstance(value, str):
        r.update(real_time=0.0, cpu_time=0.0, error_occurred=True,
                 error_message=value.removeprefix("error: "))
        return r
    r.update(real_time=value, cpu_time=value, label="precision:fp32")
    if backend != "eager":
        r["label"] += f" backend:{backend}"
        r["compiled_error_vs_python"] = 1e-7
        if model in PIP:
            r["compiled_error_vs_port"] = 2e-7
    return r


def main():
    f = flags(sys.argv[1:])
    if "torchbench_list_models" in f:
        print(json.dumps([{"name": m, "domain": d, "modes": ["Train", "Eval"],
                           "eval_batch_size": 8} for m, d in MODELS.items()]))
        return 0
    backend = f.get("torchbench_backend", "eager")
    log = os.environ.get("FAKE_COMPILED_LOG")
    call = calls_before(log, backend)
    if log:
        with open(log, "a") as out:
            out.write(json.dumps({"argv": sys.argv[1:],
                                  "threads": os.environ.get("OMP_NUM_THREADS")}) + "\n")
    table = json.loads(os.environ.get("FAKE_COMPILED_TIMES", "{}")).get(backend, {})
    if table == "crash":
        print("torchbench: terminate called after throwing an instance of 'c10::Error'",
              file=sys.stderr)
        return 3
    pattern = re.compile(f.get("benchmark_filter", "."))
    reps = int(f.get("benchmark_repetitions", "1"))
    rows = []
    for model in MODELS:
        for b in f.get("torchbench_batch_sizes", "1").split(","):
            name = f"{model}/Eval/batch_size:{b}"
            if not pattern.search(name):
                continue
            value = table.get(name, f"setup failed: no compiled package: {model} is missing")
            if isinstance(value, list):
                value = value[min(call, len(value) - 1)]
            rows += [row(name, rep, reps, value, backend, model) for rep in range(reps)]
    with open(f["benchmark_out"], "w") as out:
        json.dump({"context": {"libtorch_version": "2.14.1", "intra_op_threads":
                               os.environ.get("OMP_NUM_THREADS")}, "benchmarks": rows}, out)
    return 1 if any(r.get("error_occurred") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
