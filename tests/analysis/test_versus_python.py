"""tools/versus_python.py (tools/tb versus-python): the C++ step beside the
Python reference step.

- the statistics (round medians, ratio spread, verdicts, geometric means)
  and the top-level operator count, on hand-made records and events;
- the driver on the real program and two small models: alexnet (a
  pip-referenced model, torchvision) and lennard_jones through a stand-in
  TorchBench checkout the test writes (its Model logs each construction);
  the program is wrapped by a script that logs each start, so the log shows
  the rounds interleaved C++ Py, Py C++, C++ Py; tools/tb report's section
  from its JSON;
- the journal: a rerun skips what it holds; --journal-only lists the rest
  as not measured;
- bad input: an unknown model, no reference root, a root without
  torchbenchmark/models, a bad --batch-size, a reference that fails (the
  run still writes its results): one line each, exit 2.

usage: test_versus_python.py PROGRAM   (unittest)
"""
import json
import os
import stat
import subprocess
import sys
import tempfile
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOOL = os.path.join(ROOT, "tools", "versus_python.py")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import versus_python  # noqa: E402  (tools/versus_python.py)

PROGRAM = None  # sys.argv[1]

# A stand-in for TorchBench's lennard_jones package: its MLP (the C++ port's
# parameter names and shapes) with TorchBench's Model interface; each
# construction appends "py" to the log.
STAND_IN = '''
import os
import torch


class Model:
    def __init__(self, test, device, batch_size=None, extra_args=()):
        with open(os.environ["VERSUS_TEST_LOG"], "a") as f:
            f.write("py\\n")
        self.test = test
        layers = [torch.nn.Linear(1, 16)]
        for _ in range(3):
            layers += [torch.nn.Tanh(), torch.nn.Linear(16, 16)]
        self.net = torch.nn.Sequential(*layers, torch.nn.Tanh(), torch.nn.Linear(16, 1))
        self.x = torch.randn(batch_size, 1)
        self.opt = torch.optim.SGD(self.net.parameters(), lr=1e-3)

    def get_module(self):
        return self.net, (self.x,)

    def eval_in_nograd(self):
        return True

    def train(self):
        self.opt.zero_grad()
        self.net(self.x).sum().backward()
        self.opt.step()

    def eval(self):
        return self.net(self.x)
'''

# A reference whose worker the kernel kills (as its out-of-memory killer
# does): SIGKILL leaves no traceback and no result line.
KILLED = '''
import os
import signal


class Model:
    def __init__(self, test, device, batch_size=None, extra_args=()):
        os.kill(os.getpid(), signal.SIGKILL)
'''

FAILING = '''
class Model:
    def __init__(self, test, device, batch_size=None, extra_args=()):
        raise RuntimeError("the stand-in reference fails on purpose")
'''


def record(cpp_rounds, py_rounds, **kw):
    r = {"cpp": {"rounds_ms": cpp_rounds}, "python": {"rounds_ms": py_rounds}}
    r.update(kw)
    return r


class Statistics(unittest.TestCase):
    def test_round_medians_ratio_and_spread(self):
        r = versus_python.summarize(record([[1, 2, 9], [2, 2, 2], [3, 3, 0]],
                                           [[4, 4, 4], [5, 1, 5], [4, 4, 4]]))
        # round medians: C++ 2, 2, 3; Python 4, 5, 4
        self.assertEqual(r["cpp"]["median_ms"], 2)
        self.assertEqual(r["python"]["median_ms"], 4)
        self.assertAlmostEqual(r["ratio"], 0.5)
        self.assertAlmostEqual(r["ratio_min"], 0.4)
        self.assertAlmostEqual(r["ratio_max"], 0.75)
        self.assertAlmostEqual(r["python_share"], 0.5)
        self.assertEqual(r["verdict"], "faster")

    def test_verdicts(self):
        v = versus_python.verdict
        self.assertEqual(v(1.20, 1.15, 1.25, 0.05), "slower")
        self.assertEqual(v(1.20, 0.95, 1.25, 0.05), "even")   # one round disagrees
        self.assertEqual(v(1.04, 1.03, 1.05, 0.05), "even")   # within the tolerance
        self.assertEqual(v(1.20, 1.01, 1.40, 0.05), "even")   # within the rounds' spread
        self.assertEqual(v(0.50, 0.45, 0.55, 0.05), "faster")

    def test_a_side_missing(self):
        r = versus_python.summarize(record([[1.0]], [], ))
        self.assertEqual(r["verdict"], "missing")
        self.assertNotIn("ratio", r)

    def test_geomean_per_domain(self):
        rows = [dict(record([[1]], [[4]]), threads=1, mode="Eval", domain="vision"),
                dict(record([[4]], [[1]]), threads=1, mode="Eval", domain="nlp"),
                dict(record([[1]], [[1]]), threads=1, mode="Eval", domain="nlp"),
                dict(record([[1]], []), threads=1, mode="Eval", domain="nlp"),
                dict(record([[1]], [[2]]), threads=2, mode="Eval", domain="nlp")]
        for r in rows:
            versus_python.summarize(r)
        groups = versus_python.aggregate(rows)
        self.assertEqual([(g["threads"], g["instances"], g["paired"]) for g in groups],
                         [(1, 4, 3), (2, 1, 1)])
        one = groups[0]
        self.assertAlmostEqual(one["geomean_ratio"], 1.0)  # (1/4 * 4 * 1) ** (1/3)
        self.assertAlmostEqual(one["domains"]["nlp"]["geomean_ratio"], 2.0)
        self.assertAlmostEqual(one["domains"]["vision"]["geomean_ratio"], 0.25)
        self.assertEqual(one["verdicts"], {"faster": 1, "even": 1, "slower": 1, "missing": 1})

    def test_top_level_ops(self):
        def ev(name, thread=1, scope=0, parent=None):
            return types.SimpleNamespace(name=name, thread=thread, scope=scope,
                                         cpu_parent=parent)
        linear = ev("aten::linear")
        engine = ev("autograd::engine::evaluate_function: AddmmBackward0")
        node = ev("AddmmBackward0", scope=1, parent=engine)
        user = ev("Optimizer.step#SGD.step", scope=7)
        events = [linear, ev("aten::addmm", parent=linear),           # nested: not counted
                  engine, node, ev("aten::mm", parent=node),          # under a node: counted
                  user, ev("aten::add_", parent=user),                 # under a user scope
                  ev("aten::sum", thread=2)]                           # another thread
        self.assertEqual(versus_python.top_level_ops(events, main_thread=1),
                         {"aten::linear": 1, "aten::mm": 1, "aten::add_": 1})
        self.assertEqual(sum(versus_python.top_level_ops(events).values()), 4)

    def test_host_malloc_environment(self):
        # Python gets glibc's tunables at the values the program's mallopt
        # sets; "glibc" clears them even where the caller had set them.
        saved = dict(os.environ)
        try:
            os.environ["MALLOC_TRIM_THRESHOLD_"] = "131072"
            env = versus_python.side_env(2, "retain")
            self.assertEqual(env["MALLOC_MMAP_THRESHOLD_"], "2147483647")
            self.assertEqual(env["MALLOC_TRIM_THRESHOLD_"], "2147483647")
            self.assertEqual(env["OMP_NUM_THREADS"], "2")
            env = versus_python.side_env(1, "glibc")
            self.assertNotIn("MALLOC_MMAP_THRESHOLD_", env)
            self.assertNotIn("MALLOC_TRIM_THRESHOLD_", env)
        finally:
            os.environ.clear()
            os.environ.update(saved)

    def test_why_a_side_ended(self):
        # A killed process's last stderr line is whatever it printed before
        # (Google Benchmark's DEBUG warning): the signal is the reason.
        done = subprocess.CompletedProcess
        why = versus_python.why_ended(
            done([], -9, "", "***WARNING*** Library was built as DEBUG.\n"))
        self.assertIn("killed by SIGKILL", why)
        self.assertIn("out-of-memory killer", why)
        self.assertNotIn("WARNING", why)
        self.assertEqual(versus_python.why_ended(done([], -11, "", "x\n")), "killed by SIGSEGV")
        self.assertEqual(versus_python.why_ended(done([], 1, "", "a\nlast words\n")),
                         "last words")
        self.assertEqual(versus_python.why_ended(done([], 3, "", "")), "exit status 3")

    def test_op_differences(self):
        r = record([[1]], [[1]])
        r["cpp"]["ops"] = {"aten::matmul": 97, "aten::t": 74, "aten::add_": 73, "aten::mul": 3}
        r["python"]["ops"] = {"aten::linear": 72, "aten::matmul": 25, "aten::mul": 3}
        self.assertEqual(versus_python.op_differences(r, 3),
                         [("aten::t", 74, 0), ("aten::add_", 73, 0), ("aten::linear", 0, 72)])


class Driver(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        t = cls.tmp.name
        cls.log = os.path.join(t, "starts.log")
        cls.checkout = os.path.join(t, "checkout")
        for name, code in (("lennard_jones", STAND_IN), ("pyhpc_equation_of_state", FAILING),
                           ("dlrm", STAND_IN), ("pyhpc_isoneutral_mixing", KILLED)):
            folder = os.path.join(cls.checkout, "torchbenchmark", "models", name)
            os.makedirs(folder)
            with open(os.path.join(folder, "__init__.py"), "w") as f:
                f.write(code)
        # The program, wrapped: each timed run appends "cpp" to the log.
        cls.wrapper = os.path.join(t, "torchbench")
        with open(cls.wrapper, "w") as f:
            f.write(f'#!/bin/sh\ncase "$*" in *--torchbench_weights=*) side=cpp+weights;; '
                    f'*) side=cpp;; esac\n'
                    f'case "$*" in *--benchmark_out=*) echo $side >> "{cls.log}";; esac\n'
                    f'exec "{os.path.abspath(PROGRAM)}" "$@"\n')
        os.chmod(cls.wrapper, os.stat(cls.wrapper).st_mode | stat.S_IEXEC)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_tool(self, *args, env_root=None):
        env = dict(os.environ, VERSUS_TEST_LOG=self.log)
        env.pop("TORCHBENCH_REFERENCE_ROOT", None)
        if env_root:
            env["TORCHBENCH_REFERENCE_ROOT"] = env_root
        return subprocess.run([sys.executable, TOOL, "--binary", self.wrapper, *args],
                              capture_output=True, text=True, env=env, timeout=600)

    def test_two_models_interleaved(self):
        if os.path.exists(self.log):
            os.remove(self.log)
        out = os.path.join(self.tmp.name, "lj.json")
        md = os.path.join(self.tmp.name, "lj.md")
        proc = self.run_tool("lennard_jones", "--mode", "eval", "--rounds", "3", "--steps", "3",
                             "--reference-root", self.checkout, "-o", out, "--markdown", md)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(self.log) as f:
            starts = f.read().split()
        self.assertEqual(starts, ["cpp", "py", "py", "cpp", "cpp", "py"])
        with open(out) as f:
            doc = json.load(f)
        self.assertEqual(doc["tool"], versus_python.TOOL)
        (r,) = doc["results"]
        self.assertEqual(r["benchmark"], "lennard_jones/Eval/batch_size:1")
        self.assertEqual(r["reference"], "torchbench")
        for side in ("cpp", "python"):
            self.assertEqual([len(x) for x in r[side]["rounds_ms"]], [3, 3, 3])
            self.assertGreater(r[side]["aten_ops"], 0)
            self.assertEqual(sum(r[side]["ops"].values()), r[side]["aten_ops"])
        self.assertAlmostEqual(r["ratio"], r["cpp"]["median_ms"] / r["python"]["median_ms"])
        self.assertLessEqual(r["ratio_min"], r["ratio_max"])
        self.assertEqual(doc["summary"][0]["domains"]["science"]["instances"], 1)
        self.assertEqual(doc["context"]["host_malloc"], "retain")
        with open(md) as f:
            text = f.read()
        self.assertIn("lennard_jones --mode eval --rounds 3 --steps 3", text)
        self.assertIn("| lennard_jones/Eval/batch_size:1 | 1 | torchbench |", text)
        self.assertIn("host malloc retain on both sides", text)
        self.assertIn("Python step (cpu, batch 1, 1 thread(s))", text)
        # tools/tb report's section from the same file.
        page = os.path.join(self.tmp.name, "lj.html")
        proc = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "report.py"), out,
                               "-o", page], capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(page) as f:
            text = f.read()
        self.assertIn('<section id="versus"><h2>1. C++ against Python</h2>', text)
        self.assertIn("<td class=\"\">lennard_jones/Eval/batch_size:1</td>", text)

    def test_journal(self):
        journal = os.path.join(self.tmp.name, "journal.jsonl")
        common = ["lennard_jones", "--rounds", "1", "--steps", "1", "--reference-root",
                  self.checkout, "--journal", journal]
        self.assertEqual(self.run_tool(*common, "--mode", "eval").returncode, 0)
        if os.path.exists(self.log):
            os.remove(self.log)
        # A damaged line and a torn last line (a run killed mid-append) are
        # skipped, each in one line naming journal:LINE; the record before
        # them is kept.
        with open(journal, "a") as f:
            f.write('{"benchmark": garbage}\n{"benchmark": "lennard_jones/Train/batch_')
        # A rerun skips what the journal holds: nothing starts.
        proc = self.run_tool(*common, "--mode", "eval")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertFalse(os.path.exists(self.log))
        self.assertIn("lennard_jones/Eval/batch_size:1", proc.stdout)
        skipped = [l for l in proc.stderr.splitlines() if "skipped" in l]
        self.assertEqual(len(skipped), 2, proc.stderr)
        self.assertTrue(skipped[0].startswith(f"versus-python: warning: {journal}:2: skipped: "
                                              "not valid JSON"), skipped[0])
        self.assertTrue(skipped[1].startswith(f"versus-python: note: {journal}:3: skipped: "
                                              "cut short"), skipped[1])
        # --journal-only: Train was never measured, and says so.
        out = os.path.join(self.tmp.name, "journal.json")
        proc = self.run_tool(*common, "--journal-only", "-o", out)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertFalse(os.path.exists(self.log))
        with open(out) as f:
            rows = {r["mode"]: r for r in json.load(f)["results"]}
        self.assertIn("ratio", rows["Eval"])
        self.assertIn("not measured yet", rows["Train"]["not_measured"])

    def measure_shared(self, model, mode="Eval"):
        """versus_python.measure on `model` as if it were a SHARED_WEIGHTS
        model: the log of starts and the record."""
        if os.path.exists(self.log):
            os.remove(self.log)
        args = versus_python.parse_args(["--rounds", "2", "--steps", "1",
                                         "--one-round-above", "0", "--timeout", "300"])
        saved = versus_python.SHARED_WEIGHTS
        versus_python.SHARED_WEIGHTS = {model}
        os.environ["VERSUS_TEST_LOG"] = self.log
        try:
            r = versus_python.measure(self.wrapper, f"{model}/{mode}/batch_size:1",
                                      {"domain": "test"}, "torchbench", 1, args, self.checkout)
        finally:
            versus_python.SHARED_WEIGHTS = saved
            del os.environ["VERSUS_TEST_LOG"]
        if not os.path.exists(self.log):
            return [], r
        with open(self.log) as f:
            return f.read().split(), r

    def test_shared_weights(self):
        # Python's first round writes its module's weights, and every C++
        # round loads them: Python starts the first round.
        starts, r = self.measure_shared("lennard_jones")
        self.assertEqual(starts, ["py", "cpp+weights", "cpp+weights", "py"])
        self.assertEqual(r["weights"], "shared")
        self.assertNotIn("error", r["cpp"])
        self.assertEqual(len(r["cpp"]["rounds_ms"]), 2)
        # Weights that do not fit the C++ module: that side fails with the
        # keys that differ, in one line.
        starts, r = self.measure_shared("dlrm")
        self.assertIn("--torchbench_weights", r["cpp"]["error"])
        self.assertIn("missing keys", r["cpp"]["error"])
        self.assertEqual(r["verdict"], "missing")
        # A Python side that fails before writing them: the C++ side is not
        # started, and the row says why Python failed.
        starts, r = self.measure_shared("pyhpc_equation_of_state")
        self.assertEqual(starts, [])
        self.assertIn("fails on purpose", r["python"]["error"])
        self.assertNotIn("error", r["cpp"])
        # A Python worker the kernel kills: the row says by what.
        starts, r = self.measure_shared("pyhpc_isoneutral_mixing")
        self.assertEqual(starts, [])
        self.assertIn("the worker died (killed by SIGKILL", r["python"]["error"])
        # Known to take hours on a CPU: nothing starts, and the row says why.
        starts, r = self.measure_shared("detectron2_maskrcnn")
        self.assertEqual(starts, [])
        self.assertIn("100 prefetched COCO batches", r["python"]["error"])
        self.assertEqual(r["verdict"], "missing")
        # Train keeps each side's own weights, in the usual order.
        starts, r = self.measure_shared("lennard_jones", "Train")
        self.assertEqual(starts, ["cpp", "py", "py", "cpp"])
        self.assertNotIn("weights", r)

    def test_pip_referenced_model(self):
        proc = self.run_tool("alexnet", "--mode", "eval", "--rounds", "1", "--steps", "2")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        row = [x for x in proc.stdout.splitlines() if x.startswith("alexnet/Eval")]
        self.assertEqual(len(row), 1, proc.stdout)
        self.assertNotIn("error", row[0])

    def assert_one_line(self, proc, text, code=2):
        self.assertEqual(proc.returncode, code, proc.stderr)
        lines = [x for x in proc.stderr.splitlines() if x.startswith("versus-python:")]
        self.assertTrue(any(text in x for x in lines), proc.stderr)
        self.assertNotIn("Traceback", proc.stderr)

    def test_bad_input(self):
        self.assert_one_line(self.run_tool("no_such_model"), "unknown model no_such_model")
        self.assert_one_line(self.run_tool("lennard_jones"), "pass --reference-root")
        self.assert_one_line(self.run_tool("lennard_jones", "--reference-root", self.tmp.name),
                             "no torchbenchmark/models/")
        self.assert_one_line(self.run_tool("alexnet", "--batch-size", "0"),
                             "--batch-size must be a positive integer")
        self.assert_one_line(self.run_tool("alexnet", "--threads", "x"),
                             "--threads must be")

    def test_a_failing_reference(self):
        out = os.path.join(self.tmp.name, "fail.json")
        proc = self.run_tool("pyhpc_equation_of_state", "--mode", "eval", "--rounds", "2",
                             "--steps", "1", "-o", out, env_root=self.checkout)
        self.assert_one_line(proc, "the Python reference failed: RuntimeError: the stand-in "
                             "reference fails on purpose")
        with open(out) as f:
            (r,) = json.load(f)["results"]
        self.assertEqual(r["verdict"], "missing")
        self.assertEqual(len(r["cpp"]["rounds_ms"]), 1)  # no second round without a partner


if __name__ == "__main__":
    PROGRAM = sys.argv.pop(1)
    unittest.main()
