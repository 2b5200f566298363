"""The profiling pass on the CPU, as a user runs it (CTest analysis.profile).

Runs resnet18 and BERT_pytorch, Train and Eval at batch 1, twice with
--torchbench_profile and checks that:
- aten_ops_per_step and would_sync_per_step are present and identical across
  the two runs (the op stream of a step is deterministic), and
  aten_ops_per_step equals the --torchbench_count_ops count of the same run;
- the GPU counters are absent on the CPU (absent, not zero);
- each instance's Chrome trace is valid JSON holding ProfilerStep# events, and
  its .profile.json / .profile.txt tables exist;
- each instance was profiled in a process of its own (the traces' ProfilerStep
  pids differ), so no instance's timed loop followed a profiler session.

usage: check_profile.py TORCHBENCH_BINARY
"""
import json
import os
import subprocess
import sys
import tempfile

MODELS = "^(resnet18|BERT_pytorch)/"
STEPS = 1  # plus the trailing step HTA drops: two ProfilerStep scopes
GPU_ONLY = ("gpu_busy_pct", "gpu_idle_pct", "kernels_per_step", "syncs_per_step",
            "memcpy_per_step")


def run(binary, workdir, tag):
    out = os.path.join(workdir, f"{tag}.json")
    traces = os.path.join(workdir, f"traces_{tag}")
    cmd = [binary, "--torchbench_device=cpu", f"--benchmark_filter={MODELS}",
           "--torchbench_batch_sizes=1", "--benchmark_min_time=0.01",
           "--torchbench_warmup_steps=1", "--torchbench_count_ops",
           f"--torchbench_profile_steps={STEPS}", f"--torchbench_trace_dir={traces}",
           f"--benchmark_out={out}", "--benchmark_out_format=json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {proc.returncode}\n{proc.stderr[-3000:]}")
    with open(out) as f:
        doc = json.load(f)
    return doc, traces


def counters(doc):
    rows = {}
    for b in doc["benchmarks"]:
        if b.get("run_type") == "aggregate":
            continue
        if b.get("error_occurred"):
            sys.exit(f"FAIL: {b['name']}: {b.get('error_message')}")
        rows[b["name"]] = b
    return rows


def main():
    binary = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory(prefix="tb_profile_") as workdir:
        doc_a, traces = run(binary, workdir, "a")
        doc_b, _ = run(binary, workdir, "b")
        if doc_a["context"].get("profile_steps") != str(STEPS):
            failures.append(f"context profile_steps is {doc_a['context'].get('profile_steps')!r}")
        a, b = counters(doc_a), counters(doc_b)
        expected = {f"{m}/{mode}/batch_size:1" for m in ("resnet18", "BERT_pytorch")
                    for mode in ("Train", "Eval")}
        if set(a) != expected or set(b) != expected:
            failures.append(f"instances {sorted(a)} / {sorted(b)}, expected {sorted(expected)}")
        pids = {}
        for name in sorted(expected & set(a) & set(b)):
            for key in ("aten_ops_per_step", "would_sync_per_step"):
                if key not in a[name]:
                    failures.append(f"{name}: no {key}")
                elif a[name][key] != b[name].get(key):
                    failures.append(f"{name}: {key} {a[name][key]} vs {b[name].get(key)}")
            if a[name].get("aten_ops_per_step") != a[name].get("aten_ops"):
                failures.append(f"{name}: aten_ops_per_step {a[name].get('aten_ops_per_step')} "
                                f"!= aten_ops {a[name].get('aten_ops')} (--torchbench_count_ops)")
            for key in GPU_ONLY:
                if key in a[name]:
                    failures.append(f"{name}: {key} present on the CPU")
            base = os.path.join(traces, name.replace("/", "_").replace(":", "_"))
            try:
                with open(base + ".pt.trace.json") as f:
                    trace = json.load(f)
            except (OSError, ValueError) as e:
                failures.append(f"{name}: trace: {e}")
                continue
            steps = {e["name"] for e in trace.get("traceEvents", [])
                     if str(e.get("name", "")).startswith("ProfilerStep#")}
            if len(steps) != STEPS + 1:
                failures.append(f"{name}: trace ProfilerStep events {sorted(steps)}")
            pids[name] = {e.get("pid") for e in trace.get("traceEvents", [])
                          if str(e.get("name", "")).startswith("ProfilerStep#")}
            for ext in (".profile.json", ".profile.txt"):
                if not os.path.exists(base + ext):
                    failures.append(f"{name}: no {ext}")
            print(f"{name}: aten_ops_per_step {a[name].get('aten_ops_per_step'):g}, "
                  f"would_sync_per_step {a[name].get('would_sync_per_step'):g}, "
                  f"{len(trace.get('traceEvents', []))} trace events")
        owners = [pid for name in sorted(pids) for pid in pids[name]]
        if len(owners) != len(pids) or len(set(owners)) != len(owners):
            failures.append(f"profiles not one process each: ProfilerStep pids {pids}")
    if failures:
        sys.exit("FAIL:\n  " + "\n  ".join(failures))
    print("ok")


if __name__ == "__main__":
    main()
