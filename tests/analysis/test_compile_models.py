"""tools/compile_models.py (tools/tb compile): packages of stand-in models,
without the program and without compiling a real model.

compile_stand_ins.py is both the program (its model list) and, through the
tool's test-only --stand-in option, the builder of the models' modules and
example inputs (tiny: keyword inputs, a constant, tied weights, a buffer,
nested outputs with None and an int; data_dependent: branches on a value;
needs_grad: an SGD step inside forward, eval_in_nograd() False; broken:
cannot be built; hangs; crashes).

- the pieces: the largest errors against eager (as the program's
  LargestRelativeError), the Eval batch chosen, the flat wrapper, the index's
  merge, the published command, what a rerun keeps (nothing of another
  device's or GPU's package);
- tiny, both backends and --time-python: a manifest in the documented format,
  inputs / outputs / weights files (keys "0", "1", ...; the module's own
  parameter and buffer names), an AOTInductor package and a TorchScript
  module that both load back in this process and reproduce eager's outputs,
  which a fresh build of the stand-in (seed 1337) reproduces too; broken
  fails at build for every backend;
- data_dependent: non-strict and strict export fail, draft_export decides
  the branch on the input and the package matches eager; data_pointer:
  every export fails (non-strict, strict, draft) with its phase and
  reason, the trace works, and index.json keeps the models of the earlier run;
  needs_grad (beside it, --jobs 2): built, run and compiled with autograd on
  ("grad": true; tiny's false), both packages reproducing eager's outputs
  under no_grad, as the program runs them;
  tiny rerun with torchscript alone keeps its AOTI package and entry;
  then --time-only on those packages: its Python fields filled (the inputs
  reproduced), its compile seconds, other fields, package files and index
  entries as they were; a model without a manifest, or one made at another
  thread count, skipped in one line;
- a hang past --timeout and a crash (SIGABRT) cost their model only (--jobs 2);
  Ctrl-C, or a timeout's SIGTERM, stops the run and its workers;
- bad input: an unknown model, one without Eval, no reference root, no
  program, --device cuda where torch sees no GPU (CUDA_VISIBLE_DEVICES=""),
  exit 2 in one line.

usage: test_compile_models.py   (unittest; about 70 s on 2 cores)
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

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOOL = os.path.join(ROOT, "tools", "compile_models.py")
STAND_INS = os.path.join(HERE, "compile_stand_ins.py")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import compile_models  # noqa: E402  (tools/compile_models.py)


def run_tool(args, out=None, stand_in=True, root=True, env=None):
    """The tool as tools/tb runs it (`env`: more environment); (process,
    index.json or None)."""
    command = [sys.executable, TOOL, *args, "--binary", STAND_INS]
    if stand_in:
        command += ["--stand-in", STAND_INS]
    if root:
        command += ["--reference-root", Driver.root]
    if out:
        command += ["-o", out]
    p = subprocess.run(command, capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, OMP_NUM_THREADS="1", **(env or {})))
    index = None
    if out and os.path.exists(os.path.join(out, "index.json")):
        with open(os.path.join(out, "index.json")) as f:
            index = json.load(f)
    return p, index


def manifest(out, model, batch):
    with open(os.path.join(out, model, f"batch_size_{batch}", "manifest.json")) as f:
        return json.load(f)


def entries(index):
    return {(e["model"], e["batch_size"], e["backend"]): e for e in index["entries"]}


class Pieces(unittest.TestCase):
    def test_largest_errors(self):
        import torch

        want = [torch.tensor([1.0, -4.0, 2.0]), torch.tensor([[True, False]]),
                torch.tensor([3, 4])]
        self.assertEqual(compile_models.largest_errors(tuple(want), want), (0.0, 0.0))
        got = [torch.tensor([1.0, -4.5, 2.0]), want[1], want[2]]
        self.assertEqual(compile_models.largest_errors(got, want), (0.5, 0.125))  # 0.5 / 4
        got = [want[0], torch.tensor([[True, True]]), want[2]]
        self.assertEqual(compile_models.largest_errors(got, want), (1.0, 1.0))
        nan = [torch.tensor([float("nan"), 1.0])]
        self.assertEqual(compile_models.largest_errors(nan, nan), (0.0, 0.0))
        self.assertEqual(compile_models.largest_errors([torch.tensor([1.0, 1.0])], nan),
                         ("inf", "inf"))
        self.assertEqual(compile_models.largest_errors([torch.zeros(2)], [torch.zeros(2)]),
                         (0.0, 0.0))
        with self.assertRaisesRegex(RuntimeError, "1 outputs, eager has 3"):
            compile_models.largest_errors(want[0], want)
        with self.assertRaisesRegex(RuntimeError, "output 0 is torch.float32 \\[2\\]"):
            compile_models.largest_errors([torch.zeros(2)], [torch.zeros(3)])

    def test_eval_batch_size(self):
        spec = {"eval_batch_size": 16, "fixed_batch_size": False, "min_eval_batch_size": 4}
        self.assertEqual(compile_models.eval_batch_size(spec, "default"), 16)
        self.assertEqual(compile_models.eval_batch_size(spec, "1"), 4)
        self.assertEqual(compile_models.eval_batch_size(spec, "8"), 8)
        spec["fixed_batch_size"] = True
        self.assertEqual(compile_models.eval_batch_size(spec, "8"), 16)

    def test_flat_module(self):
        import torch

        sys.path.insert(0, HERE)
        import compile_stand_ins

        torch.manual_seed(0)
        module, example = compile_stand_ins.build("tiny", 2)
        module.eval()
        wrapper, inputs = compile_models.flat_module(module, (), example)
        self.assertEqual([tuple(t.shape) for t in inputs], [(2, 8), (2, 3)])
        want = module(**example)
        got = wrapper(*inputs)
        self.assertEqual(len(got), 3)  # out, pair's sum, ids; not None nor the int
        for g, w in zip(got, (want["out"], want["pair"][0], want["ids"])):
            self.assertTrue(torch.equal(g, w))
        self.assertTrue(torch.equal(got[0], module(inputs[0], inputs[1], 2.0)["out"]))

    def test_merged_index(self):
        old = [{"model": "a", "batch_size": 1, "backend": "aoti", "status": "ok"},
               {"model": "b", "batch_size": 1, "backend": "aoti", "status": "ok"},
               {"model": "b", "batch_size": 2, "backend": "aoti", "status": "ok"}]
        m = {"model": "b", "batch_size": 1, "backends": {
            "torchscript": {"status": "ok", "trace_seconds": 1.5, "max_rel_error": 0.0},
            "aoti": {"status": "failed", "phase": "export", "reason": "R", "strict_reason": "S",
                     "export_seconds": 2.0}}}
        got = compile_models.merged(old, m)
        self.assertEqual([(e["model"], e["batch_size"], e["backend"]) for e in got],
                         [("a", 1, "aoti"), ("b", 1, "aoti"), ("b", 1, "torchscript"),
                          ("b", 2, "aoti")])
        self.assertEqual(got[1], {"model": "b", "batch_size": 1, "device": "cpu",
                                  "backend": "aoti",
                                  "status": "failed", "phase": "export", "reason": "R",
                                  "export_seconds": 2.0, "path": "b/batch_size_1"})
        self.assertEqual(got[2]["trace_seconds"], 1.5)

    def test_keep_previous(self):
        # A rerun with one backend keeps the other's entry only from a
        # package made on the same device (and GPU); a manifest from before
        # "device" was recorded is a CPU one.
        spec = {"model": "m", "batch_size": 1}
        with tempfile.TemporaryDirectory() as tmp:
            for old_device, old_gpu, new_device, new_gpu, kept in (
                    (None, None, "cpu", None, True),
                    ("cpu", None, "cuda", {"name": "G", "capability": "9.0"}, False),
                    ("cuda", {"name": "G", "capability": "9.0"}, "cuda",
                     {"name": "G", "capability": "8.0"}, False),
                    ("cuda", {"name": "G", "capability": "9.0"}, "cuda",
                     {"name": "G", "capability": "9.0"}, True)):
                new = compile_models.new_manifest(dict(spec, device=new_device), "pip:x")
                if new_gpu:
                    new["gpu"] = new_gpu
                old = dict(new, backends={"aoti": {"status": "ok"}})
                old.pop("device")
                old.pop("gpu", None)
                if old_device:
                    old["device"] = old_device
                if old_gpu:
                    old["gpu"] = old_gpu
                compile_models.keep_previous(pathlib.Path(tmp), new, ["torchscript"], None,
                                             old)
                self.assertEqual("aoti" in new["backends"], kept,
                                 (old_device, old_gpu, new_device, new_gpu))

    def test_published_command(self):
        self.assertEqual(compile_models.published_command(
            ["resnet18", "--reference-root", "/somewhere/benchmark", "-o", "/tmp/x"], cwd=ROOT),
            "tools/tb compile resnet18 --reference-root CHECKOUT -o DIR")
        self.assertEqual(compile_models.published_command(["-o", "compiled"], cwd=ROOT),
                         "tools/tb compile -o compiled")


class Driver(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        # A reference root the selection accepts (the stand-ins build every model).
        cls.root = os.path.join(cls.tmp.name, "benchmark")
        os.makedirs(os.path.join(cls.root, "torchbenchmark", "models"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_packages_and_merging(self):
        import torch
        from safetensors.torch import load_file

        out = os.path.join(self.tmp.name, "compiled")
        p, index = run_tool(["tiny", "broken", "--time-python", "--warmup", "1", "--steps",
                             "2"], out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"tiny b1: aoti ok \(export [0-9.]+ s, compile [0-9.]+ s;")
        self.assertIn("broken b1: aoti failed at build: RuntimeError: broken cannot be built "
                      "here", p.stdout)
        self.assertIn("compile: 2 model(s); aoti ok 1 of 2, torchscript ok 1 of 2", p.stderr)
        self.assertIn("compile: aoti failed at build (1): RuntimeError: broken cannot be built "
                      "here ...: broken", p.stderr)

        m = manifest(out, "tiny", 1)
        self.assertEqual(list(m)[:11], [
            "format", "model", "mode", "batch_size", "device", "torch_version", "threads",
            "cpu_flags", "cpu_capability", "reference", "compiled_forward"])
        self.assertEqual((m["format"], m["model"], m["mode"], m["batch_size"], m["device"],
                          m["torch_version"], m["threads"], m["reference"],
                          m["compiled_forward"]),
                         (1, "tiny", "Eval", 1, "cpu", torch.__version__, 1, "stand-in",
                          "get_module"))
        self.assertEqual((m["grad"], "gpu" in m, "cudnn" in m), (False, False, False))
        self.assertEqual(m["cpu_flags"], sorted(m["cpu_flags"]))
        self.assertLessEqual(set(m["cpu_flags"]), set(compile_models.CPU_FLAGS))
        self.assertEqual(m["cpu_capability"], torch.backends.cpu.get_cpu_capability())
        self.assertEqual(m["inputs"], [{"shape": [1, 8], "dtype": "float32"},
                                       {"shape": [1, 3], "dtype": "int64"}])
        self.assertEqual(m["outputs"], [{"shape": [1, 8], "dtype": "float32"},
                                        {"shape": [1], "dtype": "float32"},
                                        {"shape": [1, 3], "dtype": "int64"}])
        self.assertEqual((m["inputs_file"], m["outputs_file"], m["weights_file"]),
                         ("inputs.safetensors", "outputs.safetensors", "weights.safetensors"))
        aoti, ts = m["backends"]["aoti"], m["backends"]["torchscript"]
        self.assertEqual((aoti["status"], aoti["file"], aoti["export"], aoti["inductor_configs"]),
                         ("ok", "aoti.pt2", "non-strict", {"freezing": True}))
        self.assertEqual((ts["status"], ts["file"], ts["method"]),
                         ("ok", "torchscript.pt", "trace+freeze"))
        for entry in (aoti, ts, m["python_compile"]):
            self.assertLess(entry["max_rel_error"], 1e-4)
        for key in ("export_seconds", "compile_seconds"):
            self.assertGreater(aoti[key], 0)
        self.assertEqual((len(aoti["python_ms"]), len(ts["python_ms"]),
                          len(m["python_eager_ms"]), len(m["python_compile"]["ms"])),
                         (2, 2, 2, 2))

        # The files: what a fresh build of the stand-in gives, and both packages
        # reproduce eager from this process.
        directory = os.path.join(out, "tiny", "batch_size_1")
        inputs, outputs = (load_file(os.path.join(directory, f"{k}.safetensors"))
                           for k in ("inputs", "outputs"))
        self.assertEqual((sorted(inputs), sorted(outputs)), (["0", "1"], ["0", "1", "2"]))
        sys.path.insert(0, HERE)
        import compile_stand_ins

        torch.manual_seed(1337)
        module, example = compile_stand_ins.build("tiny", 1)
        module.eval()
        self.assertTrue(torch.equal(inputs["0"], example["x"]))
        self.assertTrue(torch.equal(inputs["1"], example["ids"]))
        weights = load_file(os.path.join(directory, "weights.safetensors"))
        names = dict(module.named_parameters())
        names.update(module.named_buffers())
        self.assertEqual(sorted(weights), sorted(names))
        self.assertNotIn("tail.weight", weights)  # tied: named once, as head.weight
        for k, v in names.items():
            self.assertTrue(torch.equal(weights[k], v), k)
        with torch.no_grad():
            want = module(**example)
        self.assertTrue(torch.equal(outputs["0"], want["out"]))
        self.assertTrue(torch.equal(outputs["2"], want["ids"]))
        flat = [inputs["0"], inputs["1"]]
        eager = [outputs[str(i)] for i in range(3)]
        runner = torch._inductor.aoti_load_package(os.path.join(directory, "aoti.pt2"))
        scripted = torch.jit.load(os.path.join(directory, "torchscript.pt"))
        with torch.no_grad():
            for got in (runner(*flat), scripted(*flat)):
                self.assertEqual(len(got), 3)
                for g, w in zip(got, eager):
                    torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)

        b = manifest(out, "broken", 1)
        for entry in (*b["backends"].values(), b["python_compile"]):
            self.assertEqual(entry, {"status": "failed", "phase": "build",
                                     "reason": "RuntimeError: broken cannot be built here"})
        self.assertEqual((b["inputs"], b["inputs_file"], b["weights_file"]), ([], None, None))

        self.assertEqual(index["format"], 1)
        self.assertIn("tools/tb compile tiny broken --time-python", index["made_with"])
        self.assertEqual(index["torch_version"], torch.__version__)
        self.assertEqual(set(entries(index)), {("tiny", 1, "aoti"), ("tiny", 1, "torchscript"),
                                               ("broken", 1, "aoti"),
                                               ("broken", 1, "torchscript")})
        self.assertEqual(entries(index)[("tiny", 1, "aoti")]["path"], "tiny/batch_size_1")

        # A model that cannot be exported: its phase and reason; the trace works;
        # the earlier models stay in the index. min_eval_batch_size 2: batch 2.
        # Beside it, a model whose eval needs autograd.
        p, index = run_tool(["data_dependent", "data_pointer", "needs_grad", "--batch-size",
                             "1", "--jobs", "2"], out)
        self.assertEqual(p.returncode, 0, p.stderr)
        got = entries(index)
        self.assertEqual(len(got), 10)
        # A data-dependent guard: non-strict and strict export fail, the draft
        # export decides it on these inputs and the package reproduces eager.
        d = manifest(out, "data_dependent", 2)
        drafted = d["backends"]["aoti"]
        self.assertEqual((drafted["status"], drafted["export"]), ("ok", "draft"), drafted)
        self.assertIn("GuardOnDataDependentSymNode", drafted["non_strict_reason"])
        self.assertIn("strict_reason", drafted)
        self.assertLess(drafted["max_rel_error"], 1e-4)
        self.assertEqual(got[("data_dependent", 2, "torchscript")]["status"], "ok")
        self.assertNotIn("python_compile", d)
        # An address read in forward: every export fails, with its phase and reasons; no
        # package is left; the trace works.
        failed = got[("data_pointer", 1, "aoti")]
        self.assertEqual((failed["status"], failed["phase"]), ("failed", "export"))
        self.assertIn("non-strict:", failed["reason"])
        n = manifest(out, "data_pointer", 1)
        self.assertIn("strict_reason", n["backends"]["aoti"])
        self.assertIn("draft_reason", n["backends"]["aoti"])
        self.assertEqual(got[("data_pointer", 1, "torchscript")]["status"], "ok")
        self.assertFalse(os.path.exists(os.path.join(out, "data_pointer", "batch_size_1",
                                                     "aoti.pt2")))

        # needs_grad: under no_grad its build would fail (autograd.grad in
        # forward); with autograd on both backends compile its SGD step, and
        # the packages reproduce eager under no_grad, as the program runs them.
        g = manifest(out, "needs_grad", 1)
        self.assertIs(g["grad"], True)
        for backend in ("aoti", "torchscript"):
            self.assertEqual(g["backends"][backend]["status"], "ok", g["backends"][backend])
            self.assertLess(g["backends"][backend]["max_rel_error"], 1e-4)
        grad_dir = os.path.join(out, "needs_grad", "batch_size_1")
        x = load_file(os.path.join(grad_dir, "inputs.safetensors"))["0"]
        want = load_file(os.path.join(grad_dir, "outputs.safetensors"))["0"]
        with torch.no_grad():
            for package in (torch._inductor.aoti_load_package(os.path.join(grad_dir,
                                                                          "aoti.pt2")),
                            torch.jit.load(os.path.join(grad_dir, "torchscript.pt"))):
                torch.testing.assert_close(package(x)[0], want, rtol=1e-4, atol=1e-5)
            module, _ = compile_stand_ins.build("needs_grad", 1)
            with self.assertRaisesRegex(RuntimeError, "does not require grad"):
                module(x)  # what made maml fail at build

        # tiny again, TorchScript alone: its AOTI package and entry stay.
        before = manifest(out, "tiny", 1)["backends"]["aoti"]
        before_eager = manifest(out, "tiny", 1)["python_eager_ms"]
        p, index = run_tool(["tiny", "--backend", "torchscript"], out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("aoti", p.stdout)
        m = manifest(out, "tiny", 1)
        self.assertEqual(m["backends"]["aoti"], before)
        self.assertEqual(m["backends"]["torchscript"]["status"], "ok")
        self.assertEqual(m["python_eager_ms"], before_eager)  # kept: not timed this time
        self.assertTrue(os.path.exists(os.path.join(directory, "aoti.pt2")))
        self.assertEqual(len(index["entries"]), 10)
        self.assertNotIn("--time-python", index["made_with"])

        # --time-only on the packages there, not compiled again: the Python
        # fields filled, everything else (compile seconds, the files) as it
        # was; a model without a manifest skipped in one line.
        kept_files = ("aoti.pt2", "torchscript.pt", "inputs.safetensors",
                      "outputs.safetensors", "weights.safetensors", "worker.log")
        mtimes = {f: os.stat(os.path.join(directory, f)).st_mtime_ns for f in kept_files}
        before, index_before = manifest(out, "tiny", 1), index
        self.assertNotIn("python_ms", before["backends"]["torchscript"])  # not timed last run
        p, index = run_tool(["tiny", "hangs", "--time-only", "--warmup", "1", "--steps", "2"],
                            out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual([l for l in p.stdout.splitlines() if l.startswith("hangs")],
                         ["hangs b1: skipped: no manifest.json"])
        self.assertRegex(p.stdout, r"tiny b1: eager \S+ ms; aoti \S+ ms; torchscript \S+ ms; "
                         r"torch.compile \S+ ms \(compile [0-9.]+ s; rel. error \S+\); "
                         r"inputs reproduced; ")
        self.assertIn("compile --time-only: 1 model(s) timed, 1 skipped", p.stderr)
        m = manifest(out, "tiny", 1)
        python = ("python_eager_ms", "python_inputs_match", "python_compile")
        self.assertIs(m["python_inputs_match"], True)
        self.assertEqual(len(m["python_eager_ms"]), 2)
        self.assertEqual((m["python_compile"]["status"], len(m["python_compile"]["ms"])),
                         ("ok", 2))
        self.assertLess(m["python_compile"]["max_rel_error"], 1e-4)
        for b in ("aoti", "torchscript"):
            self.assertEqual(len(m["backends"][b]["python_ms"]), 2)
            m["backends"][b].pop("python_ms")
            before["backends"][b].pop("python_ms", None)
        self.assertEqual({k: v for k, v in m.items() if k not in python},
                         {k: v for k, v in before.items() if k not in python})
        self.assertEqual(m["backends"]["aoti"]["compile_seconds"],
                         before["backends"]["aoti"]["compile_seconds"])
        self.assertEqual({f: os.stat(os.path.join(directory, f)).st_mtime_ns
                          for f in kept_files}, mtimes)
        self.assertTrue(os.path.exists(os.path.join(directory, "time.log")))
        self.assertEqual(index["made_with"], index_before["made_with"])
        self.assertIn("tools/tb compile tiny hangs --time-only", index["python_times_made_with"])
        self.assertEqual(index["entries"], index_before["entries"])  # tiny's say python_times
        self.assertTrue(entries(index)[("tiny", 1, "aoti")]["python_times"])
        # Made at another thread count: skipped, nothing run.
        p, _ = run_tool(["tiny", "--time-only", "--threads", "2"], out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "tiny b1: skipped: made with threads 1, this run's is 2\n")
        self.assertEqual(manifest(out, "tiny", 1)["python_eager_ms"], m["python_eager_ms"])

    def test_hang_and_crash(self):
        out = os.path.join(self.tmp.name, "isolated")
        p, index = run_tool(["hangs", "crashes", "--timeout", "8", "--jobs", "2"], out)
        self.assertEqual(p.returncode, 0, p.stderr)
        got = entries(index)
        self.assertEqual(got[("hangs", 1, "aoti")]["reason"], "timed out after 8 s")
        self.assertEqual(got[("hangs", 1, "aoti")]["phase"], "build")
        self.assertEqual(got[("crashes", 1, "torchscript")]["reason"],
                         "the worker died (killed by SIGABRT)")
        self.assertIn("compile: 2 model(s); aoti ok 0 of 2, torchscript ok 0 of 2", p.stderr)

    def test_interrupt(self):
        # Ctrl-C, and a timeout's SIGTERM, stop the run and its workers
        # (sessions of their own: no terminal signal reaches them), the
        # interrupted model saying so.
        for sig in (signal.SIGINT, signal.SIGTERM):
            out = os.path.join(self.tmp.name, f"interrupted_{sig.name}")
            command = [sys.executable, TOOL, "hangs", "--binary", STAND_INS, "--stand-in",
                       STAND_INS, "--reference-root", self.root, "-o", out]
            proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True)
            log = os.path.join(out, "hangs", "batch_size_1", "worker.log")
            manifest_path = os.path.join(os.path.dirname(log), "manifest.json")
            deadline = time.monotonic() + 60
            while not os.path.exists(manifest_path) and time.monotonic() < deadline:
                time.sleep(0.2)  # the worker has written its first manifest: it runs
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=60)
            self.assertEqual(proc.returncode, 130, err)
            self.assertIn("compile: interrupted;", err)
            left = subprocess.run(["pgrep", "-f", out], capture_output=True, text=True).stdout
            self.assertEqual(left, "")
            self.assertEqual(manifest(out, "hangs", 1)["backends"]["aoti"]["reason"],
                             "interrupted")

    def test_bad_input(self):
        out = os.path.join(self.tmp.name, "bad")
        for args, root, message in (
                (["no_such_model"], True, "compile: unknown model no_such_model"),
                (["train_only"], True, "compile: train_only has no Eval mode"),
                (["tiny"], False, "compile: 1 selected model(s) (tiny, ...) run TorchBench's "
                                  "own code: pass --reference-root"),
                (["tiny", "--batch-size", "0"], True, "compile: --batch-size must be a "
                                                      "positive integer")):
            p, index = run_tool(args, out, root=root)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertEqual(p.stderr.strip().count("\n"), 0, p.stderr)
            self.assertIn(message, p.stderr)
            self.assertIsNone(index)
        # No GPU torch can use (hidden where there is one): one line, before
        # any model is listed or built.
        p, index = run_tool(["tiny", "--device", "cuda"], out,
                            env={"CUDA_VISIBLE_DEVICES": ""})
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(p.stderr.strip(), "compile: --device cuda: no CUDA device is usable "
                         "here (torch.cuda.is_available() is False)")
        self.assertIsNone(index)
        p = subprocess.run([sys.executable, TOOL, "tiny", "--binary",
                            os.path.join(self.tmp.name, "none")],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("compile: no program at", p.stderr)
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "index.json"), "w") as f:
            f.write("{not json")
        p, _ = run_tool(["tiny", "-o", out])
        self.assertEqual(p.returncode, 2)
        self.assertIn("index.json: not an index this tool wrote", p.stderr)


if __name__ == "__main__":
    unittest.main()
