"""tools/flops_table.py (tools/tb flops-table) on hand-made runs: the rows
sorted by peak share, the nearest and furthest five, the domain medians,
the instances without counters named, the label of what the time goes to;
bad input is one line and exit status 2.

usage: test_flops_table.py   (unittest; runs tools/flops_table.py in this interpreter)
"""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tools"))

import flops_table  # noqa: E402


def row(name, ms, flops, share, **extra):
    r = {"name": name, "run_name": name, "run_type": "iteration", "real_time": ms,
         "time_unit": "ms", "flops_per_step": flops, "flop_rate": flops / (ms / 1e3),
         "peak_share": share}
    r.update(extra)
    return r


RUN = {
    "context": {"torchbench_model_domains": "big:vision,tiny:nlp,lstm:speech,broken:vision,pyhpc:science,gemv:recommendation",
                "peak_gemm_float32_flops_per_second": "2e+11",
                "peak_copy_bytes_per_second": "2.5e+10", "peak_threads": "2",
                "machine_peaks_source": "measured", "libtorch_version": "2.14.1"},
    "benchmarks": [
        row("big/Eval/batch_size:8", 100.0, 1.6e10, 0.8),
        row("tiny/Eval/batch_size:1", 0.5, 1e6, 0.01),
        row("pyhpc/Eval/batch_size:1", 0.3, 0.0, 0.0),
        # Matrix-vector products: their operands' bytes bound them.
        row("gemv/Eval/batch_size:1", 40.0, 4e8, 0.05, roofline_share=0.8,
            memory_bound_share=0.97),
        row("lstm/Train/batch_size:4", 50.0, 2e9, 0.2, flops_backward=1.2e9,
            matmul_conv_share=0.35),
        {"name": "broken/Eval/batch_size:1", "run_name": "broken/Eval/batch_size:1",
         "error_occurred": True, "error_message": "setup failed"},
        {"name": "plain/Eval/batch_size:1", "run_name": "plain/Eval/batch_size:1",
         "run_type": "iteration", "real_time": 1.0, "time_unit": "ms"},
    ],
}


def run_tool(*argv):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = flops_table.main(list(argv))
    return status, err.getvalue()


class FlopsTableTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.run = os.path.join(self.dir.name, "run.json")
        with open(self.run, "w") as f:
            json.dump(RUN, f)
        self.out = os.path.join(self.dir.name, "flops.md")

    def tearDown(self):
        self.dir.cleanup()

    def test_table(self):
        status, err = run_tool(self.run, "--markdown", self.out, "--made-with", "torchbench --torchbench_flops")
        self.assertEqual(status, 0, err)
        with open(self.out) as f:
            text = f.read()
        self.assertIn("torchbench --torchbench_flops", text)
        self.assertIn("fp32 GEMM 200 GFLOP/s, copy 25.0 GB/s", text)
        table = [l for l in text.splitlines() if l.startswith("| ") and "/batch_size:" in l]
        self.assertEqual([l.split(" | ")[0][2:] for l in table],
                         ["pyhpc/Eval/batch_size:1", "tiny/Eval/batch_size:1",
                          "gemv/Eval/batch_size:1", "lstm/Train/batch_size:4",
                          "big/Eval/batch_size:8"])
        self.assertIn("| 5.0 % | 80.0 % | 97 % | — | memory-bound products: 97 % of their "
                      "roofline time is operand traffic |", table[2])
        del table[2]
        self.assertIn("no matrix products", table[0])
        self.assertIn("No matrix products (1; 0 FLOPs, elementwise or integer work): "
                      "pyhpc/Eval/batch_size:1.", text)
        self.assertIn("Furthest from it: tiny/Eval/batch_size:1 1.0 %;", text)
        self.assertNotIn("| science | 1 |", text)
        table = table[1:]
        self.assertIn("launch/overhead-bound", table[0])
        self.assertIn("2 (60 % bwd)", table[1])
        self.assertIn("non-product work (elementwise, normalization, copies); "
                      "products 35 % of the step", table[1])
        self.assertIn("near GEMM peak", table[2])
        self.assertIn("without (2): broken/Eval/batch_size:1 (setup failed), "
                      "plain/Eval/batch_size:1", text)
        self.assertIn("Nearest the peak: big/Eval/batch_size:8 80.0 %", text)
        self.assertIn("| vision | 1 | 80.0 % |", text)

    def test_bad_input(self):
        status, err = run_tool(os.path.join(self.dir.name, "missing.json"), "--markdown", self.out)
        self.assertEqual(status, 2)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        no_flops = os.path.join(self.dir.name, "plain.json")
        with open(no_flops, "w") as f:
            json.dump({"context": {}, "benchmarks": [RUN["benchmarks"][-1]]}, f)
        status, err = run_tool(no_flops, "--markdown", self.out)
        self.assertEqual(status, 2)
        self.assertIn("--torchbench_flops", err)
        status, err = run_tool(self.run, "--markdown", self.out, "--made-with", "a", "--made-with", "b")
        self.assertEqual(status, 2)
        self.assertFalse(os.path.exists(self.out))


if __name__ == "__main__":
    unittest.main()
