"""tools/flops_check.py (tools/tb flops-check): the Python side of the FLOP
check, without the program.

- the corrected formulas on hand-computed values:
  * a depthwise 3x3 convolution, 32 channels, groups 32, padding 1, on
    x = 2x32x56x56 (weight 32x1x3x3, output 2x32x56x56). FlopCounterMode
    counts 2 FLOP per multiply-add, N C_out (C_in / groups) k_h k_w H_out W_out:
      forward      2 * 2*32*1*9*56*56                  =   3 612 672
      grad_input   the same products, transposed        =   3 612 672
      grad_weight  FlopCounterMode: t(x) = 32x2x56x56 convolved with
                   t(grad_out) = 32x2x56x56 as a weight, output 1x32x3x3:
                   2 * 32 (its batch: C_in) * 32 * 2 * 56*56 * 9
                                                        = 115 605 504
                   corrected: / groups (32)             =   3 612 672
    so convolution_backward is 119 218 176 raw and 7 225 344 corrected;
  * an SDPA of q, k, v = 2x4x16x8 (b h s d): forward Q K^T and (scores) V,
    each 2 * (2*4) * 16 * 8 * 16 = 32 768, so 65 536; its backward the
    scores again and four products of the same size, 5 * 32 768 = 163 840.
    Raw FlopCounterMode has no formula for the CPU kernels: 0.
  * an LSTM(8, 16) on 2x5x8 (oneDNN's mkldnn_rnn_layer on the CPU): 10
    time steps of sequences, weight_ih 64x8 and weight_hh 64x16, so
    2 * 10 * (512 + 1024) = 30 720 forward and twice that, 61 440, backward;
    raw FlopCounterMode: 0.
- verdicts on hand-made records (equal, explained, DIFFERS, not run, error),
  the markdown's head and rows;
- the driver, with a stand-in program (fake_flops_program.py) that reports
  chosen C++ counts, on two pip-referenced models' real Python references:
  resnet18 Eval batch 1 (FlopCounterMode: 3.63 GFLOP = 2 x 1.81 GMAC; no
  grouped convolution, so corrected == raw; a C++ count equal to it is
  "equal", exit 0) and mobilenet_v2 Train batch 2 (depthwise convolutions:
  corrected < raw; a C++ count equal to corrected is "explained", exit 0;
  one equal to raw DIFFERS, exit 1, with Python's per-operator counts);
- bad input: an unknown model, exit 2 in one line; a program without
  --torchbench_flops, that instance an error.

usage: test_flops_check.py   (unittest; about 20 s on 2 cores)
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOOL = os.path.join(ROOT, "tools", "flops_check.py")
FAKE = os.path.join(HERE, "fake_flops_program.py")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import flops_check  # noqa: E402  (tools/flops_check.py)

# FlopCounterMode's counts of the two models' steps with torchvision 0.29
# (tools/requirements.txt); shape-only, so exact on any machine.
RESNET18_EVAL_1 = 3_628_146_688
MOBILENET_V2_TRAIN_2_RAW = 24_559_401_984
MOBILENET_V2_TRAIN_2_CORRECTED = 3_565_939_200


class Formulas(unittest.TestCase):
    def test_depthwise_convolution_backward(self):
        from torch.utils.flop_counter import conv_backward_flop

        go, x, w = [2, 32, 56, 56], [2, 32, 56, 56], [32, 1, 3, 3]
        out = (go, w, None)
        args = (go, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 32)
        f = flops_check.conv_backward_flop_corrected
        self.assertEqual(f(*args, [True, False, False], out_shape=out), 3_612_672)
        self.assertEqual(f(*args, [False, True, False], out_shape=out), 3_612_672)
        self.assertEqual(f(*args, [True, True, True], out_shape=out), 7_225_344)
        # FlopCounterMode's own (shape-wrapped: tensors' shapes, out_val).
        self.assertEqual(conv_backward_flop(*args, [True, True, True], out_val=out),
                         119_218_176)

    def test_ungrouped_and_transposed_convolution_backward(self):
        from torch.utils.flop_counter import conv_backward_flop

        # groups 1: the corrected formula is FlopCounterMode's.
        go, x, w = [2, 16, 8, 8], [2, 8, 8, 8], [16, 8, 3, 3]
        args = (go, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, True, False])
        self.assertEqual(flops_check.conv_backward_flop_corrected(*args, out_shape=(x, w, None)),
                         conv_backward_flop(*args, out_val=(x, w, None)))
        self.assertEqual(conv_backward_flop(*args, out_val=(x, w, None)),
                         2 * 2 * 2 * 16 * 8 * 9 * 64)
        # A transposed convolution, groups 4: C_in 8, C_out 8, weight
        # 8 x 2 x 3x3, input 2x8x8x8, output 2x8x10x10. Its forward is
        # 2 N C_in (C_out / groups) 9 * 64 (per input point) = 36 864;
        # grad_weight is the same products, FlopCounterMode's 4 times them.
        go, x, w = [2, 8, 10, 10], [2, 8, 8, 8], [8, 2, 3, 3]
        args = (go, x, w, None, [1, 1], [0, 0], [1, 1], True, [0, 0], 4, [False, True, False])
        self.assertEqual(flops_check.conv_backward_flop_corrected(*args, out_shape=(x, w, None)),
                         36_864)
        self.assertEqual(conv_backward_flop(*args, out_val=(x, w, None)), 4 * 36_864)

    def test_depthwise_convolution_under_both_counters(self):
        import torch

        conv = torch.nn.Conv2d(32, 32, 3, padding=1, groups=32)
        x = torch.randn(2, 32, 56, 56, requires_grad=True)
        raw, corrected = flops_check.count_flops(lambda: conv(x).sum().backward())
        self.assertEqual(raw, {"aten::convolution": 3_612_672,
                               "aten::convolution_backward": 119_218_176})
        self.assertEqual(corrected, {"aten::convolution": 3_612_672,
                                     "aten::convolution_backward": 7_225_344})

    def test_cpu_attention(self):
        import torch

        q, k, v = (torch.randn(2, 4, 16, 8, requires_grad=True) for _ in range(3))

        def step():
            torch.nn.functional.scaled_dot_product_attention(q, k, v).sum().backward()

        raw, corrected = flops_check.count_flops(step)
        self.assertEqual(raw, {})  # FlopCounterMode counts no CPU attention
        self.assertEqual(corrected, {
            "aten::_scaled_dot_product_flash_attention_for_cpu": 65_536,
            "aten::_scaled_dot_product_flash_attention_for_cpu_backward": 163_840})


    def test_cpu_lstm(self):
        import torch

        lstm = torch.nn.LSTM(8, 16, batch_first=True)
        x = torch.randn(2, 5, 8)
        raw, corrected = flops_check.count_flops(lambda: lstm(x)[0].sum().backward())
        self.assertEqual(raw, {})
        self.assertEqual(corrected, {"aten::mkldnn_rnn_layer": 30_720,
                                     "aten::mkldnn_rnn_layer_backward": 61_440})


def record(cpp=None, raw=None, corrected=None, cpp_error=None, py_error=None):
    r = {"benchmark": "m/Train/batch_size:1", "model": "m", "mode": "Train", "batch_size": 1,
         "reference": "pip:torchvision", "cpp": {}, "python": {}}
    if cpp_error:
        r["cpp"]["error"] = cpp_error
    else:
        r["cpp"]["flops_per_step"] = cpp
    if py_error:
        r["python"]["error"] = py_error
    else:
        r["python"].update(raw=raw, corrected=corrected, raw_ops={"aten::mm": raw},
                           corrected_ops={"aten::mm": corrected})
    return flops_check.judge(r, 0.01)


class Verdicts(unittest.TestCase):
    def test_verdicts(self):
        self.assertEqual(record(100.5, 100, 100)["verdict"], "equal")
        self.assertEqual(record(99, 100, 100)["verdict"], "equal")
        self.assertEqual(record(10, 100, 10)["verdict"], "explained")
        self.assertEqual(record(10.09, 100, 10)["verdict"], "explained")
        r = record(102, 100, 100)
        self.assertEqual(r["verdict"], "DIFFERS")
        self.assertAlmostEqual(r["vs_corrected"], 0.02)
        self.assertEqual(record(100, 100, 10)["verdict"], "DIFFERS")  # C++ counts raw
        self.assertEqual(record(0, 0, 0)["verdict"], "equal")
        self.assertEqual(record(5, 0, 0)["verdict"], "DIFFERS")
        r = record(5, py_error="ModuleNotFoundError: No module named 'x'")
        self.assertEqual((r["verdict"], r["reason"]),
                         ("not run", "ModuleNotFoundError: No module named 'x'"))
        r = record(cpp_error="unknown flag", py_error="whatever")
        self.assertEqual((r["verdict"], r["reason"]), ("error", "C++: unknown flag"))

    def test_markdown(self):
        rows = [record(100, 100, 100), record(10, 100, 10), record(100, 100, 10),
                record(5, py_error="no data | here")]
        doc = {"context": {"date": "2030-01-02 03:04", "command": "tools/tb flops-check m",
                           "device": "cpu", "batch_size": "1", "threads": 1, "warmup": 1,
                           "tolerance": 0.01, "cpu": "CPU", "cores": 2,
                           "torch_version": "2.14.1", "libtorch_version": "2.14.1"},
               "results": rows, "summary": flops_check.summary(rows)}
        text = flops_check.markdown(doc)
        self.assertIn("Generated 2030-01-02 03:04 by `tools/tb flops-check m`", text)
        self.assertIn("| Train | 4 | 1 | 1 | 1 | 1 | 0 |", text)
        self.assertIn("## Where they differ", text)
        self.assertIn("aten::mm 10 FLOP", text)
        self.assertIn("**DIFFERS**", text)
        self.assertIn("not run: no data / here", text)

    def test_published_command(self):
        self.assertEqual(flops_check.published_command(
            ["resnet18", "--reference-root", "/somewhere/benchmark", "-o", "/tmp/x.json"],
            cwd=ROOT), "tools/tb flops-check resnet18 --reference-root CHECKOUT -o OUT.json")


def run_tool(args, fake_flops):
    with tempfile.TemporaryDirectory() as tmp:
        out, md = os.path.join(tmp, "out.json"), os.path.join(tmp, "out.md")
        p = subprocess.run([sys.executable, TOOL, *args, "--binary", FAKE, "-o", out,
                            "--markdown", md],
                           capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, OMP_NUM_THREADS="1",
                                    FAKE_FLOPS=json.dumps(fake_flops)))
        doc = text = None
        if os.path.exists(out):
            with open(out) as f:
                doc = json.load(f)
        if os.path.exists(md):
            with open(md) as f:
                text = f.read()
    return p, doc, text


class Driver(unittest.TestCase):
    def test_resnet18_eval_equal(self):
        name = "resnet18/Eval/batch_size:1"
        p, doc, text = run_tool(["resnet18", "--mode", "eval"], {name: RESNET18_EVAL_1})
        self.assertEqual(p.returncode, 0, p.stderr)
        [r] = doc["results"]
        self.assertEqual(r["benchmark"], name)
        self.assertEqual(r["python"]["raw"], RESNET18_EVAL_1)
        self.assertEqual(r["python"]["corrected"], RESNET18_EVAL_1)  # no grouped conv
        self.assertEqual(r["python"]["raw_ops"], r["python"]["corrected_ops"])
        self.assertEqual(set(r["python"]["raw_ops"]), {"aten::convolution", "aten::addmm"})
        self.assertEqual(r["verdict"], "equal")
        self.assertEqual(r["cpp"]["flops_per_step"], RESNET18_EVAL_1)
        self.assertIn("tools/tb flops-check resnet18 --mode eval", doc["context"]["command"])
        self.assertIn(f"| {name} | pip:torchvision | 3.628 G | 3.628 G | 3.628 G | +0.00% | "
                      "equal |", text)

    def test_mobilenet_v2_train(self):
        name = "mobilenet_v2/Train/batch_size:2"
        args = ["mobilenet_v2", "--mode", "train", "--batch-size", "2"]
        p, doc, _ = run_tool(args, {name: MOBILENET_V2_TRAIN_2_CORRECTED})
        self.assertEqual(p.returncode, 0, p.stderr)
        [r] = doc["results"]
        py = r["python"]
        self.assertEqual((py["raw"], py["corrected"]),
                         (MOBILENET_V2_TRAIN_2_RAW, MOBILENET_V2_TRAIN_2_CORRECTED))
        self.assertLess(py["corrected"], py["raw"])
        # Only convolution_backward's count differs.
        diff = {op for op in py["raw_ops"] if py["raw_ops"][op] != py["corrected_ops"].get(op)}
        self.assertEqual(diff, {"aten::convolution_backward"})
        self.assertEqual(r["verdict"], "explained")
        # A program counting as FlopCounterMode does is found out.
        p, doc, text = run_tool(args, {name: MOBILENET_V2_TRAIN_2_RAW})
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(doc["results"][0]["verdict"], "DIFFERS")
        self.assertIn("DIFFERS: mobilenet_v2/Train/batch_size:2", p.stderr)
        self.assertIn("aten::convolution_backward 2.353 GFLOP", text)

    def test_bad_input(self):
        p, doc, _ = run_tool(["no_such_model"], {})
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr.strip().count("\n"), 0, p.stderr)
        self.assertIn("unknown model no_such_model", p.stderr)
        self.assertIsNone(doc)
        p = subprocess.run([sys.executable, TOOL, "--batch-size", "0", "--binary", FAKE],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--batch-size must be a positive integer", p.stderr)

    def test_program_without_the_flag(self):
        got = flops_check.run_cpp(FAKE, "resnet18/Eval/batch_size:1", 1, 1, 1337, 60)
        self.assertEqual(got, {"error": "torchbench: unknown flag --torchbench_flops"})


if __name__ == "__main__":
    unittest.main()
