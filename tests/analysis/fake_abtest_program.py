#!/usr/bin/env python3
"""A stand-in for one LibTorch build's torchbench program, for
tools/abtest.py's tests. Wrapped by a script that adds its own settings:

  --fake_version=2.15.0          libtorch_version in the context
  --fake_slow=NAME@OP@FACTOR     NAME's step is longer by FACTOR x OP's time,
                                 and OP's self time in its profile too
  --fake_extra=NAME              lists one more benchmark (a mismatch)
  --fake_swap_ops                toy's profile has aten::fresh, not aten::gone

Benchmarks: toy/Eval/batch_size:1 (2 ms; aten::work 1500 us, aten::gone 10
us) and slowpoke/Eval/batch_size:1 (5 ms; aten::slow_op 1000 us, aten::work
3000 us). Times vary by +-1 % with the repetition. With
--torchbench_trace_dir, <name>.profile.json per benchmark (no trace: the
micro-benchmarks have nothing to rebuild). FAKE_ABTEST_LOG names a file each
run appends a JSON line to: version, whether it listed, OMP_NUM_THREADS and
the cores it may run on.
"""
import json
import os
import re
import sys

BENCH = {"toy/Eval/batch_size:1": (2.0, {"aten::work": 1500.0, "aten::gone": 10.0}),
         "slowpoke/Eval/batch_size:1": (5.0, {"aten::work": 3000.0, "aten::slow_op": 1000.0})}


def main():
    f = {}
    for arg in sys.argv[1:]:
        name, _, value = arg.lstrip("-").partition("=")
        f[name] = value
    names = list(BENCH) + ([f["fake_extra"]] if f.get("fake_extra") else [])
    pattern = re.compile(f.get("benchmark_filter", "."))
    names = [n for n in names if pattern.search(n)]
    listing = "benchmark_list_tests" in f
    if os.environ.get("FAKE_ABTEST_LOG"):
        with open(os.environ["FAKE_ABTEST_LOG"], "a") as log:
            log.write(json.dumps({"version": f.get("fake_version"), "list": listing,
                                  "profile": "torchbench_trace_dir" in f,
                                  "threads": os.environ.get("OMP_NUM_THREADS"),
                                  "cores": sorted(os.sched_getaffinity(0))}) + "\n")
    if listing:
        print("\n".join(names))
        return 0
    slow_name, slow_op, factor = (f.get("fake_slow") or "@@0").split("@")
    factor = float(factor)
    reps = int(f.get("benchmark_repetitions", "1"))
    rows = []
    for name in names:
        step_ms, ops = BENCH.get(name, (1.0, {"aten::work": 500.0}))
        ops = dict(ops)
        if name == slow_name:
            step_ms += ops[slow_op] * factor / 1e3
            ops[slow_op] *= 1 + factor
        if "fake_swap_ops" in f and "aten::gone" in ops:
            ops["aten::fresh"] = ops.pop("aten::gone")
        for i in range(reps):
            rows.append({"name": name, "run_name": name, "run_type": "iteration",
                         "repetitions": reps, "repetition_index": i, "threads": 1,
                         "iterations": 10, "real_time": step_ms * (1 + 0.01 * ((i % 3) - 1)),
                         "cpu_time": step_ms, "time_unit": "ms", "aten_ops": 40.0})
        if f.get("torchbench_trace_dir"):
            os.makedirs(f["torchbench_trace_dir"], exist_ok=True)
            safe = re.sub(r"[^A-Za-z0-9._-]", "_", name)
            with open(os.path.join(f["torchbench_trace_dir"], safe + ".profile.json"), "w") as p:
                json.dump({"name": name, "steps": 5, "per_step": True,
                           "counters": {"aten_ops_per_step": 40.0 + ("fake_swap_ops" in f),
                                        "would_sync_per_step": 0.0},
                           "top_ops_host": [{"name": k, "calls": 2.0, "self_host_us": v}
                                            for k, v in ops.items()]}, p)
    context = {"libtorch_version": f.get("fake_version", "2.14.1"), "torchbench_device": "cpu",
               "device_name": "cpu", "precision": "fp32", "channels_last": "false",
               "optimizer_path": "single", "seed": "1337",
               "intra_op_threads": os.environ.get("OMP_NUM_THREADS", "?"),
               "host_name": "fake", "num_cpus": 2}
    with open(f["benchmark_out"], "w") as out:
        json.dump({"context": context, "benchmarks": rows}, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
