#!/usr/bin/env python3
"""tools/batch_search.py on the real program: a CPU batch search of one
small model and mode (phlippe_resnet Eval, doubling from batch 1 to a cap of
0.1 s per step, 3 repetitions after 1 warm-up step, one thread: steadier on
a busy machine) finds a knee and stops at the cap; and the program's own listing gives each kind of model its
start (fixed batch, smallest batch, 1).

usage: check_batch_search.py TORCHBENCH
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import batch_search as bs  # noqa: E402  (tools/batch_search.py)

TOOL = ROOT / "tools" / "batch_search.py"
PROGRAM = None
MODEL, MODE, CAP = "phlippe_resnet", "Eval", 0.1


class RealProgram(unittest.TestCase):
    def test_search_finds_a_knee_and_stops_at_the_cap(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = pathlib.Path(tmp) / "search.json"
            p = subprocess.run([sys.executable, str(TOOL), MODEL, "--mode", MODE.lower(),
                                "--device", "cpu", "--torchbench", PROGRAM, "-o", str(out),
                                "--cap-seconds", str(CAP), "--repetitions", "3",
                                "--extra-flag=--torchbench_warmup_steps=1"],
                               capture_output=True, text=True, timeout=600,
                               env=dict(os.environ, OMP_NUM_THREADS="1"))
            self.assertEqual(p.returncode, 0, p.stderr)
            doc = json.loads(out.read_text())
        print(p.stdout)
        self.assertEqual(doc["tool"], "torchbench-batch-search")
        context = doc["context"]
        self.assertEqual(context["torchbench_device"], "cpu")
        for key in ("device_name", "precision", "libtorch_version", "torchbench_git_commit"):
            self.assertIn(key, context)
        self.assertEqual(doc["settings"]["extra_flags"], ["--torchbench_warmup_steps=1"])
        [search] = doc["searches"]
        self.assertEqual((search["model"], search["mode"], search["start_batch"]),
                         (MODEL, MODE, 1))
        probes, summary = search["probes"], search["summary"]
        self.assertEqual(summary["stopped_by"], "cap")
        self.assertEqual([q["batch_size"] for q in probes],
                         [2**i for i in range(len(probes))])  # no bisection after a cap
        self.assertEqual({q["status"] for q in probes}, {"ok"})
        steps = [q["step_ms_median"] for q in probes]
        self.assertGreater(steps[-1], CAP * 1e3)
        self.assertTrue(all(s <= CAP * 1e3 for s in steps[:-1]), steps)
        for q in probes:
            # samples/s is the median repetition's: near batch / median step.
            self.assertAlmostEqual(q["samples_per_s"] * q["step_ms_median"] / 1e3,
                                   q["batch_size"], delta=0.5 * q["batch_size"])
            self.assertGreater(q["peak_mem_bytes"], 0)
            self.assertGreaterEqual(q["step_ms_iqr"], 0)
        self.assertEqual(summary["b_max_ok"], probes[-1]["batch_size"])
        self.assertIsNone(summary["oom_edge"])
        rates = {q["batch_size"]: q["samples_per_s"] for q in probes}
        self.assertEqual(summary["peak_samples_per_s"], max(rates.values()))
        self.assertLessEqual(summary["b_knee"], summary["b_peak"])
        self.assertGreaterEqual(rates[summary["b_knee"]], 0.95 * summary["peak_samples_per_s"])
        self.assertEqual(doc["suggested_batch_sizes"],
                         {context["device_name"]: {MODEL: {"eval_batch_size":
                                                           summary["b_knee"]}}})
        self.assertRegex(p.stdout, rf"{MODEL}\s+{MODE}\s+{len(probes)}\s+{summary['b_knee']}\s")

    def test_listing_gives_each_model_its_start(self):
        listing = bs.list_instances(PROGRAM, "cpu", 1, [])
        self.assertEqual(bs.plan(listing["soft_actor_critic"]["Eval"], 1), (256, True, 1))
        self.assertEqual(bs.plan(listing["timm_resnest"]["Train"], 1), (2, False, 2))
        self.assertEqual(bs.plan(listing["tts_angular"]["Train"], 1), (64, False, 64))
        self.assertEqual(bs.plan(listing["tts_angular"]["Eval"], 1), (1, False, 1))
        self.assertNotIn("Train", listing["pyhpc_equation_of_state"])  # Eval only


if __name__ == "__main__":
    PROGRAM = sys.argv.pop(1)
    unittest.main(verbosity=2)
