"""Crash isolation, Ctrl-C and resume, sharding: the torchbench program as a
user runs it, on the probe models of probe_models.cpp.

usage: check_isolation.py PROBE_PROGRAM [COMPARE_PY]
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

PROGRAM = None
COMPARE_PY = None
BASE = ["--torchbench_device=cpu", "--benchmark_min_time=0.01",
        "--torchbench_warmup_steps=1"]


def run(*args, env=None, timeout=120):
    return subprocess.run([PROGRAM, *BASE, *args], capture_output=True,
                          text=True, timeout=timeout, env=env)


def results(path):
    with open(path) as f:
        data = json.load(f)
    return {b["name"]: b for b in data["benchmarks"]}, data["context"]


def journal_instances(path):
    with open(path) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    return [line["instance"] for line in lines[1:]]


class Isolation(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_crashes_become_errors_and_the_run_goes_on(self):
        out = os.path.join(self.dir, "run.json")
        started = time.monotonic()
        p = run("--torchbench_isolate=process",
                "--torchbench_instance_timeout=5",
                "--benchmark_filter=^probe_(ok|segfault|abort|exit|sigkill|hang)/",
                f"--benchmark_out={out}")
        elapsed = time.monotonic() - started
        self.assertEqual(p.returncode, 1, p.stderr)  # Errored instances.
        got, _ = results(out)
        self.assertEqual(len(got), 6, sorted(got))
        ok = got["probe_ok/Eval/batch_size:1"]
        self.assertNotIn("error_occurred", ok)
        self.assertGreater(ok["iterations"], 0)
        expect = {
            "probe_segfault": "SIGSEGV",
            "probe_abort": "SIGABRT",
            "probe_exit": "exited with status 3",
            "probe_sigkill": "SIGKILL",
            "probe_hang": "timed out",
        }
        for model, text in expect.items():
            row = got[f"{model}/Eval/batch_size:1"]
            self.assertTrue(row.get("error_occurred"), row)
            self.assertIn(text, row["error_message"])
        self.assertIn("ERROR OCCURRED", p.stdout)
        print(f"isolated run of 6 probes (one 5 s timeout): {elapsed:.1f} s")

    def _interrupt_then_resume(self, isolate):
        journal = os.path.join(self.dir, "journal.jsonl")
        first = os.path.join(self.dir, "first.json")
        final = os.path.join(self.dir, "final.json")
        args = [f"--torchbench_isolate={isolate}", "--torchbench_batch_sizes=1,2,3,4,5,6",
                "--benchmark_filter=^probe_slow/"]
        proc = subprocess.Popen(
            [PROGRAM, *BASE, *args, f"--torchbench_journal={journal}",
             f"--benchmark_out={first}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if os.path.exists(journal) and len(journal_instances(journal)) >= 2:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 130, err)
        self.assertIn("--torchbench_resume=", err)
        done, _ = results(first)  # Valid JSON with what finished.
        self.assertGreaterEqual(len(done), 2)
        self.assertLess(len(done), 6)
        for row in done.values():
            self.assertNotIn("error_occurred", row)
        self.assertEqual(sorted(journal_instances(journal)), sorted(done))

        p = subprocess.run([PROGRAM, *BASE, *args, f"--torchbench_resume={journal}",
                            f"--benchmark_out={final}"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(f"{len(done)} instance(s) done", p.stderr)
        got, _ = results(final)
        names = [f"probe_slow/Eval/batch_size:{b}" for b in range(1, 7)]
        self.assertEqual(sorted(got), sorted(names))
        instances = journal_instances(journal)
        self.assertEqual(sorted(instances), sorted(names))  # Each once.
        for name in done:  # Reported from the journal, not rerun.
            self.assertEqual(got[name]["real_time"], done[name]["real_time"])
        if COMPARE_PY:  # Google Benchmark's compare.py reads both unchanged.
            c = subprocess.run([sys.executable, COMPARE_PY, "benchmarks", first, final],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(c.returncode, 0, c.stderr)
            for name in done:
                self.assertIn(name, c.stdout)

    def test_interrupt_and_resume_isolated(self):
        self._interrupt_then_resume("process")

    def test_interrupt_and_resume_in_process(self):
        self._interrupt_then_resume("none")

    def test_bad_journal_is_one_clear_message(self):
        journal = os.path.join(self.dir, "bad.jsonl")
        with open(journal, "w") as f:
            f.write("this is not a journal\n")
        p = run("--benchmark_filter=^probe_ok/", f"--torchbench_resume={journal}")
        self.assertEqual(p.returncode, 2)
        self.assertIn("is not a torchbench journal", p.stderr)
        # A journal from another setup is refused, not mixed in.
        good = os.path.join(self.dir, "good.jsonl")
        self.assertEqual(run("--benchmark_filter=^probe_ok/",
                             f"--torchbench_journal={good}").returncode, 0)
        p = run("--benchmark_filter=^probe_ok/", "--torchbench_seed=7",
                f"--torchbench_resume={good}")
        self.assertEqual(p.returncode, 2)
        self.assertIn("seed 1337 vs 7", p.stderr)


class Sharding(unittest.TestCase):
    def listed(self, *args, env=None):
        p = run("--torchbench_batch_sizes=1,2", "--benchmark_list_tests", *args,
                env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        return set(p.stdout.split())

    def test_shards_partition_the_run_by_model(self):
        everything = self.listed()
        shards = [self.listed(f"--torchbench_shard={i}/3") for i in range(3)]
        self.assertEqual(set().union(*shards), everything)
        self.assertEqual(sum(len(s) for s in shards), len(everything))
        for s in shards:
            models = {name.split("/")[0] for name in s}
            for other in shards:
                if other is not s:
                    self.assertFalse(models & {n.split("/")[0] for n in other})

    def test_scheduler_variables(self):
        env = dict(os.environ, SLURM_ARRAY_TASK_ID="5", SLURM_ARRAY_TASK_MIN="4",
                   SLURM_ARRAY_TASK_COUNT="3")
        self.assertEqual(self.listed(env=env), self.listed("--torchbench_shard=1/3"))
        env = dict(os.environ, JOB_COMPLETION_INDEX="2", TORCHBENCH_SHARD_COUNT="3")
        self.assertEqual(self.listed(env=env), self.listed("--torchbench_shard=2/3"))
        env = dict(os.environ, JOB_COMPLETION_INDEX="2")
        p = run("--benchmark_list_tests", env=env)
        self.assertEqual(p.returncode, 2)
        self.assertIn("TORCHBENCH_SHARD_COUNT", p.stderr)

    def test_empty_shard_writes_valid_json(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "s.json")
            # 7 probes over 9 shards: some shards get nothing.
            outs = []
            for i in range(9):
                p = run("--benchmark_filter=^probe_(ok|slow)/", f"--torchbench_shard={i}/9",
                        f"--benchmark_out={out}")
                self.assertEqual(p.returncode, 0, p.stderr)
                got, context = results(out)
                self.assertEqual(context["torchbench_shard"], f"{i}/9")
                planned = [n for n in context["torchbench_shard_instances"].split(",") if n]
                self.assertEqual(sorted(got), sorted(planned))
                outs.append(len(got))
            self.assertEqual(sum(outs), 2)


if __name__ == "__main__":
    PROGRAM = sys.argv.pop(1)
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        COMPARE_PY = sys.argv.pop(1)
    unittest.main(verbosity=2)
