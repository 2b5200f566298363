#!/usr/bin/env python3
"""Compiled models end to end: tools/tb compile makes the packages, the
program runs them as its benchmarks, and what cannot run fails alone.

- lennard_jones through TorchBench's own Model class: a stand-in checkout
  this test writes (torchbenchmark/models/lennard_jones/, a Model whose
  get_module() returns TorchBench's 1-16-16-16-16-1 tanh network and its
  (norms,) input), so no TorchBench checkout is needed;
- resnet18, pip-referenced (torchvision): its package's outputs are checked
  against Python eager's and against the port's own eager Forward on the
  package's weights and input.

Both at batch 1 and one thread, both backends (aoti, torchscript):
  1. the program runs each package as `<model>/Eval/batch_size:1` with the
     label `backend:<name>` and its fidelity counters within 1e-4;
  2. a package for another batch (batch 1's copied into batch_size_2), one
     made by another torch (its manifest says 2.11.0) and a corrupt one (the
     .pt2 cut short) each fail their instance with one line, the others in
     the same run still report, and the exit status is 1;
  3. --torchbench_backend without --torchbench_compiled, and an unknown
     backend: one line, exit 2.

usage: check_compiled.py TORCHBENCH
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "compile_models.py"
PROGRAM = None
MODELS = ("lennard_jones", "resnet18")

STAND_IN_MODEL = '''
import torch
from torch import nn

from ...util.model import BenchmarkModel


class Model(BenchmarkModel):
    """TorchBench's lennard_jones network and get_module() input."""
    DEFAULT_EVAL_BSIZE = 1000

    def __init__(self, test, device, batch_size=None, extra_args=[]):
        super().__init__(test=test, device=device, batch_size=batch_size,
                         extra_args=extra_args)
        layers = [nn.Linear(1, 16), nn.Tanh()]
        for _ in range(3):
            layers += [nn.Linear(16, 16), nn.Tanh()]
        self.model = nn.Sequential(*layers, nn.Linear(16, 1)).to(device)
        r = torch.linspace(0.5, 1.0, steps=self.batch_size)
        drs = torch.outer(r, torch.tensor([1.0, 0, 0])).to(device)
        self.norms = torch.norm(drs, dim=1).reshape(-1, 1)

    def get_module(self):
        return self.model, (self.norms,)
'''


def env():
    return dict(os.environ, OMP_NUM_THREADS="1")


def run_program(compiled, backend, batch_sizes="1", extra=()):
    """The program on both models' Eval instances: (exit status, stderr,
    {name: the first iteration row, or the error row})."""
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "run.json"
        args = [PROGRAM, "--torchbench_device=cpu", f"--torchbench_batch_sizes={batch_sizes}",
                f"--benchmark_filter=^({'|'.join(MODELS)})/Eval/",
                f"--torchbench_backend={backend}", f"--torchbench_compiled={compiled}",
                "--torchbench_warmup_steps=1", "--benchmark_min_time=1e-9",
                f"--benchmark_out={out}", "--benchmark_out_format=json", *extra]
        p = subprocess.run(args, capture_output=True, text=True, timeout=600, env=env())
        rows = {}
        if out.exists():
            for row in json.loads(out.read_text())["benchmarks"]:
                rows.setdefault(row["name"].replace("/manual_time", ""), row)
    return p.returncode, p.stderr, rows


class CompiledEndToEnd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        tmp = pathlib.Path(cls.tmp.name)
        model_dir = tmp / "checkout" / "torchbenchmark" / "models" / "lennard_jones"
        model_dir.mkdir(parents=True)
        (model_dir / "__init__.py").write_text(STAND_IN_MODEL)
        cls.compiled = tmp / "compiled"
        p = subprocess.run([sys.executable, str(TOOL), *MODELS, "--backend", "both",
                            "--batch-size", "1", "--threads", "1",
                            "--reference-root", str(tmp / "checkout"), "--binary", PROGRAM,
                            "-o", str(cls.compiled)],
                           capture_output=True, text=True, timeout=900, env=env())
        print(p.stdout[-3000:], p.stderr[-3000:], file=sys.stderr)
        assert p.returncode == 0, p.returncode
        cls.index = json.loads((cls.compiled / "index.json").read_text())

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_1_compile_made_every_package(self):
        made = {(e["model"], e["backend"]): e for e in self.index["entries"]}
        for model in MODELS:
            for backend in ("aoti", "torchscript"):
                entry = made[(model, backend)]
                self.assertEqual(entry["status"], "ok", entry)

    def test_2_the_program_runs_each_package(self):
        for backend in ("aoti", "torchscript"):
            status, stderr, rows = run_program(self.compiled, backend)
            self.assertEqual(status, 0, stderr)
            for model in MODELS:
                row = rows[f"{model}/Eval/batch_size:1"]
                self.assertFalse(row.get("error_occurred"), row)
                self.assertIn(f"backend:{backend}", row["label"])
                self.assertLessEqual(row["compiled_error_vs_python"], 1e-4)
                self.assertGreater(row["real_time"], 0)
            # The port on the package's weights and input (resnet18 is
            # pip-referenced; lennard_jones's port runs TorchBench's eval(),
            # not get_module()'s forward, so it has no such comparison).
            self.assertLessEqual(rows["resnet18/Eval/batch_size:1"]["compiled_error_vs_port"],
                                 1e-4)
            self.assertNotIn("compiled_error_vs_port", rows["lennard_jones/Eval/batch_size:1"])

    def test_3_a_bad_package_fails_alone(self):
        bad = pathlib.Path(self.tmp.name) / "bad"
        shutil.copytree(self.compiled, bad)
        # Batch 1's package where batch 2's should be.
        shutil.copytree(bad / "lennard_jones" / "batch_size_1", bad / "lennard_jones" / "batch_size_2")
        manifest = bad / "resnet18" / "batch_size_1" / "manifest.json"
        doc = json.loads(manifest.read_text())
        doc["torch_version"] = "2.11.0+cu130"
        manifest.write_text(json.dumps(doc))
        status, stderr, rows = run_program(bad, "aoti", batch_sizes="1,2",
                                           extra=["--torchbench_isolate=process"])
        self.assertEqual(status, 1, stderr)
        self.assertFalse(rows["lennard_jones/Eval/batch_size:1"].get("error_occurred"))
        wrong_batch = rows["lennard_jones/Eval/batch_size:2"]["error_message"]
        self.assertIn("compiled for batch 1, not 2", wrong_batch)
        self.assertIn("made by torch 2.11.0+cu130",
                      rows["resnet18/Eval/batch_size:1"]["error_message"])
        for row in rows.values():
            self.assertNotIn("\n", row.get("error_message", ""))
        # A corrupt package: the .pt2 cut short.
        doc["torch_version"] = self.index["torch_version"]
        manifest.write_text(json.dumps(doc))
        package = bad / "lennard_jones" / "batch_size_1" / "aoti.pt2"
        package.write_bytes(package.read_bytes()[:4096])
        status, stderr, rows = run_program(bad, "aoti", extra=["--torchbench_isolate=process"])
        self.assertEqual(status, 1, stderr)
        self.assertIn("cannot load", rows["lennard_jones/Eval/batch_size:1"]["error_message"])
        self.assertFalse(rows["resnet18/Eval/batch_size:1"].get("error_occurred"))

    def test_4_bad_flags(self):
        for args, says in ((["--torchbench_backend=aoti"], "needs --torchbench_compiled"),
                           (["--torchbench_backend=onnx"], "expected eager, aoti or torchscript")):
            p = subprocess.run([PROGRAM, *args], capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(says, p.stderr)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)


if __name__ == "__main__":
    PROGRAM = sys.argv.pop(1)
    unittest.main(verbosity=2)
