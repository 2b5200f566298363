#!/usr/bin/env python3
"""A stand-in for the torchbench program, for tools/batch_search.py's tests:
the flags the search passes, the listing, and a Google Benchmark JSON file
per probe, with models that misbehave on purpose at chosen batches.

Models (Train and Eval unless said):
  toy       samples/s = 1000 b / (b + 8); out of memory above batch 100
  crashy    killed by SIGSEGV from batch 8
  hangy     sleeps (past any test's --probe-timeout) from batch 4
  erring    an error that is not out of memory from batch 16
  fixed     fixed batch 256
  minny     smallest batch 4; out of memory above batch 40
  evalonly  Eval only

FAKE_TORCHBENCH_LOG, when set, names a file each call appends its argv to
(JSON, one line per call).
"""
import json
import os
import re
import signal
import sys
import time

MODELS = {"toy": {}, "crashy": {}, "hangy": {}, "erring": {}, "fixed": {"fixed": 256},
          "minny": {"min": 4}, "evalonly": {"modes": ["Eval"]}}


def flags(argv):
    out = {}
    for arg in argv:
        name, _, value = arg.lstrip("-").partition("=")
        out[name] = value
    return out


def batches_of(spec, requested):
    if "fixed" in spec:
        return [spec["fixed"]]
    sizes = []
    for b in requested:
        b = max(b, spec.get("min", 1))
        if b not in sizes:
            sizes.append(b)
    return sizes


def names(f):
    requested = [int(b) for b in f.get("torchbench_batch_sizes", "1").split(",")]
    pattern = re.compile(f.get("benchmark_filter", "."))
    for model, spec in MODELS.items():
        for mode in spec.get("modes", ["Train", "Eval"]):
            for b in batches_of(spec, requested):
                name = f"{model}/{mode}/batch_size:{b}"
                if pattern.search(name):
                    yield model, mode, b, name


def row(name, rep, reps, step_s, batch):
    return {"name": name, "family_index": 0, "per_family_instance_index": 0,
            "run_name": name, "run_type": "iteration", "repetitions": reps,
            "repetition_index": rep, "threads": 1, "iterations": 1,
            "real_time": step_s * 1e3 * (1 + 0.01 * rep), "cpu_time": step_s * 1e3,
            "time_unit": "ms", "items_per_second": batch / (step_s * (1 + 0.01 * rep)),
            "peak_mem": 1000.0 * batch, "batch_size": batch}


def main():
    f = flags(sys.argv[1:])
    if os.environ.get("FAKE_TORCHBENCH_LOG"):
        with open(os.environ["FAKE_TORCHBENCH_LOG"], "a", encoding="utf-8") as log:
            log.write(json.dumps(sys.argv[1:]) + "\n")
    if f.get("torchbench_device", "cpu") not in ("cpu",):
        print("torchbench: no CUDA device is usable", file=sys.stderr)
        return 2
    if "torchbench_bogus" in f:
        print("torchbench: unknown flag --torchbench_bogus (--torchbench_help lists the flags)",
              file=sys.stderr)
        return 2
    selected = list(names(f))
    if "benchmark_list_tests" in f:
        for *_, name in selected:
            print(name)
        return 0 if selected else 2
    assert len(selected) == 1, selected
    model, mode, batch, name = selected[0]
    print("toy table on stdout")
    print("torchbench: some note on stderr", file=sys.stderr)
    if model == "crashy" and batch >= 8:
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGSEGV)
    if model == "hangy" and batch >= 4:
        time.sleep(600)
    reps = int(f.get("benchmark_repetitions", "1"))
    context = {"date": "2026-01-01T00:00:00+00:00", "num_cpus": 2, "device_name": "Fake CPU",
               "torchbench_device": f.get("torchbench_device", "cpu"), "precision": "fp32",
               "libtorch_version": "2.14.1", "torchbench_git_commit": "fake"}
    edge = {"toy": 100, "minny": 40}.get(model)
    if edge is not None and batch > edge:
        rows = [{"name": name, "run_name": name, "run_type": "iteration", "error_occurred": True,
                 "error_message": "setup failed: out of memory: CUDA out of memory. Tried "
                 "to allocate 2.00 GiB"}]
    elif model == "erring" and batch >= 16:
        rows = [{"name": name, "run_name": name, "run_type": "iteration", "error_occurred": True,
                 "error_message": "shape mismatch at batch 16"}]
    else:
        step = (batch + 8) / 1000.0  # samples/s = 1000 b / (b + 8)
        rows = [row(name, r, reps, step, batch) for r in range(reps)]
    with open(f["benchmark_out"], "w", encoding="utf-8") as out:
        json.dump({"context": context, "benchmarks": rows}, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
