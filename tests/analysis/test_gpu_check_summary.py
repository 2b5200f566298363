"""tools/gpu_check_summary.py (tools/gpu_check.sh's summary) on made-up
results, without a GPU: the compiled rows.

- resnet50/Eval compiled and run: the AOTI step beside the eager fp32 run's
  (their ratio, both peaks), the fidelity counters, the compile seconds of
  tools/compile_models.py's index.json, the label; the verdicts stay the
  eager row's alone;
- the compile failed (the GPU machine's python lacks torchvision): its phase
  and reason; the program's run errored: its message; neither step ran: said
  so;
- --columns explains the compiled columns.

usage: test_gpu_check_summary.py   (unittest; about 1 s)
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SUMMARY = os.path.join(ROOT, "tools", "gpu_check_summary.py")
NAME = "resnet50/Eval/batch_size:32"


def program_json(precision, ms, counters, label, error=None):
    """The program's Google Benchmark JSON of one instance: two one-step
    repetitions and their _median aggregate (ms and counters)."""
    if error:
        rows = [{"name": NAME, "run_name": NAME, "run_type": "iteration",
                 "error_occurred": True, "error_message": error}]
    else:
        base = {"run_name": NAME, "time_unit": "ms", "label": label, **counters}
        rows = [dict(base, name=NAME, run_type="iteration", real_time=ms)
                for _ in range(2)]
        rows.append(dict(base, name=f"{NAME}_median", run_type="aggregate",
                         aggregate_name="median", real_time=ms))
    return {"context": {"precision": precision}, "benchmarks": rows}


class CompiledRows(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.write("cpp_fp32.json", program_json(
            "fp32", 9.0, {"peak_mem": 900 * 2**20, "kernels_per_step": 100},
            "precision:fp32 cudnn_benchmark:true cudnn_deterministic:false"))
        self.write("py_fp32.json", {"results": [{
            "benchmark": NAME, "precision": "fp32", "python_precision": "fp32",
            "python_median_ms": 10.0, "python_peak_mem": 900 * 2**20,
            "python_kernels_per_step": 100}]})

    def write(self, name, doc):
        path = os.path.join(self.tmp.name, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump(doc, f)

    def index(self, **entry):
        self.write("compiled/index.json", {"format": 1, "entries": [
            {"model": "resnet50", "batch_size": 32, "device": "cuda", "backend": "aoti",
             **entry, "path": "resnet50/batch_size_32"}]})

    def summary(self):
        tmp = self.tmp.name
        p = subprocess.run(
            [sys.executable, SUMMARY, "--cpp", f"{tmp}/cpp_fp32.json", "--py",
             f"{tmp}/py_fp32.json", "--plan", "fp32:resnet50/Eval", "--compiled",
             f"{tmp}/compiled", "--cpp-compiled", f"{tmp}/cpp_compiled.json",
             "--compiled-plan", "resnet50/Eval"],
            capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("compiled ("))
        end = lines.index("", start)
        return lines[start:end], p.stdout

    def test_beside_eager(self):
        self.index(status="ok", export_seconds=4.5, compile_seconds=60.5)
        label = "precision:fp32 backend:aoti cudnn_benchmark:true cudnn_deterministic:false"
        self.write("cpp_compiled.json", program_json(
            "fp32", 6.0, {"peak_mem": 450 * 2**20, "compiled_error_vs_python": 2e-6,
                          "compiled_error_vs_port": 3e-6}, label))
        section, text = self.summary()
        self.assertIn("eager: the fp32 run above", section[0])
        self.assertEqual(section[1].split(), [
            "instance", "eager", "ms", "AOTI", "ms", "AOTI/eager", "eager", "MiB", "AOTI",
            "MiB", "err", "Py", "err", "port", "compile", "s", "label"])
        self.assertEqual(section[2].split(), [
            NAME, "9.00", "6.00", "0.667", "900", "450", "2.0e-06", "3.0e-06", "65.0",
            *label.split()])
        self.assertEqual(len(section), 3)
        # The compiled row adds no verdict: the eager row's three only.
        self.assertIn("overall: 3 PASS, 0 FAIL, 0 n/a", text)

    def test_no_package(self):
        self.index(status="failed", phase="build",
                   reason="ModuleNotFoundError: No module named 'torchvision'")
        section, _ = self.summary()
        self.assertEqual(section[2], "resnet50/Eval                    no package: aoti "
                         "failed at build: ModuleNotFoundError: No module named 'torchvision'")

    def test_run_errored(self):
        self.index(status="ok", export_seconds=4.5, compile_seconds=60.5)
        self.write("cpp_compiled.json", program_json(
            "fp32", 0, {}, "", error="compiled fidelity check failed: compiled outputs differ "
                                     "from Python eager's by 0.002"))
        section, _ = self.summary()
        self.assertEqual(section[2], f"{NAME:32s} error: compiled fidelity check failed: "
                         "compiled outputs differ from Python eager's by 0.002")

    def test_nothing_ran(self):
        section, _ = self.summary()
        self.assertEqual(section[2], "resnet50/Eval                    no package and no C++ "
                         "result (see the notes below)")
        self.index(status="ok", export_seconds=4.5, compile_seconds=60.5)
        section, _ = self.summary()
        self.assertEqual(section[2], "resnet50/Eval                    package made (65.0 s), "
                         "no C++ result (see the notes below)")

    def test_columns(self):
        p = subprocess.run([sys.executable, SUMMARY, "--columns"], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        for column in ("AOTI/eager", "err Py", "err port", "compile s"):
            self.assertRegex(p.stdout, rf"\n  {column} +\S")


if __name__ == "__main__":
    unittest.main()
