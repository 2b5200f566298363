"""tools/abtest.py (tools/tb abtest): two LibTorch builds, the same
benchmarks, and the operator behind each change.

- the A/B driver on two fake programs (fake_abtest_program.py): B's
  slowpoke benchmark is 20 % slower through one operator; the runs
  interleave A B | B A, each pinned with its thread count; the gate flags
  slowpoke alone and the diff gives the change to that operator; ops that
  appear or disappear and per-step counters that moved are listed; exit 1;
- the op-level diff and its shares on hand-made profile tables;
- the report's structure (Markdown, JSON and tools/tb report's page);
- bad input, one line and exit 2: a release that does not exist (pip on an
  empty local index: nothing is downloaded), a build that fails (a LibTorch
  folder of an unsupported release; a compiler's error line), mismatched
  selections (and --common-only), an unknown --torch;
- the real program against itself with --torchbench_testonly_slow_op on B:
  the diff puts the change on the slowed operator.

usage: test_abtest.py PROGRAM   (unittest)
"""
import json
import os
import stat
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOOL = os.path.join(ROOT, "tools", "abtest.py")
FAKE = os.path.join(HERE, "fake_abtest_program.py")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import abtest  # noqa: E402  (tools/abtest.py)

PROGRAM = None  # sys.argv[1]


def wrapper(directory, name, *settings):
    """An executable that runs the fake program with its own settings."""
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write("#!/bin/sh\nexec {} {} {} \"$@\"\n".format(
            sys.executable, FAKE, " ".join(settings)))
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


def run(args, env=None):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=600)


class OpDiff(unittest.TestCase):
    def test_shares_sorting_appear_disappear_counters(self):
        a = {"ops": {"aten::mm": {"self_us": 100.0, "calls": 4},
                     "aten::add": {"self_us": 50.0, "calls": 10},
                     "aten::old": {"self_us": 5.0, "calls": 1}},
             "counters": {"aten_ops_per_step": 15, "would_sync_per_step": 0}}
        b = {"ops": {"aten::mm": {"self_us": 180.0, "calls": 4},
                     "aten::add": {"self_us": 45.0, "calls": 12},
                     "aten::new": {"self_us": 25.0, "calls": 2}},
             "counters": {"aten_ops_per_step": 18, "would_sync_per_step": 0}}
        d = abtest.op_diff(a, b, step_change_us=100.0)
        self.assertEqual([r["op"] for r in d["ops"]],
                         ["aten::mm", "aten::new", "aten::add", "aten::old"])
        self.assertAlmostEqual(d["ops"][0]["share"], 0.8)
        self.assertAlmostEqual(d["ops"][1]["share"], 0.25)
        self.assertAlmostEqual(d["ops"][2]["share"], -0.05)
        self.assertEqual(d["appeared"], ["aten::new"])
        self.assertEqual(d["disappeared"], ["aten::old"])
        self.assertEqual(d["calls_changed"], ["aten::add"])
        self.assertAlmostEqual(d["explained_share"], 0.95)
        self.assertEqual(d["counters"], {"aten_ops_per_step": {"a": 15, "b": 18}})
        self.assertIsNone(abtest.op_diff(a, b, step_change_us=None)["ops"][0]["share"])

    def test_call_signature_from_a_trace(self):
        with tempfile.TemporaryDirectory() as tmp:
            trace = os.path.join(tmp, "t.json")
            mm = {"ph": "X", "name": "aten::mm", "cat": "cpu_op", "dur": 10,
                  "args": {"Input Dims": [[8, 4], [4, 2]], "Input type": ["float", "float"],
                           "Input Strides": [[4, 1], [2, 1]], "Concrete Inputs": ["", ""]}}
            small = json.loads(json.dumps(mm))
            small["args"]["Input Dims"] = [[2, 4], [4, 2]]
            events = [{"ph": "X", "name": "ProfilerStep#0", "ts": 0, "dur": 100},
                      {**mm, "ts": 1}, {**mm, "ts": 20}, {**small, "ts": 40, "dur": 15},
                      {**mm, "ts": 500}]  # outside the profiled step: left out
            with open(trace, "w") as f:
                json.dump({"traceEvents": events}, f)
            sigs = abtest.op_calls_from_trace(trace, "aten::mm")
            self.assertEqual([(s["dims"], s["calls"], s["us"]) for s in sigs],
                             [([[8, 4], [4, 2]], 2, 20), ([[2, 4], [4, 2]], 1, 15)])
            self.assertEqual(abtest.signature_text(sigs[0]), "(float[8,4], float[4,2])")

    def test_build_error_line(self):
        log = ("[3/49] Building CXX object models/x.cpp.o\nFAILED: models/x.cpp.o\n"
               f"{ROOT}/models/x.cpp:12:5: error: 'foo' is not a member of 'at'\n"
               "ninja: build stopped: subcommand failed.\n")
        self.assertEqual(abtest.first_build_error(log),
                         "models/x.cpp:12:5: error: 'foo' is not a member of 'at'")
        cmake = ("-- TorchBench: x\nCMake Error at cmake/TorchBenchFindTorch.cmake:50 "
                 "(message):\n  TorchBench needs LibTorch >= 2.11, found 2.10.0\n\n\n-- done\n")
        self.assertEqual(abtest.first_build_error(cmake),
                         "CMake Error at cmake/TorchBenchFindTorch.cmake:50 (message): "
                         "TorchBench needs LibTorch >= 2.11, found 2.10.0")


class FakeBuilds(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.a = wrapper(self.dir, "prog_a", "--fake_version=2.14.1")
        self.b = wrapper(self.dir, "prog_b", "--fake_version=2.15.0",
                         "--fake_slow=slowpoke/Eval/batch_size:1@aten::slow_op@1.0",
                         "--fake_swap_ops")
        self.log = os.path.join(self.dir, "log.jsonl")

    def tearDown(self):
        self.tmp.cleanup()

    def calls(self):
        with open(self.log) as f:
            return [json.loads(line) for line in f]

    def test_driver_flags_the_slowed_benchmark_and_its_operator(self):
        out = os.path.join(self.dir, "out")
        p = run(["--torch", f"program:{self.a}", "--torch", f"program:{self.b}",
                 "--threads", "1,2", "--rounds", "3", "--repetitions", "5", "--top", "1",
                 "-o", out, "--", "--benchmark_filter=."], {"FAKE_ABTEST_LOG": self.log})
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("abtest: FAIL: 2 benchmark(s) flagged", p.stderr)
        runs = [c for c in self.calls() if not c["list"] and not c["profile"]]
        # Per thread count: A B | B A | A B, each pinned to as many cores.
        self.assertEqual([c["version"] for c in runs],
                         ["2.14.1", "2.15.0", "2.15.0", "2.14.1", "2.14.1", "2.15.0"] * 2)
        self.assertEqual([c["threads"] for c in runs], ["1"] * 6 + ["2"] * 6)
        usable = len(os.sched_getaffinity(0))  # the cores this test may use
        self.assertTrue(all(len(c["cores"]) == min(int(c["threads"]), usable) for c in runs))
        profiles = [c["version"] for c in self.calls() if c["profile"]]
        self.assertEqual(profiles[:4], ["2.14.1", "2.15.0", "2.15.0", "2.14.1"])

        with open(os.path.join(out, "abtest.json")) as f:
            doc = json.load(f)
        self.assertEqual(doc["tool"], "torchbench-abtest")
        self.assertEqual([s["version"] for s in doc["sides"]], ["2.14.1", "2.15.0"])
        self.assertEqual([s["context"]["libtorch_version"] for s in doc["sides"]],
                         ["2.14.1", "2.15.0"])
        self.assertEqual(doc["exit"], 1)
        for t in doc["threads"]:
            verdicts = {r["name"]: r["verdict"] for r in t["gate"]["benchmarks"]}
            self.assertEqual(verdicts, {"slowpoke/Eval/batch_size:1": "REGRESSION",
                                        "toy/Eval/batch_size:1": "UNCHANGED"})
            first, second = t["attribution"]
            self.assertEqual((first["name"], first["why"]),
                             ("slowpoke/Eval/batch_size:1", "flagged by the gate"))
            top = first["diff"]["ops"][0]
            self.assertEqual(top["op"], "aten::slow_op")
            self.assertAlmostEqual(top["delta_us"], 1000.0)
            self.assertAlmostEqual(top["share"], 1.0, places=2)
            self.assertEqual(first["diff"]["explained_share"], top["share"])
            # The profiling processes' own timing: the change shows alone too.
            self.assertAlmostEqual(first["alone"]["ratio"], 1.2)
            self.assertEqual(first["alone"]["processes"], [2, 2])
            # No trace to rebuild a call from: said, not skipped silently.
            self.assertIn("no call with shapes", first["microbench"][0]["error"])
            # The largest unflagged change is attributed too.
            self.assertEqual(second["name"], "toy/Eval/batch_size:1")
            self.assertEqual(second["diff"]["appeared"], ["aten::fresh"])
            self.assertEqual(second["diff"]["disappeared"], ["aten::gone"])
            self.assertEqual(second["diff"]["counters"],
                             {"aten_ops_per_step": {"a": 40.0, "b": 41.0}})
            for side in ("A", "B"):
                self.assertEqual(len(t["files"][side]), 3)

        with open(os.path.join(out, "report.md")) as f:
            md = f.read()
        for text in ("# LibTorch A/B: A 2.14.1 against B 2.15.0", "## 1 intra-op thread(s)",
                     "## 2 intra-op thread(s)", "| slowpoke/Eval/batch_size:1 | 5.000 | 6.000 "
                     "| +20 % | +19 % .. +21 % | 1.5 % | 10.0 % | REGRESSION |", "### slowpoke/Eval/batch_size:1: +20 % (flagged by the gate)",
                     "| aten::slow_op | 1,000.0 | 2,000.0 | +1,000.0 | +100 % | 2 | 2 |",
                     "Only in B: aten::fresh", "Only in A: aten::gone",
                     "aten_ops_per_step: 40 -> 41", "Smallest change these runs could show",
                     "Alone in a fresh process (the profiling runs, 2 per side): 4.950 ms -> "
                     "5.940 ms (+20 %)."):
            self.assertIn(text, md)
        # The HTML report: B against A, and the A/B section with the attribution.
        with open(os.path.join(out, "report.html")) as f:
            page = f.read()
        for text in ("B against A", "LibTorch A/B", "LibTorch A 2.14.1 against B 2.15.0: 1 "
                     "thread(s): 1 regression(s), 0 improvement(s) in 2", "aten::slow_op"):
            self.assertIn(text, page)
        # The runs are Google Benchmark JSON the gate and tools/tb report read.
        self.assertTrue(os.path.exists(os.path.join(out, "runs", "t2", "B-r3.json")))

    def test_same_builds_pass(self):
        out = os.path.join(self.dir, "same")
        a2 = wrapper(self.dir, "prog_a2", "--fake_version=2.14.1")
        p = run(["--torch", f"program:{self.a}", "--torch", f"program:{a2}", "--top", "0",
                 "-o", out])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("abtest: pass: 0 benchmark(s) flagged", p.stderr)

    def test_mismatched_selections(self):
        b = wrapper(self.dir, "prog_x", "--fake_version=2.15.0",
                    "--fake_extra=extra/Eval/batch_size:1")
        args = ["--torch", f"program:{self.a}", "--torch", f"program:{b}", "--top", "0",
                "-o", os.path.join(self.dir, "mm")]
        p = run(args + ["--", "--benchmark_filter=."])
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr.strip().splitlines(),
                         ["abtest: the builds list different benchmarks: 0 only in A (), "
                          "1 only in B (extra/Eval/batch_size:1); --common-only runs the 2 "
                          "both list"])
        p = run(args + ["--common-only", "--", "--benchmark_filter=."])
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_bad_input_one_line_exit_2(self):
        empty = os.path.join(self.dir, "no-wheels")
        os.makedirs(empty)
        # A LibTorch folder of a release this project is not tested on.
        old = os.path.join(self.dir, "libtorch-2.10")
        os.makedirs(old)
        with open(os.path.join(old, "TorchConfig.cmake"), "w") as f:
            f.write('set(Torch_FOUND TRUE)\nset(Torch_VERSION "2.10.0")\n'
                    'set(TORCH_LIBRARIES "")\nset(TORCH_INSTALL_PREFIX "${CMAKE_CURRENT_LIST_DIR}")\n')
        with open(os.path.join(old, "TorchConfigVersion.cmake"), "w") as f:
            f.write('set(PACKAGE_VERSION "2.10.0")\nset(PACKAGE_VERSION_COMPATIBLE TRUE)\n')
        cases = [
            (["--torch", "0.0.1", "--torch", f"program:{self.a}", "--pip-find-links", empty],
             "abtest: torch 0.0.1: pip cannot install it: no such release on the package index"),
            (["--torch", old, "--torch", f"program:{self.a}"],
             "abtest: LibTorch 2.10.0 (" + old + "): the build failed: CMake Error at "
             "cmake/TorchBenchTorchVersion.cmake"),
            (["--torch", "latest!", "--torch", f"program:{self.a}"],
             "abtest: --torch latest!: neither a release"),
            (["--torch", "program:/no/such/program", "--torch", f"program:{self.a}"],
             "abtest: --torch program:/no/such/program: no such program"),
        ]
        for args, start in cases:
            p = run(args + ["--work", os.path.join(self.dir, "work"), "-o",
                            os.path.join(self.dir, "bad")])
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            lines = [l for l in p.stderr.strip().splitlines() if not l.startswith("[abtest]")]
            self.assertEqual(len(lines), 1, p.stderr)
            self.assertTrue(lines[0].startswith(start), (lines[0], start))
        p = run(["--torch", f"program:{self.a}"])
        self.assertEqual(p.returncode, 2)
        self.assertIn("give --torch twice", p.stderr)


class RealProgram(unittest.TestCase):
    def test_slowed_operator_is_attributed(self):
        """B is the same program with every aten::addmm call six times as
        long (--torchbench_testonly_slow_op): lennard_jones' step about
        doubles, and the diff puts the change on aten::addmm. The benchmark is
        attributed as the largest change (--top 1) whatever the gate decides:
        beside CTest's other tests on two cores the gate may call it NOISY,
        and the attribution is what this checks."""
        with tempfile.TemporaryDirectory() as tmp:
            p = run(["--torch", f"program:{PROGRAM}", "--torch", f"program:{PROGRAM}",
                     "--cand-args=--torchbench_testonly_slow_op=aten::addmm:5",
                     "--rounds", "2", "--repetitions", "6", "--top", "1", "--microbench", "1",
                     "-o", tmp, "--", "--torchbench_device=cpu", "--torchbench_batch_sizes=1",
                     "--benchmark_filter=^lennard_jones/Eval/", "--benchmark_min_time=0.02"])
            self.assertIn(p.returncode, (0, 1), p.stderr)
            with open(os.path.join(tmp, "abtest.json")) as f:
                doc = json.load(f)
            (t,) = doc["threads"]
            (row,) = t["gate"]["benchmarks"]
            self.assertGreater(row["effect"], 0.3, row)
            (a,) = t["attribution"]
            self.assertEqual(a["diff"]["ops"][0]["op"], "aten::addmm")
            self.assertGreater(a["diff"]["ops"][0]["share"], 0.5)
            # The operator alone, in the build's own Python, did not move:
            # the slowdown was the flag's, not LibTorch's.
            (m,) = a["microbench"]
            self.assertEqual(m["op"], "aten::addmm")
            self.assertTrue(m["signature"].startswith("(float["), m)
            self.assertTrue(m["verdict"].startswith("refutes"), m)
            with open(os.path.join(tmp, "report.md")) as f:
                self.assertIn("Micro-benchmark: **aten::addmm(float[", f.read())


if __name__ == "__main__":
    PROGRAM = os.path.abspath(sys.argv.pop(1))
    unittest.main()
