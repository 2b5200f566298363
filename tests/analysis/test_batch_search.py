#!/usr/bin/env python3
"""tools/batch_search.py without the real program: the search on fake probe
functions (doubling, bisection to the out-of-memory edge, the cap, the knee,
fixed and smallest batches, the plateau), reading Google Benchmark JSON, and
the whole command on tests/analysis/fake_torchbench.py (crash, timeout,
errors, Ctrl-C, bad input).

usage: test_batch_search.py   (unittest; no build needed)
"""
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import batch_search as bs  # noqa: E402  (tools/batch_search.py)

TOOL = ROOT / "tools" / "batch_search.py"
FAKE = HERE / "fake_torchbench.py"


def fake(rate=lambda b: 1000.0 * b / (b + 8), fails=lambda b: None, calls=None):
    """A probe function: samples/s rate(b); fails(b) a failure status or None."""
    def probe(batch):
        if calls is not None:
            calls.append(batch)
        status = fails(batch)
        if status:
            return bs.new_probe(batch, status, message=f"{status} at {batch}")
        r = rate(batch)
        return bs.new_probe(batch, "ok", step_ms=batch * 1e3 / r, iqr_ms=0.0, samples_per_s=r)
    return probe


def batches(probes):
    return [p["batch_size"] for p in probes]


class Search(unittest.TestCase):
    def test_doubles_then_bisects_to_the_oom_edge(self):
        probes, stopped = bs.search(fake(fails=lambda b: "oom" if b > 100 else None), 1)
        self.assertEqual(batches(probes),
                         [1, 2, 4, 8, 16, 32, 64, 128, 96, 112, 104, 100, 102, 101])
        self.assertEqual(stopped, "oom")
        s = bs.summarize(probes, stopped)
        self.assertEqual((s["b_max_ok"], s["oom_edge"], s["stopped_by"]), (100, 101, "oom"))
        self.assertEqual(s["b_peak"], 100)

    def test_every_failure_kind_bisects(self):
        for kind in ("error", "crashed", "timeout"):
            probes, stopped = bs.search(fake(fails=lambda b, k=kind: k if b >= 24 else None), 1)
            self.assertEqual(stopped, kind)
            s = bs.summarize(probes, stopped)
            self.assertEqual((s["b_max_ok"], s["oom_edge"]), (23, 24), kind)

    def test_cap_stops_without_bisection_and_counts(self):
        # 1000 b / (b + 8) samples/s: the step is (b + 8) ms, over 0.05 s from b = 43.
        probes, stopped = bs.search(fake(), 1, cap_seconds=0.05)
        self.assertEqual(batches(probes), [1, 2, 4, 8, 16, 32, 64])
        self.assertEqual(stopped, "cap")
        s = bs.summarize(probes, stopped)
        self.assertEqual((s["b_max_ok"], s["oom_edge"], s["b_peak"]), (64, None, 64))

    def test_knee_is_the_smallest_batch_near_the_peak(self):
        table = {1: 10, 2: 20, 4: 40, 8: 80, 16: 96, 32: 100, 64: 99, 128: 97}
        probes, stopped = bs.search(fake(rate=table.get), 1, max_batch=128)
        self.assertEqual(stopped, "max_batch")
        s = bs.summarize(probes, stopped)
        self.assertEqual((s["b_knee"], s["b_peak"], s["peak_samples_per_s"]), (16, 32, 100))
        self.assertEqual(bs.summarize(probes, stopped, knee_fraction=0.99)["b_knee"], 32)
        self.assertEqual(bs.summarize(probes, stopped, knee_fraction=0.5)["b_knee"], 8)

    def test_max_batch(self):
        probes, stopped = bs.search(fake(), 1, max_batch=100)
        self.assertEqual((batches(probes)[-1], stopped), (64, "max_batch"))

    def test_fixed_batch_is_one_probe(self):
        calls = []
        probes, stopped = bs.search(fake(calls=calls), 256, fixed=True, cap_seconds=0.001)
        self.assertEqual((calls, stopped), ([256], "fixed_batch"))
        s = bs.summarize(probes, stopped)
        self.assertEqual((s["b_knee"], s["b_peak"], s["b_max_ok"]), (256, 256, 256))
        probes, stopped = bs.search(fake(fails=lambda b: "oom"), 256, fixed=True)
        self.assertEqual((stopped, bs.summarize(probes, stopped)["oom_edge"]), ("oom", 256))

    def test_smallest_batch_bisects_over_its_multiples(self):
        calls = []
        bs.search(fake(fails=lambda b: "oom" if b > 700 else None, calls=calls), 64,
                  granularity=64)
        self.assertEqual(calls, [64, 128, 256, 512, 1024, 768, 640, 704])
        self.assertTrue(all(b % 64 == 0 for b in calls))

    def test_failure_at_the_start_has_nothing_to_bisect(self):
        probes, stopped = bs.search(fake(fails=lambda b: "oom"), 2)
        self.assertEqual((batches(probes), stopped), ([2], "oom"))
        s = bs.summarize(probes, stopped)
        self.assertEqual((s["b_knee"], s["b_max_ok"], s["oom_edge"]), (None, None, 2))

    def test_plateau_is_opt_in(self):
        rate = lambda b: min(b, 8) * 100.0  # flat from 8: 16 and 32 gain nothing
        probes, stopped = bs.search(fake(rate=rate), 1, stop_on_plateau=True)
        self.assertEqual((batches(probes), stopped), ([1, 2, 4, 8, 16, 32], "plateau"))
        probes, stopped = bs.search(fake(rate=rate), 1, max_batch=256)
        self.assertEqual((batches(probes)[-1], stopped), (256, "max_batch"))
        # One flat doubling, then a gain: no plateau.
        table = {1: 100, 2: 101, 4: 200, 8: 201, 16: 400, 32: 401, 64: 800}
        probes, stopped = bs.search(fake(rate=table.get), 1, stop_on_plateau=True, max_batch=64)
        self.assertEqual(stopped, "max_batch")

    def test_probes_list_survives_an_interrupt(self):
        def probe(batch):
            if batch == 8:
                raise KeyboardInterrupt
            return fake()(batch)
        kept = []
        with self.assertRaises(KeyboardInterrupt):
            bs.search(probe, 1, probes=kept)
        self.assertEqual(batches(kept), [1, 2, 4])

    def test_plan_from_the_listing(self):
        big = bs.list_batch(1)
        self.assertEqual(bs.plan([1, big], 1), (1, False, 1))
        self.assertEqual(bs.plan([2, big], 1), (2, False, 2))     # smallest batch 2
        self.assertEqual(bs.plan([64, big], 1), (64, False, 64))
        self.assertEqual(bs.plan([256], 1), (256, True, 1))        # fixed
        self.assertEqual(bs.plan([4, bs.list_batch(4)], 4), (4, False, 1))

    def test_suggestions_keyed_by_device_name(self):
        searches = [{"model": "m", "mode": "Eval", "summary": {"b_knee": 16}},
                    {"model": "m", "mode": "Train", "summary": {"b_knee": 8}},
                    {"model": "n", "mode": "Eval", "summary": {"b_knee": None}}]
        self.assertEqual(bs.suggestions(searches, {"device_name": "H100"}, "cuda"),
                         {"H100": {"m": {"eval_batch_size": 16, "train_batch_size": 8}}})


class ReadResult(unittest.TestCase):
    def read(self, rows):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump({"context": {"device_name": "x"}, "benchmarks": rows}, f)
            return bs.read_result(path, 4)

    def test_median_iqr_counters(self):
        reps = [{"name": "m/Eval/batch_size:4", "run_type": "iteration", "real_time": t,
                 "time_unit": "ms", "items_per_second": 4000 / t, "peak_mem": 100 + t}
                for t in (10, 11, 12, 13, 30)]
        aggregate = {"name": "m/Eval/batch_size:4_median", "run_type": "aggregate",
                     "real_time": 99, "time_unit": "ms"}
        p, context = self.read(reps + [aggregate])
        self.assertEqual(context, {"device_name": "x"})
        self.assertEqual((p["status"], p["step_ms_median"], p["step_ms_iqr"]), ("ok", 12, 2))
        self.assertAlmostEqual(p["samples_per_s"], 4000 / 12)
        self.assertEqual((p["peak_mem_bytes"], p["gpu_busy_pct"]), (130, None))
        p, _ = self.read([dict(reps[0], real_time=2e6, time_unit="ns", gpu_busy_pct=80.0)])
        self.assertEqual((p["step_ms_median"], p["step_ms_iqr"], p["gpu_busy_pct"]),
                         (2, 0, 80.0))

    def test_errors(self):
        for message, status in (("out of memory: CUDA out of memory", "oom"),
                                ("setup failed: out of memory: x", "oom"),
                                ("setup failed: shape mismatch", "error"),
                                ("loss (fp16) is not finite", "error")):
            p, _ = self.read([{"name": "m", "error_occurred": True, "error_message": message}])
            self.assertEqual((p["status"], p["message"]), (status, message))
        self.assertIsNone(self.read([])[0])

    def test_damaged_result_is_named(self):
        # No file: no result (the prober says "exit N without a result"); a
        # damaged one: a crashed probe naming the file, the search goes on.
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.json")
            self.assertEqual(bs.read_result(path, 4), (None, None))
            for text, why in (('{"context": {}, "bench', "not valid JSON: "),
                              ("[]", "no benchmarks list")):
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
                p, context = bs.read_result(path, 4)
                self.assertEqual((p["status"], context), ("crashed", None))
                self.assertTrue(p["message"].startswith(f"its result {path} is damaged ("),
                                p["message"])
                self.assertIn(why, p["message"])


class Command(unittest.TestCase):
    """The whole command, on the fake program."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name)
        self.out = self.dir / "out.json"

    def tearDown(self):
        self.tmp.cleanup()

    def run_tool(self, *args, program=FAKE, timeout=120):
        return subprocess.run([sys.executable, str(TOOL), "--torchbench", str(program),
                               "-o", str(self.out), *args], capture_output=True, text=True,
                              timeout=timeout, cwd=self.dir)

    def test_searches_and_document(self):
        p = self.run_tool("toy", "fixed", "minny", "evalonly", "--mode", "eval",
                          "--repetitions", "3", "--device", "cpu")
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(self.out.read_text())
        self.assertEqual((doc["tool"], doc["version"]), ("torchbench-batch-search", 1))
        self.assertEqual(doc["context"]["device_name"], "Fake CPU")
        self.assertEqual(doc["settings"]["cap_seconds"], 1.0)  # the CPU default
        self.assertEqual(doc["settings"]["repetitions"], 3)
        by = {s["model"]: s for s in doc["searches"]}
        self.assertEqual(list(by), ["toy", "fixed", "minny", "evalonly"])
        self.assertEqual({s["mode"] for s in doc["searches"]}, {"Eval"})
        toy = by["toy"]["summary"]
        self.assertEqual((toy["b_max_ok"], toy["oom_edge"], toy["stopped_by"]), (100, 101, "oom"))
        # Median repetition 1.01 x the step: 1000 b / (b + 8) / 1.01 samples/s.
        self.assertEqual((toy["b_knee"], toy["b_peak"]), (64, 100))
        self.assertAlmostEqual(toy["peak_samples_per_s"], 1e5 / 108 / 1.01)
        self.assertEqual(by["fixed"]["summary"]["stopped_by"], "fixed_batch")
        self.assertEqual(batches(by["fixed"]["probes"]), [256])
        minny = by["minny"]
        self.assertEqual(minny["start_batch"], 4)
        self.assertTrue(all(p["batch_size"] % 4 == 0 for p in minny["probes"]))
        self.assertEqual((minny["summary"]["b_max_ok"], minny["summary"]["oom_edge"]), (40, 44))
        first = by["toy"]["probes"][0]
        self.assertAlmostEqual(first["step_ms_median"], 9.09)
        self.assertAlmostEqual(first["step_ms_iqr"], 0.09)
        self.assertEqual((first["peak_mem_bytes"], first["message"]), (1000, None))
        self.assertEqual(by["evalonly"]["summary"]["stopped_by"], "cap")
        self.assertEqual(batches(by["evalonly"]["probes"])[-1], 1024)  # 1.04 s
        self.assertEqual(doc["suggested_batch_sizes"],
                         {"Fake CPU": {"toy": {"eval_batch_size": 64},
                                       "fixed": {"eval_batch_size": 256},
                                       "minny": {"eval_batch_size": 32},
                                       "evalonly": {"eval_batch_size": 256}}})
        self.assertIn("stopped_by", p.stdout)
        self.assertRegex(p.stdout, r"toy\s+Eval\s+14\s+64\s+100\s+916\.8\s+100\s+101\s+oom")

    def test_crash_timeout_error_and_the_cap(self):
        p = self.run_tool("crashy", "hangy", "erring", "toy", "--mode", "train",
                          "--device", "cpu", "--probe-timeout", "2", "--repetitions", "1",
                          "--cap-seconds", "0.02", "--max-batch", "16")
        self.assertEqual(p.returncode, 0, p.stderr)
        by = {s["model"]: s for s in json.loads(self.out.read_text())["searches"]}
        crash = by["crashy"]["probes"][3]
        self.assertEqual((crash["batch_size"], crash["status"]), (8, "crashed"))
        self.assertIn("SIGSEGV", crash["message"])
        self.assertIn("some note on stderr", crash["message"])
        self.assertEqual(by["crashy"]["summary"]["b_max_ok"], 7)
        hangy = by["hangy"]["summary"]
        self.assertEqual((hangy["stopped_by"], hangy["b_max_ok"], hangy["oom_edge"]),
                         ("timeout", 3, 4))
        self.assertIn("no result after 2 s", by["hangy"]["probes"][2]["message"])
        erring = by["erring"]
        self.assertEqual(batches(erring["probes"]), [1, 2, 4, 8, 16, 12, 14, 15])
        self.assertEqual(erring["probes"][4]["message"], "shape mismatch at batch 16")
        self.assertEqual((erring["summary"]["stopped_by"], erring["summary"]["b_max_ok"]),
                         ("error", 15))
        self.assertEqual(by["toy"]["summary"]["stopped_by"], "cap")  # step 24 ms at 16
        self.assertEqual(by["toy"]["summary"]["b_max_ok"], 16)

    def test_extra_flags_reach_every_call(self):
        log = self.dir / "calls.jsonl"
        env = dict(os.environ, FAKE_TORCHBENCH_LOG=str(log), SLURM_ARRAY_TASK_ID="1")
        p = subprocess.run([sys.executable, str(TOOL), "--torchbench", str(FAKE), "-o",
                            str(self.out), "fixed", "--mode", "eval", "--device", "cpu",
                            "--extra-flag=--torchbench_precision=bf16"],
                           capture_output=True, text=True, timeout=60, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        calls = [json.loads(line) for line in log.read_text().splitlines()]
        self.assertEqual(len(calls), 2)  # the listing, one probe
        self.assertTrue(all("--torchbench_precision=bf16" in c for c in calls))
        probe = calls[1]
        for flag in ("--benchmark_filter=^fixed/Eval/batch_size:256$",
                     "--torchbench_batch_sizes=256", "--torchbench_device=cpu",
                     "--benchmark_repetitions=5", "--benchmark_min_time=0.01",
                     "--benchmark_out_format=json", "--torchbench_fail_on_error=false"):
            self.assertIn(flag, probe)

    def test_interrupt_writes_what_was_measured(self):
        log = self.dir / "calls.jsonl"
        child = subprocess.Popen([sys.executable, str(TOOL), "--torchbench", str(FAKE), "-o",
                                  str(self.out), "toy", "hangy", "--mode", "eval", "--device",
                                  "cpu", "--probe-timeout", "300", "--repetitions", "1"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=dict(os.environ, FAKE_TORCHBENCH_LOG=str(log)))
        deadline = time.time() + 60
        hanging = "--benchmark_filter=^hangy/Eval/batch_size:4$"
        while time.time() < deadline and not (log.exists() and hanging in log.read_text()):
            time.sleep(0.1)
        time.sleep(0.5)  # the fake is asleep
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=30)
        self.assertEqual(child.returncode, 130, err)
        doc = json.loads(self.out.read_text())
        self.assertTrue(doc["interrupted"])
        hangy = doc["searches"][1]
        self.assertEqual(hangy["summary"]["stopped_by"], "interrupted")
        self.assertEqual([p["batch_size"] for p in hangy["probes"]], [1, 2])

    def test_bad_input(self):
        cases = [
            (("toy", "--device", "cpu"), self.dir / "nothing", "no torchbench program at"),
            (("no_such_model", "--device", "cpu"), FAKE, "no model matches no_such_model"),
            (("evalonly", "--mode", "train", "--device", "cpu"), FAKE, "no model matches"),
            (("toy", "--device", "cuda"), FAKE, "no CUDA device is usable"),
            (("toy", "--device", "cpu", "--extra-flag=--torchbench_bogus"), FAKE,
             "unknown flag --torchbench_bogus"),
            (("toy", "--extra-flag=--torchbench_batch_sizes=4"), FAKE,
             "sets --torchbench_batch_sizes itself"),
            (("toy", "--cap-seconds", "0"), FAKE, "not positive"),
            (("toy(", "--device", "cpu"), FAKE, "not a regular expression"),
        ]
        for args, program, message in cases:
            p = self.run_tool(*args, program=program)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertIn(message, p.stderr, args)
            self.assertFalse(self.out.exists(), args)


if __name__ == "__main__":
    unittest.main(verbosity=2)
