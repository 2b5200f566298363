"""tools/gate.py (tools/tb gate) on synthetic Google Benchmark JSON.

The files are built here in the structure the torchbench program writes
(Google Benchmark 1.7.1's JSON reporter: context with the harness's custom
keys; per repetition a row with run_type "iteration", real_time in ms
(manual time), cpu_time, the harness's counters and label; then the
aggregate rows mean/median/stddev/cv), with times drawn from a seeded
generator so every run of the test sees the same numbers.

usage: test_gate.py   (unittest; runs tools/gate.py with this interpreter)
"""
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import types
import unittest

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import gate as gate_module  # noqa: E402  (tools/gate.py)

# The context of a real CPU run (GB 1.7.1 fields, then the harness's keys).
CONTEXT = {
    "date": "2026-12-01T23:22:25+00:00",
    "host_name": "vm",
    "executable": "/work/main/build/benchmarks/torchbench",
    "num_cpus": 2,
    "mhz_per_cpu": 2596,
    "cpu_scaling_enabled": False,
    "caches": [{"type": "Data", "level": 1, "size": 49152, "num_sharing": 1},
               {"type": "Unified", "level": 3, "size": 33554432, "num_sharing": 2}],
    "load_avg": [2.25732, 1.87256, 0.967285],
    "library_build_type": "debug",
    "allow_tf32_cublas": "false",
    "allow_tf32_cudnn": "false",
    "channels_last": "false",
    "cpu_memory_counter": "true",
    "cuda_runtime_version": "none",
    "cudnn_benchmark": "true",
    "cudnn_deterministic": "false",
    "cudnn_version": "none",
    "device_name": "AMD EPYC",
    "inter_op_threads": "2",
    "intra_op_threads": "2",
    "libtorch_version": "2.14.1",
    "optimizer_path": "default",
    "optimizer_path_resolved": "single",
    "precision": "fp32",
    "seed": "1337",
    "timer": "steady_clock",
    "torchbench_device": "cpu",
    "torchbench_git_commit": "aaaaaaaaaaaa",
    "torchbench_version": "0.1.0",
    "warmup_steps": "3",
}

# name -> (median ms, peak_mem bytes, params, aten_ops): figures of a real
# CPU run at batch size 1 (times vary with the machine).
MODELS = {
    "alexnet/Eval/batch_size:1": (17.3, 2.49e8, 61100840, 25),
    "resnet18/Eval/batch_size:1": (21.6, 5.81e7, 11689512, 70),
    "mobilenet_v2/Eval/batch_size:1": (11.0, 2.64e7, 3504872, 154),
    "squeezenet1_1/Eval/batch_size:1": (11.4, 1.19e7, 1235496, 66),
    "pyhpc_equation_of_state/Eval/batch_size:1": (0.285, 7520, 0, 372),
    "dlrm/Eval/batch_size:1": (0.288, 2.06e9, 514499137, 46),
    "BERT_pytorch/Train/batch_size:1": (95.0, 9.8e8, 5553450, 1220),
    "resnet18/Train/batch_size:1": (40.0, 2.1e8, 11689512, 590),
}


def rows_for(name, times_ms, family, counters=None):
    """The rows Google Benchmark writes for one benchmark with repetitions."""
    median, peak, params, ops = MODELS.get(name, (1.0, 1e6, 10, 5))
    counters = dict({"batch_size": 1.0, "params": float(params), "peak_mem": peak,
                     "peak_host_rss": 6.1e8, "aten_ops": float(ops),
                     "optimizer_ops": 0.0}, **(counters or {}))
    rows = []
    for i, t in enumerate(times_ms):
        row = {"name": name, "family_index": family, "per_family_instance_index": 0,
               "run_name": name, "run_type": "iteration", "repetitions": len(times_ms),
               "repetition_index": i, "threads": 1, "iterations": 20,
               "real_time": float(t), "cpu_time": float(t) * 1.9, "time_unit": "ms"}
        # A counter given as a list has one value per repetition.
        row.update({k: v[i] if isinstance(v, list) else v for k, v in counters.items()})
        row.update({"items_per_second": 1000.0 / t, "wall_time": t / 1000.0,
                    "label": "precision:fp32"})
        rows.append(row)
    # Aggregates with nonsense values: the gate must recompute, not read them.
    # As in real runs, the cv row of a counter that is 0 on every repetition
    # (optimizer_ops in Eval) is NaN, which Python's json reads and writes.
    for agg in ("mean", "median", "stddev", "cv"):
        row = {"name": f"{name}_{agg}", "family_index": family,
               "per_family_instance_index": 0, "run_name": name,
               "run_type": "aggregate", "repetitions": len(times_ms), "threads": 1,
               "aggregate_name": agg, "aggregate_unit": "percentage" if agg == "cv"
               else "time", "iterations": len(times_ms), "real_time": 12345.0,
               "cpu_time": 12345.0, "time_unit": "ms"}
        row.update({k: 999.0 for k in counters})  # per-repetition lists too
        if agg == "cv":
            row["optimizer_ops"] = float("nan")
        row["label"] = "precision:fp32"
        rows.append(row)
    return rows


def draw(rng, median, n=9, cv=0.02, shift=1.0):
    return median * shift * np.exp(rng.normal(0.0, cv, n))


class Gate(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.rng = np.random.default_rng(20260901)

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, fname, times, context=None, counters=None, errored=()):
        """times: {name: [ms per repetition]}; counters: {name: {counter: v}}."""
        benchmarks = []
        for family, (name, t) in enumerate(times.items()):
            benchmarks += rows_for(name, t, family, (counters or {}).get(name))
        for name in errored:
            benchmarks.append({"name": name, "family_index": 99, "per_family_instance_index": 0,
                               "run_name": name, "run_type": "iteration", "repetitions": 9,
                               "repetition_index": 0, "threads": 1, "iterations": 0,
                               "real_time": 0.0, "cpu_time": 0.0, "time_unit": "ms",
                               "error_occurred": True, "error_message": "out of memory: boom"})
        path = os.path.join(self.dir, fname)
        with open(path, "w") as f:
            json.dump({"context": dict(CONTEXT, **(context or {})), "benchmarks": benchmarks},
                      f, indent=1)
        return path

    def run_(self, name, shift=None, cv=0.02, n=9, run_shift=1.0, **kw):
        shift = shift or {}
        times = {m: draw(self.rng, MODELS[m][0], n, cv, run_shift * shift.get(m, 1.0))
                 for m in MODELS}
        return self.write(name, times, **kw)

    def gate(self, *args):
        """Runs the gate in this process (fast); returns (exit status,
        stdout, stderr) and its --json result."""
        out = os.path.join(self.dir, "result.json")
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                code = gate_module.main([*args, "--json", out])
            except SystemExit as e:  # argparse's usage errors
                code = e.code
        p = types.SimpleNamespace(returncode=code, stdout=stdout.getvalue(),
                                  stderr=stderr.getvalue())
        result = None
        if os.path.exists(out):
            with open(out) as f:
                result = json.load(f)
            os.remove(out)
        return p, result

    @staticmethod
    def verdicts(result, verdict):
        return sorted(b["name"] for b in result["benchmarks"] if b["verdict"] == verdict)

    # --------------------------------------------------------------- time

    def test_slowdown_of_20_percent_on_three_is_caught(self):
        slow = ["alexnet/Eval/batch_size:1", "dlrm/Eval/batch_size:1",
                "BERT_pytorch/Train/batch_size:1"]
        base = self.run_("base.json")
        cand = self.run_("cand.json", shift={m: 1.2 for m in slow},
                         context={"torchbench_git_commit": "bbbbbbbbbbbb"})
        p, result = self.gate(base, cand)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertEqual(self.verdicts(result, "REGRESSION"), sorted(slow))
        self.assertEqual(len(self.verdicts(result, "UNCHANGED")), len(MODELS) - 3)
        for b in result["benchmarks"]:
            if b["name"] in slow:
                self.assertAlmostEqual(b["effect"], 0.2, delta=0.04)
                self.assertLess(b["ci"][0], 0.2)
                self.assertGreater(b["ci"][1], 0.2)
        self.assertIn("REGRESSION", p.stdout)
        # The same files the other way round: improvements, which pass.
        p, result = self.gate(cand, base)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(self.verdicts(result, "IMPROVEMENT"), sorted(slow))

    def test_identical_runs_pass(self):
        base = self.run_("base.json")
        p, result = self.gate(base, base)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(len(self.verdicts(result, "UNCHANGED")), len(MODELS))

    def test_a_a_with_realistic_noise_passes(self):
        # Independent runs of one build: 4 % repetition noise and the whole
        # run 3 % slower (another job on the machine), twenty times.
        for i in range(20):
            base = self.run_(f"a{i}.json", cv=0.04)
            cand = self.run_(f"b{i}.json", cv=0.04, run_shift=1.03)
            p, result = self.gate(base, cand)
            self.assertEqual(p.returncode, 0, f"pair {i}: " + p.stdout + p.stderr)
            self.assertEqual(self.verdicts(result, "REGRESSION"), [])

    def test_several_files_per_side_are_pooled(self):
        slow = ["resnet18/Eval/batch_size:1"]
        base = [self.run_(f"a{i}.json", n=5) for i in range(2)]
        cand = [self.run_(f"b{i}.json", n=5, shift={slow[0]: 1.25}) for i in range(2)]
        p, result = self.gate("--base", *base, "--cand", *cand)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertEqual(self.verdicts(result, "REGRESSION"), slow)
        self.assertTrue(all(b["n_base"] == 10 and b["n_cand"] == 10
                            for b in result["benchmarks"]))

    def test_too_noisy_is_noisy_not_failed(self):
        base = self.run_("base.json", cv=0.35)
        cand = self.run_("cand.json", cv=0.35, shift={m: 1.2 for m in MODELS})
        p, result = self.gate(base, cand)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(len(self.verdicts(result, "NOISY")), len(MODELS))

    def test_too_few_repetitions_is_insufficient(self):
        base = self.run_("base.json", n=2)
        cand = self.run_("cand.json", n=2, shift={m: 1.5 for m in MODELS})
        p, result = self.gate(base, cand)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(len(self.verdicts(result, "INSUFFICIENT")), len(MODELS))

    def test_errored_and_missing_benchmarks_are_reported(self):
        times = {m: draw(self.rng, MODELS[m][0]) for m in MODELS}
        base = self.write("base.json", times)
        gone = "dlrm/Eval/batch_size:1"
        errored = "resnet18/Train/batch_size:1"
        cand_times = {m: t for m, t in times.items() if m not in (gone, errored)}
        cand = self.write("cand.json", cand_times, errored=[errored])
        p, result = self.gate(base, cand)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(self.verdicts(result, "MISSING"), sorted([gone, errored]))
        reasons = {b["name"]: b["reason"] for b in result["benchmarks"] if "reason" in b}
        self.assertIn("errored in cand: out of memory", reasons[errored])
        self.assertEqual(reasons[gone], "not in cand")
        p, _ = self.gate(base, cand, "--strict")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)

    # --------------------------------------------------------------- counters

    def test_deterministic_counter_increase_fails(self):
        times = {m: draw(self.rng, MODELS[m][0]) for m in MODELS}
        base = self.write("base.json", times)
        name = "mobilenet_v2/Eval/batch_size:1"
        cand = self.write("cand.json", times, counters={name: {"aten_ops": 157.0}})
        p, result = self.gate(base, cand)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        bad = [c for c in result["counters"] if c["verdict"] == "REGRESSION"]
        self.assertEqual([(c["name"], c["counter"]) for c in bad], [(name, "aten_ops")])
        self.assertEqual(self.verdicts(result, "REGRESSION"), [])  # time unchanged
        # Fewer ops is an improvement, which passes.
        cand = self.write("cand2.json", times, counters={name: {"aten_ops": 150.0}})
        p, _ = self.gate(base, cand)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_peak_memory_gates_at_5_percent(self):
        times = {m: draw(self.rng, MODELS[m][0]) for m in MODELS}
        base = self.write("base.json", times)
        name = "alexnet/Eval/batch_size:1"
        peak = MODELS[name][1]
        cand = self.write("up6.json", times, counters={name: {"peak_mem": peak * 1.06}})
        p, result = self.gate(base, cand)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        bad = [(c["name"], c["counter"]) for c in result["counters"] if c["verdict"] == "REGRESSION"]
        self.assertEqual(bad, [(name, "peak_mem")])
        cand = self.write("up4.json", times, counters={name: {"peak_mem": peak * 1.04}})
        p, result = self.gate(base, cand)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        cand = self.write("rss6.json", times, counters={name: {"peak_host_rss": 6.1e8 * 1.06}})
        p, result = self.gate(base, cand)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        # A peak that moves between repetitions (the process's RSS after
        # other instances ran) is NOISY, not gated, even 10 % up.
        moving = {name: {"peak_host_rss": [6.1e8 * f for f in (1.0, 1.02, 1.05, 0.97, 1.0,
                                                                  1.01, 1.03, 1.0, 0.99)]}}
        base2 = self.write("rss_moving_base.json", times, counters=moving)
        up = {name: {"peak_host_rss": [v * 1.1 for v in moving[name]["peak_host_rss"]]}}
        cand = self.write("rss_moving_cand.json", times, counters=up)
        p, result = self.gate(base2, cand)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        noisy = [(c["name"], c["counter"]) for c in result["counters"] if c["verdict"] == "NOISY"]
        self.assertEqual(noisy, [(name, "peak_host_rss")])

    # --------------------------------------------------------------- input

    def test_corrupt_file_exits_2(self):
        base = self.run_("base.json")
        cut = os.path.join(self.dir, "cut.json")
        with open(base) as f, open(cut, "w") as g:
            g.write(f.read()[:5000])  # a run killed while writing
        p, _ = self.gate(base, cut)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("cut.json", p.stderr)
        self.assertIn("corrupt JSON", p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)

    def test_not_google_benchmark_json_exits_2(self):
        base = self.run_("base.json")
        other = os.path.join(self.dir, "other.json")
        with open(other, "w") as f:
            json.dump([{"name": "x", "time": 1}], f)
        p, _ = self.gate(base, other)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("other.json: not Google Benchmark JSON", p.stderr)
        p, _ = self.gate(base, os.path.join(self.dir, "absent.json"))
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("absent.json", p.stderr)

    def test_no_common_benchmark_exits_2(self):
        base = self.write("base.json", {"alexnet/Eval/batch_size:1": [12.0] * 9})
        cand = self.write("cand.json", {"dlrm/Eval/batch_size:1": [1.6] * 9})
        p, _ = self.gate(base, cand)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("none in common", p.stderr)

    def test_mismatched_context_exits_2(self):
        base = self.run_("base.json")
        for key, value in (("torchbench_device", "cuda:0"), ("precision", "bf16"),
                           ("libtorch_version", "2.13.0"), ("intra_op_threads", "1")):
            cand = self.run_(f"cand_{key}.json", context={key: value})
            p, _ = self.gate(base, cand)
            self.assertEqual(p.returncode, 2, f"{key}: " + p.stdout + p.stderr)
            self.assertIn(f"{key} differs", p.stderr)
            self.assertIn(f"cand_{key}.json", p.stderr)
            p, _ = self.gate(base, cand, "--allow-env-mismatch")
            self.assertEqual(p.returncode, 0, f"{key}: " + p.stdout + p.stderr)
            self.assertIn("context mismatch allowed", p.stderr)
        # Two LibTorch builds: the key the comparison is about may differ
        # between the sides (tools/tb abtest), not within one.
        cand = self.run_("cand_lt.json", context={"libtorch_version": "2.15.0"})
        p, _ = self.gate(base, cand, "--compare-key", "libtorch_version")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertNotIn("differs", p.stderr)
        p, _ = self.gate("--base", base, "--cand", cand,
                         os.path.join(self.dir, "cand_libtorch_version.json"),
                         "--compare-key", "libtorch_version")
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("libtorch_version differs within the cand runs", p.stderr)
        # Another harness commit is what a gate compares: fine.
        cand = self.run_("cand_commit.json", context={"torchbench_git_commit": "cccccccc"})
        p, _ = self.gate(base, cand)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertNotIn("load average", p.stderr)
        # Another job on the machine: a warning only.
        cand = self.run_("cand_load.json", context={"load_avg": [5.9, 3.0, 2.0]})
        p, _ = self.gate(base, cand)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("load average at the start differed", p.stderr)

    def test_usage_errors_exit_2(self):
        base = self.run_("base.json")
        for args in ([base], [base, base, base], [base, base, "--base", base],
                     ["--calibrate", base, base, base]):
            p, _ = self.gate(*args)
            self.assertEqual(p.returncode, 2, f"{args}: " + p.stdout + p.stderr)

    # --------------------------------------------------------------- calibration

    def test_calibrate_writes_a_usable_noise_file(self):
        runs = [self.run_(f"cal{i}.json", cv=0.03, run_shift=1 + 0.02 * i) for i in range(4)]
        noise = os.path.join(self.dir, "noise.json")
        # Through tools/tb, as a user runs it (it must not set up or build).
        p = subprocess.run([os.path.join(ROOT, "tools", "tb"), "gate", "--calibrate", *runs,
                            "-o", noise], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("aa95", p.stdout)
        with open(noise) as f:
            doc = json.load(f)
        self.assertEqual(set(doc["benchmarks"]), set(MODELS))
        for entry in doc["benchmarks"].values():
            self.assertEqual(entry["runs"], 4)
            self.assertGreater(entry["aa95"], 0.02)   # the runs drift by 2 % each
            self.assertLess(entry["aa95"], 0.12)
            self.assertGreater(entry["cv"], 0.01)
        self.assertEqual(doc["fingerprint"]["host_name"], "vm")
        # Gating with it: thresholds come from aa95, a 30 % slowdown is caught.
        base = self.run_("base.json", cv=0.03)
        name = "squeezenet1_1/Eval/batch_size:1"
        cand = self.run_("cand.json", cv=0.03, shift={name: 1.3})
        p, result = self.gate(base, cand, "--noise", noise)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertEqual(self.verdicts(result, "REGRESSION"), [name])
        self.assertTrue(all(b["noise_source"] == "aa95" for b in result["benchmarks"]))
        # Another machine: a warning, not a refusal.
        other = self.run_("other.json", cv=0.03, context={"host_name": "laptop"})
        p, _ = self.gate(base, other, "--noise", noise)
        self.assertIn("calibrated on another machine", p.stderr)
        # Fewer than 3 runs, or a bad noise file: exit 2.
        p, _ = self.gate("--calibrate", *runs[:2], "-o", noise)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        p, _ = self.gate(base, cand, "--noise", base)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)

    # --------------------------------------------------------------- reports

    def test_markdown_and_html_are_written(self):
        slow = "resnet18/Eval/batch_size:1"
        base = self.run_("base.json")
        cand = self.run_("cand.json", shift={slow: 1.2},
                         context={"torchbench_git_commit": "bbbbbbbbbbbb"},
                         counters={slow: {"peak_mem": MODELS[slow][1] * 1.5}})
        md = os.path.join(self.dir, "summary.md")
        page = os.path.join(self.dir, "gate.html")
        p, _ = self.gate(base, cand, "--markdown", md, "--html", page)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        with open(md) as f:
            text = f.read()
        self.assertIn("aaaaaaaaaaaa", text)
        self.assertIn("bbbbbbbbbbbb", text)
        self.assertIn("| benchmark | metric | base | cand | Δ% [95% CI] | p (corr.) | threshold "
                      "| noise | verdict |", text)
        table = [line for line in text.splitlines() if line.startswith("| `")]
        self.assertIn(slow, table[0])  # sorted by effect: the regression first
        self.assertIn("**REGRESSION**", table[0])
        self.assertIn("peak_mem", text)
        self.assertIn("tools/tb gate", text)
        self.assertIn("--benchmark_filter=", text)
        with open(page) as f:
            doc = f.read()
        self.assertTrue(doc.startswith("<!DOCTYPE html>"))
        self.assertEqual(doc.count("<svg"), len(MODELS))
        self.assertNotIn("<script", doc)
        self.assertNotIn("src=", doc)
        self.assertNotIn("href=", doc)
        self.assertIn("REGRESSION", doc)


if __name__ == "__main__":
    unittest.main()
