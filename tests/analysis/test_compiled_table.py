"""tools/compiled_table.py (tools/tb compiled-table) on a hand-made packages'
folder and a stand-in program (fake_compiled_program.py): the medians over
rounds, the speed-ups, their geometric means per domain, the get_module mark,
the failures grouped by phase and cause, the slow-downs with their hand-written
cause, the backends' order rotated per round, a program call that crashes; bad
input (no index, another thread count, an unknown model, no program) is one
line and exit status 2 before any measurement; --render re-reads the
manifests' Python times into an earlier run's table without a program call.

usage: test_compiled_table.py   (unittest; runs tools/compiled_table.py in this interpreter)
"""
import contextlib
import io
import json
import math
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tools"))

import compiled_table  # noqa: E402

FAKE = os.path.join(HERE, "fake_compiled_program.py")
TRACE_FAILED = "RuntimeError: Tracer cannot infer type of output (a dict of lists)"


def ok(**extra):
    return {"status": "ok", **extra}


def failed(phase, reason):
    return {"status": "failed", "phase": phase, "reason": reason}


# model: (batch, reference, compiled_forward, backends, extra manifest fields)
PACKAGES = {
    "resnet18": (1, "pip:torchvision", "reference_forward",
                 {"aoti": ok(file="aoti.pt2", export_seconds=2.0, compile_seconds=10.5,
                             python_ms=[6.0, 6.0, 7.0]),
                  "torchscript": ok(file="torchscript.pt", trace_seconds=1.0,
                                    freeze_seconds=0.5)},
                 {"python_eager_ms": [12.0, 13.0, 11.0],
                  "python_compile": {"status": "ok", "compile_seconds": 30.0,
                                     "ms": [4.0, 4.0, 4.0]}}),
    "bert": (2, "pip:transformers", "reference_forward",
             {"aoti": failed("export", "non-strict: torch._dynamo.exc.UserError: "
                             "Could not guard on data-dependent expression u0 < 4"),
              "torchscript": ok(file="torchscript.pt", trace_seconds=3.0)},
             {"python_eager_ms": [40.0]}),
    "dlrm": (1, "torchbench", "get_module",
             {"aoti": ok(file="aoti.pt2", export_seconds=1.0, compile_seconds=5.0),
              "torchscript": ok(file="torchscript.pt", trace_seconds=1.0)},
             {"python_eager_ms": [15.0]}),
    "slowpoke": (1, "pip:transformers", "reference_forward",
                 {"aoti": ok(file="aoti.pt2", export_seconds=1.0, compile_seconds=1.0),
                  "torchscript": failed("trace", TRACE_FAILED)}, {}),
    "yolo": (4, "torchbench", "get_module",
             {"aoti": ok(file="aoti.pt2", export_seconds=1.0, compile_seconds=9.0),
              "torchscript": failed("trace", TRACE_FAILED + " in yolo's head")},
             {"python_eager_ms": [50.0]}),
}

FIDELITY = ("compiled fidelity check failed: compiled outputs differ from Python eager's "
            "by 0.012 (largest relative error; fp32 bound 0.0001)")
TIMES = {
    # resnet18's eager step drifts over the three calls: the median is 11.
    "eager": {"resnet18/Eval/batch_size:1": [10.0, 12.0, 11.0], "bert/Eval/batch_size:2": 30.0,
              "dlrm/Eval/batch_size:1": 20.0, "slowpoke/Eval/batch_size:1": 10.0,
              "yolo/Eval/batch_size:4": 40.0},
    "aoti": {"resnet18/Eval/batch_size:1": 5.0, "dlrm/Eval/batch_size:1": 10.0,
             "slowpoke/Eval/batch_size:1": 20.0, "yolo/Eval/batch_size:4": "error: " + FIDELITY},
    "torchscript": {"resnet18/Eval/batch_size:1": 8.0, "bert/Eval/batch_size:2": 25.0,
                    "dlrm/Eval/batch_size:1": 25.0},
}


def make_packages(root, threads=1):
    entries = []
    for model, (batch, reference, forward, backends, extra) in PACKAGES.items():
        path = f"{model}/batch_size_{batch}"
        os.makedirs(os.path.join(root, path))
        manifest = {"format": 1, "model": model, "mode": "Eval", "batch_size": batch,
                    "device": "cpu", "torch_version": "2.14.1+cpu", "threads": threads,
                    "cpu_flags": ["avx2"], "reference": reference, "compiled_forward": forward,
                    "backends": backends, **extra}
        with open(os.path.join(root, path, "manifest.json"), "w") as f:
            json.dump(manifest, f)
        for backend, entry in backends.items():
            entries.append({"model": model, "batch_size": batch, "backend": backend,
                            "status": entry["status"], "path": path,
                            **{k: v for k, v in entry.items() if k in ("phase", "reason")}})
    with open(os.path.join(root, "index.json"), "w") as f:
        json.dump({"format": 1, "made_with": "tools/tb compile --time-python -o DIR",
                   "date": "2026-12-06 10:00", "torch_version": "2.14.1+cpu",
                   "threads": threads, "entries": entries}, f)
    with open(os.path.join(root, "causes.json"), "w") as f:
        json.dump({"slowpoke": "a hand-written cause: its attention stays unfused"}, f)


def run_tool(*argv):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            status = compiled_table.main(list(argv))
        except SystemExit as e:  # argparse's usage errors
            status = e.code
    return status, err.getvalue()


class CompiledTableTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = os.path.join(self.tmp.name, "compiled")
        make_packages(self.dir)
        self.log = os.path.join(self.tmp.name, "calls.jsonl")
        self.out = os.path.join(self.tmp.name, "table.json")
        self.md = os.path.join(self.tmp.name, "table.md")
        os.environ["FAKE_COMPILED_LOG"] = self.log
        os.environ["FAKE_COMPILED_TIMES"] = json.dumps(TIMES)

    def tearDown(self):
        for key in ("FAKE_COMPILED_LOG", "FAKE_COMPILED_TIMES"):
            os.environ.pop(key, None)
        self.tmp.cleanup()

    def calls(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return [json.loads(line) for line in f]

    def backends_called(self):
        return [next(a.split("=", 1)[1] for a in c["argv"]
                     if a.startswith("--torchbench_backend=")) for c in self.calls()]

    def measure(self, *extra):
        status, err = run_tool(self.dir, "--binary", FAKE, "--rounds", "3", "--repetitions",
                               "2", "--min-time", "0.1", "-o", self.out, "--markdown",
                               self.md, *extra)
        self.assertEqual(status, 0, err)
        with open(self.out) as f:
            doc = json.load(f)
        with open(self.md) as f:
            text = f.read()
        return doc, text, {r["model"]: r for r in doc["results"]}

    def test_table(self):
        doc, text, rows = self.measure()
        # The order rotates per round; each backend is one call over its instances.
        self.assertEqual(self.backends_called(), ["eager", "aoti", "torchscript",
                                                  "aoti", "torchscript", "eager",
                                                  "torchscript", "eager", "aoti"])
        self.assertEqual({c["threads"] for c in self.calls()}, {"1"})
        first = self.calls()[0]["argv"]
        self.assertIn("--torchbench_isolate=process", first)
        self.assertIn("--benchmark_repetitions=2", first)
        self.assertIn("--torchbench_batch_sizes=1,2,4", first)
        aoti = self.calls()[1]["argv"]
        self.assertIn(f"--torchbench_compiled={os.path.abspath(self.dir)}", aoti)
        # Not run: bert's AOTI (failed export), slowpoke's and yolo's TorchScript.
        self.assertNotIn("bert", next(a for a in aoti if a.startswith("--benchmark_filter")))
        self.assertEqual(doc["context"]["orders"][1], ["aoti", "torchscript", "eager"])
        self.assertEqual(doc["context"]["rounds_done"], 3)

        r = rows["resnet18"]
        self.assertEqual(r["runs"]["eager"]["rounds_ms"], [10.0, 12.0, 11.0])
        self.assertEqual(r["runs"]["eager"]["rounds"][0]["ms"], [10.0, 10.0])  # every repetition
        self.assertEqual(r["times_ms"]["eager"], 11.0)
        self.assertAlmostEqual(r["speedups"]["aoti"], 2.2)
        self.assertAlmostEqual(r["speedups"]["torchscript"], 1.375)
        self.assertAlmostEqual(r["speedups"]["python_eager"], 11 / 12, places=4)
        self.assertAlmostEqual(r["speedups"]["python_aoti"], 11 / 6, places=4)
        self.assertAlmostEqual(r["speedups"]["python_compile"], 2.75)
        self.assertAlmostEqual(r["speedups"]["aoti_vs_python_eager"], 2.4)
        self.assertEqual(r["compiled"]["aoti"]["seconds"], 12.5)
        self.assertEqual(r["fidelity"]["aoti"], {"compiled_error_vs_python": 1e-7,
                                                 "compiled_error_vs_port": 2e-7})
        self.assertEqual(r["domain"], "vision")
        self.assertEqual(rows["bert"]["status"]["aoti"]["status"], "compile failed")
        self.assertIsNone(rows["bert"]["speedups"]["aoti"])
        self.assertEqual(rows["yolo"]["status"]["aoti"],
                         {"status": "run failed", "error": FIDELITY})

        s = doc["summary"]
        g = s["geomeans"]
        # dlrm's package is its get_module forward: left out of the speed-ups
        # over C++ eager (its C++ eager step is TorchBench's eval()).
        self.assertAlmostEqual(g["all"]["speedups"]["aoti"]["geomean"],
                               (2.2 * 0.5) ** (1 / 2), places=3)
        self.assertEqual(g["all"]["speedups"]["aoti"]["instances"], 2)
        self.assertEqual(g["all"]["speedups"]["aoti"]["marked"], 1)
        self.assertAlmostEqual(g["vision"]["speedups"]["aoti"]["geomean"], 2.2)
        self.assertIsNone(g["recommendation"]["speedups"]["torchscript"]["geomean"])
        self.assertEqual(g["recommendation"]["speedups"]["torchscript"]["marked"], 1)
        self.assertAlmostEqual(g["nlp"]["speedups"]["torchscript"]["geomean"], 1.2)
        self.assertEqual(g["all"]["speedups"]["aoti_vs_python_eager"]["marked"], 0)
        self.assertEqual(s["counts"]["aoti"], {"ok": 3, "compile failed": 1, "run failed": 1,
                                               "not run": 0})
        self.assertEqual(s["counts"]["torchscript"], {"ok": 3, "compile failed": 2,
                                                      "run failed": 0, "not run": 0})
        groups = {(f["backend"], f["phase"], f["cause"]): f["instances"] for f in s["failures"]}
        self.assertEqual(groups[("torchscript", "compile: trace",
                                 "RuntimeError: Tracer cannot infer type of")],
                         ["slowpoke/Eval/batch_size:1", "yolo/Eval/batch_size:4"])
        self.assertEqual(groups[("aoti", "compile: export",
                                 "non-strict: torch._dynamo.exc.UserError: Could not guard on")],
                         ["bert/Eval/batch_size:2"])
        self.assertEqual(groups[("aoti", "C++ compiled fidelity check failed",
                                 "compiled outputs differ from Python eager's")],
                         ["yolo/Eval/batch_size:4"])
        self.assertEqual(s["failures"][0]["instances"],
                         ["slowpoke/Eval/batch_size:1", "yolo/Eval/batch_size:4"])
        slow = [(d["model"], d["comparison"], d["speedup"], d["cause"]) for d in s["slowdowns"]]
        self.assertEqual(slow, [
            ("slowpoke", "aoti", 0.5, "a hand-written cause: its attention stays unfused"),
            ("dlrm", "torchscript", 0.8, None)])

        self.assertIn("Generated ", text)
        self.assertIn("by `tools/tb compiled-table DIR --binary "
                      "tests/analysis/fake_compiled_program.py --rounds 3 --repetitions 2 "
                      "--min-time 0.1 -o OUT.json --markdown OUT.md`", text)
        self.assertIn("back to back with compiling", text)
        self.assertIn("with `tools/tb compile --time-python -o DIR`", text)
        self.assertIn("| **all** | 5 | 1.05× (2; 1† left out) |", text)
        line = next(l for l in text.splitlines() if l.startswith("| dlrm †"))
        self.assertIn("| 20.0 | 10.0 (2.00×†) | 25.0 (0.80×†) | 15.0 (1.33×†) |", line)
        self.assertIn("| 1.50× |", line)  # AOTI vs Py eager: no mark
        line = next(l for l in text.splitlines() if l.startswith("| resnet18 |"))
        self.assertIn("| 11.0 | 5.00 (2.20×) | 8.00 (1.38×) | 12.0 (0.92×) | 6.00 (1.83×) | "
                      "4.00 (2.75×) | 2.40× | 12.5 / 1.5 / 30.0 | ok | "
                      "AOTI 1.0e-07 / 2.0e-07; TS 1.0e-07 / 2.0e-07 |", line)
        line = next(l for l in text.splitlines() if l.startswith("| yolo †"))
        self.assertIn("AOTI run failed: compiled fidelity check failed", line)
        self.assertIn("TS failed at trace: RuntimeError: Tracer cannot infer", line)
        self.assertIn("| slowpoke/Eval/batch_size:1 | C++ AOTI | 0.50× | 10.0, 20.0 | "
                      "a hand-written cause: its attention stays unfused |", text)
        self.assertIn("| dlrm/Eval/batch_size:1 | C++ TorchScript | 0.80×† | 20.0, 25.0 | — |",
                      text)
        self.assertIn("| torchscript | compile: trace | RuntimeError: Tracer cannot infer type "
                      "of | 2 | slowpoke/Eval/batch_size:1, yolo/Eval/batch_size:4 |",
                      text.replace("C++ TorchScript", "torchscript"))
        # One JSON per call, kept beside -o.
        runs = os.path.join(self.tmp.name, "table.runs")
        self.assertEqual(len([n for n in os.listdir(runs) if n.endswith(".json")]), 9)

    def test_a_call_that_crashes(self):
        os.environ["FAKE_COMPILED_TIMES"] = json.dumps({**TIMES, "torchscript": "crash"})
        doc, text, rows = self.measure("resnet18", "dlrm")
        self.assertEqual([r["model"] for r in doc["results"]], ["dlrm", "resnet18"])
        s = rows["dlrm"]["status"]["torchscript"]
        self.assertEqual(s["status"], "run failed")
        self.assertIn("the program failed (exit 3): torchbench: terminate called", s["error"])
        self.assertAlmostEqual(rows["resnet18"]["speedups"]["aoti"], 2.2)
        self.assertEqual(doc["summary"]["counts"]["torchscript"]["run failed"], 2)
        self.assertEqual(len(self.calls()), 9)

    def test_a_package_of_other_threads(self):
        path = os.path.join(self.dir, "dlrm", "batch_size_1", "manifest.json")
        with open(path) as f:
            manifest = json.load(f)
        with open(path, "w") as f:
            json.dump({**manifest, "threads": 2}, f)
        doc, text, rows = self.measure("dlrm", "--rounds", "1")
        self.assertEqual(self.backends_called(), ["eager"])
        s = rows["dlrm"]["status"]["aoti"]
        self.assertEqual(s["status"], "not run")
        self.assertIn("compiled at 2 thread(s), this table runs 1", s["reason"])
        self.assertIn("AOTI not run (compiled at 2 thread(s)", text)
        self.assertEqual(doc["summary"]["counts"]["torchscript"]["not run"], 1)

    def test_render(self):
        doc, text, rows = self.measure()
        calls = len(self.calls())
        # `tools/tb compile --time-only` fills slowpoke's Python times afterwards.
        path = os.path.join(self.dir, "slowpoke", "batch_size_1", "manifest.json")
        with open(path) as f:
            manifest = json.load(f)
        manifest["python_eager_ms"] = [40.0, 41.0, 39.0]
        manifest["backends"]["aoti"]["python_ms"] = [15.0]
        manifest["python_compile"] = {"status": "ok", "compile_seconds": 20.0, "ms": [8.0]}
        with open(path, "w") as f:
            json.dump(manifest, f)
        index = os.path.join(self.dir, "index.json")
        with open(index) as f:
            made = json.load(f)
        with open(index, "w") as f:
            json.dump({**made, "python_times_made_with": "tools/tb compile --time-only -o DIR",
                       "python_times_date": "2026-12-07 09:00"}, f)
        status, err = run_tool("--render", self.out, "--markdown", self.md)
        self.assertEqual(status, 0, err)
        self.assertEqual(len(self.calls()), calls)  # no program call
        with open(self.out) as f:
            again = json.load(f)
        with open(self.md) as f:
            text = f.read()
        after = {r["model"]: r for r in again["results"]}
        for model, r in rows.items():
            self.assertEqual(after[model]["runs"], r["runs"])
            for backend in compiled_table.BACKENDS:
                self.assertEqual(after[model]["times_ms"][backend], r["times_ms"][backend])
        self.assertEqual(after["resnet18"]["times_ms"], rows["resnet18"]["times_ms"])
        self.assertIsNone(rows["slowpoke"]["times_ms"]["python_eager"])
        r = after["slowpoke"]
        self.assertEqual(r["times_ms"]["python_eager"], 40.0)
        self.assertEqual(r["times_ms"]["python_aoti"], 15.0)
        self.assertEqual(r["times_ms"]["python_compile"], 8.0)
        self.assertAlmostEqual(r["speedups"]["python_eager"], 0.25)
        self.assertAlmostEqual(r["speedups"]["aoti_vs_python_eager"], 2.0)
        self.assertEqual(r["status"]["python_compile"], {"status": "ok"})
        self.assertEqual(again["summary"]["counts"]["python_compile"]["ok"], 2)
        line = next(l for l in text.splitlines() if l.startswith("| slowpoke |"))
        self.assertIn("| 10.0 | 20.0 (0.50×) | — | 40.0 (0.25×) | 15.0 (0.67×) | "
                      "8.00 (1.25×) | 2.00× |", line)
        # The head: the measuring command and date as they were, then the render.
        ctx = again["context"]
        self.assertEqual((ctx["date"], ctx["command"]),
                         (doc["context"]["date"], doc["context"]["command"]))
        self.assertIn(f"Generated {ctx['date']} by `tools/tb compiled-table DIR --binary "
                      "tests/analysis/fake_compiled_program.py --rounds 3 --repetitions 2 "
                      "--min-time 0.1 -o OUT.json --markdown OUT.md`", text)
        self.assertIn(f"Re-rendered {ctx['rendered']['date']} by `tools/tb compiled-table "
                      "--render OUT.json --markdown OUT.md`", text)
        self.assertIn("from the manifests as they are now", text)
        self.assertIn("by `tools/tb compile --time-only -o DIR` (2026-12-07 09:00)", text)
        # DIR given, the JSON elsewhere (-o): the same table; the input stays.
        other = os.path.join(self.tmp.name, "other.json")
        status, err = run_tool(self.dir, "--render", self.out, "-o", other)
        self.assertEqual(status, 0, err)
        with open(other) as f:
            self.assertEqual(json.load(f)["results"], again["results"])
        self.assertEqual(len(self.calls()), calls)
        # An older JSON without "directory": the DIR of its command, from the root.
        self.assertEqual(compiled_table.recorded_directory(
            {"command": "tools/tb compiled-table compiled --rounds 2 -o x.json"}),
            os.path.join(compiled_table.vp.ROOT, "compiled"))
        self.assertIsNone(compiled_table.recorded_directory({"command": ctx["command"]}))

    def test_bad_input(self):
        def refused(*argv, words):
            status, err = run_tool(*argv)
            self.assertEqual(status, 2, err)
            self.assertEqual(len(err.strip().splitlines()), 1, err)
            self.assertIn(words, err)
        refused(self.tmp.name, "--binary", FAKE, words="no index.json")
        refused(self.dir, "--binary", FAKE, "--threads", "2",
                words="compiled at 1 thread(s); --threads 2 cannot run them")
        refused(self.dir, "--binary", FAKE, "alexnet", words="alexnet: not in")
        refused(self.dir, "--binary", os.path.join(self.tmp.name, "nothing"),
                words="no program at")
        refused(self.dir, "--rounds", "0", words="--rounds must be positive")
        refused("--binary", FAKE, words="DIR is required")
        refused("--render", self.out, words="no table")
        refused("--render", self.out, self.dir, "resnet18", words="no MODEL (resnet18)")
        refused("--render", self.out, "--rounds", "2", words="--rounds do(es) not apply")
        with open(self.out, "w") as f:
            json.dump({"tool": "versus-python"}, f)
        refused("--render", self.out, words="not a table tools/tb compiled-table wrote")
        with open(self.out, "w") as f:
            json.dump({"tool": "compiled-table", "context": {"command": "tools/tb "
                       "compiled-table DIR"}, "results": []}, f)
        refused("--render", self.out, words="does not say which DIR it measured")
        os.unlink(self.out)
        self.assertEqual(self.calls(), [])
        self.assertFalse(os.path.exists(self.out))

    def test_published_command(self):
        root = compiled_table.vp.ROOT
        self.assertEqual(
            compiled_table.published_command(["/elsewhere/pk", "--threads", "1", "resnet18",
                                              "-o", "/x/y.json"]),
            "tools/tb compiled-table DIR --threads 1 resnet18 -o OUT.json")
        self.assertEqual(
            compiled_table.published_command(["--rounds=2", os.path.join(root, "compiled")]),
            "tools/tb compiled-table --rounds=2 compiled")
        self.assertEqual(
            compiled_table.published_command(["--runs", "/tmp/r", "/tmp/p", "m",
                                              "--runs=/tmp/s", "--markdown=/tmp/t.md"]),
            "tools/tb compiled-table --runs RUNS DIR m --runs=RUNS --markdown=OUT.md")
        self.assertEqual(compiled_table.order_of(4), ["aoti", "torchscript", "eager"])
        self.assertTrue(math.isclose(compiled_table.results.geomean([2.0, 0.5]), 1.0))


if __name__ == "__main__":
    unittest.main()
