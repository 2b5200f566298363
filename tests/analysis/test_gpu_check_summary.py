"""tools/gpu_check_summary.py (tools/gpu_check.sh's summary) on made-up
results, without a GPU; and the order of versus_python.py eager --device
cuda's passes on a stand-in torch.

CompiledRows, the compiled rows:
- resnet50/Eval compiled and run: the AOTI step beside the eager fp32 run's
  (their ratio, both peaks), the fidelity counters, the compile seconds of
  tools/compile_models.py's index.json, the label; the verdicts stay the
  eager row's alone;
- the compile failed (the GPU machine's python lacks torchvision): its phase
  and reason; the program's run errored: its message; neither step ran: said
  so;
- --columns explains the compiled columns, the memory columns and the flags.

EagerRows, the main table of a run on a GPU (six planned instances: both sides
with every figure and the same flags; every memory figure missing and the
flags differing; a label of a program older than the read-back flags, Python
timed but its kernel count failed; the C++ run errored with a long
multi-line message; Python errored with no C++ result; and one instance
with neither, its step timed out):
- the memory columns: allocated, reserved and NVML's, "-" where missing;
- the flags in force: the same, differing (a verdict naming the flag), not
  in an old label (a verdict), no Python flags;
- every failure once, as its first line (a C++ error cut to 200
  characters, python_error, python_kernels_error, each step note) and a
  missing instance with its step's note;
- the context: each side's nvml and ld_library_path; the library paths
  equal, different, or not recorded by one side.

Rehearsal: gpu_check.sh --rehearse's summary without a GPU: the header,
the build line, each planned instance not run (with its step's note where
it has one), exit 0; without the build line, exit 1.

EagerCudaOrder: versus_python.py eager --device cuda --kernels on a fake
torch (no GPU): every instance's timed loop runs before any kernel count,
each kernel pass builds its step again with the same seed, NVML's figure is
read right after the timed loop, the flags are read back as python_flags;
a failing kernel count keeps its instance's timings; without NVML the
figure is None and the context says why.

usage: test_gpu_check_summary.py   (unittest; about 2 s)
"""
import contextlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import types
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SUMMARY = os.path.join(ROOT, "tools", "gpu_check_summary.py")
NAME = "resnet50/Eval/batch_size:32"
MIB = 2 ** 20
NEW_FLAGS = "tf32_matmul:false tf32_cudnn:true cudnn_benchmark:true cudnn_deterministic:false"


def program_json(precision, ms, counters, label, error=None, name=NAME, context=None):
    """The program's Google Benchmark JSON of one instance: two one-step
    repetitions and their _median aggregate (ms and counters)."""
    return {"context": {"precision": precision, **(context or {})},
            "benchmarks": program_rows(ms, counters, label, error, name)}


def program_rows(ms, counters, label, error=None, name=NAME):
    if error:
        return [{"name": name, "run_name": name, "run_type": "iteration",
                 "error_occurred": True, "error_message": error}]
    base = {"run_name": name, "time_unit": "ms", "label": label, **counters}
    rows = [dict(base, name=name, run_type="iteration", real_time=ms) for _ in range(2)]
    rows.append(dict(base, name=f"{name}_median", run_type="aggregate",
                     aggregate_name="median", real_time=ms))
    return rows


def run_summary(*args):
    return subprocess.run([sys.executable, SUMMARY, *args], capture_output=True, text=True,
                          timeout=60)


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
        p = run_summary("--columns")
        self.assertEqual(p.returncode, 0, p.stderr)
        for column in ("AOTI/eager", "err Py", "err port", "compile s"):
            self.assertRegex(p.stdout, rf"\n  {column} +\S")
        for column, says in (("C++ res", "peak_mem_reserved: the caching allocator's reserved"),
                             ("Py res", "python_peak_mem_reserved: torch.cuda.max_memory_reserved"),
                             ("C++ dev", "device_memory_used: NVML's memory used"),
                             ("Py dev", "python_device_memory_used: the same NVML figure"),
                             ("mem%", "C++ MiB / Py MiB - 1")):
            self.assertRegex(p.stdout, rf"\n  {re.escape(column)} +{re.escape(says)}")
        self.assertIn("flags in force (one line per instance): tf32_matmul, tf32_cudnn, "
                      "cudnn_benchmark, cudnn_deterministic", p.stdout)



class Files:
    """A temporary raw/ folder the tests write made-up results into."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def write(self, name, doc):
        with open(self.path(name), "w") as f:
            if isinstance(doc, str):
                f.write(doc)
            else:
                json.dump(doc, f)


A = "resnet50/Train/batch_size:32"   # both sides, every figure, the same flags
B = "hf_Bert/Eval/batch_size:8"      # no memory figure on either side, flags differ
C = "hf_Bert/Train/batch_size:8"     # an old label; Python's kernel count failed
D = "resnet50/Eval/batch_size:32"    # the program's run errored
E = "timm_vovnet/Train/batch_size:16"  # Python errored, no C++ result
LONG_ERROR = "CUDA out of memory. " + "x" * 300 + "\nsecond line of the error"
DIFFERENT = "tf32_matmul:true tf32_cudnn:true cudnn_benchmark:false cudnn_deterministic:false"
NO_BENCHMARK = "tf32_matmul:false tf32_cudnn:true cudnn_benchmark:false cudnn_deterministic:false"
PLAN = ["fp32:resnet50/Train", "fp32:resnet50/Eval", "fp32:hf_Bert/Train", "fp32:hf_Bert/Eval",
        "fp32:timm_vovnet/Train", "default:vision_maskrcnn/Eval"]


class EagerRows(Files, unittest.TestCase):
    def setUp(self):
        super().setUp()
        self.cpp_context = {"nvml": "available", "ld_library_path": "/opt/deps/lib"}
        self.py_context = {"python_device_memory_source": "torch.cuda.device_memory_used",
                           "ld_library_path": "/opt/deps/lib"}
        self.write("context.txt", "gpu=Fake GPU, 81559 MiB\nbuild=200 s, 16 jobs, ccache off\n")
        self.write("notes.txt", "cpp_fp32: exit 1 after 40 s (raw/cpp_fp32.log): an instance "
                   "errored, its row says how\n\ncpp_maskrcnn: timed out after 90 s "
                   "(raw/cpp_maskrcnn.log)\n")
        self.records = [
            {"benchmark": A, "precision": "fp32", "python_precision": "fp32",
             "python_median_ms": 10.0, "python_peak_mem": 910 * MIB,
             "python_peak_mem_reserved": 1024 * MIB, "python_device_memory_used": 1600 * MIB,
             "python_kernels_per_step": 100, "python_flags": NEW_FLAGS},
            {"benchmark": B, "precision": "fp32", "python_precision": "fp32",
             "python_median_ms": 5.0, "python_device_memory_used": None,
             "python_kernels_per_step": 50, "python_flags": DIFFERENT},
            {"benchmark": C, "precision": "fp32", "python_precision": "fp32",
             "python_median_ms": 21.0, "python_peak_mem": 2000 * MIB,
             "python_kernels_error": "RuntimeError: CUPTI_ERROR_NOT_INITIALIZED",
             "python_flags": NO_BENCHMARK},
            {"benchmark": D, "precision": "fp32", "python_precision": "fp32",
             "python_median_ms": 7.0, "python_flags": NEW_FLAGS},
            {"benchmark": E, "precision": "fp32",
             "python_error": "RuntimeError: boom\nTraceback (most recent call last):"}]

    def summary(self, status=0):
        self.write("cpp_fp32.json", {"context": {"precision": "fp32", **self.cpp_context},
                                     "benchmarks": [
            *program_rows(9.0, {"peak_mem": 900 * MIB, "peak_mem_reserved": 1000 * MIB,
                                "device_memory_used": 1500 * MIB, "kernels_per_step": 100},
                          f"precision:fp32 optimizer:foreach {NEW_FLAGS}", name=A),
            *program_rows(4.0, {"kernels_per_step": 50}, f"precision:fp32 {NO_BENCHMARK}",
                          name=B),
            *program_rows(20.0, {"peak_mem": 2000 * MIB, "kernels_per_step": 400},
                          "precision:fp32 cudnn_benchmark:false cudnn_deterministic:false",
                          name=C),
            *program_rows(0, {}, "", error=LONG_ERROR, name=D)]})
        self.write("py_fp32.json", {"context": {"precision": "fp32", **self.py_context},
                                    "results": self.records})
        p = run_summary("--context", self.path("context.txt"), "--notes",
                        self.path("notes.txt"), "--cpp", self.path("cpp_fp32.json"),
                        self.path("cpp_maskrcnn.json"), "--py", self.path("py_fp32.json"),
                        "--plan", *PLAN, "-o", self.path("summary.txt"))
        self.assertEqual(p.returncode, status, p.stderr)
        with open(self.path("summary.txt")) as f:
            self.assertEqual(f.read(), p.stdout)
        return p.stdout.splitlines()

    @staticmethod
    def section(lines, head):
        start = next(i for i, line in enumerate(lines) if line.startswith(head))
        end = lines.index("", start) if "" in lines[start:] else len(lines)
        return lines[start + 1:end]

    @staticmethod
    def row(lines, name):
        return next(line for line in lines if line.startswith(name + " ")).split()

    def test_memory_columns(self):
        lines = self.summary()
        header = next(line for line in lines if line.startswith("instance "))
        self.assertIn(" C++ MiB   Py MiB   mem%  C++ res   Py res  C++ dev   Py dev C++ kern",
                      header)
        self.assertEqual(self.row(lines, A)[:16], [
            A, "fp32", "fp32", "9.00", "10.00", "0.900", "900", "910", "-1.1",
            "1000", "1024", "1500", "1600", "100.0", "100.0", "+0.0"])
        # Each figure under its column: "Py dev" and 1600 end together.
        row = next(line for line in lines if line.startswith(A))
        self.assertEqual(row.index("1600") + 4, header.index("Py dev") + 6)
        # Neither side's memory: "-" in all seven (a null one as well).
        self.assertEqual(self.row(lines, B)[3:16], [
            "4.00", "5.00", "0.800", "-", "-", "-", "-", "-", "-", "-", "50.0", "50.0", "+0.0"])
        verdict = next(line for line in lines if line.startswith(f"  {B} [fp32]: time"))
        self.assertIn("memory n/a (no C++ and no Python figure)", verdict)

    def test_flags(self):
        lines = self.summary()
        self.assertEqual(self.section(lines, "flags in force"), [
            f"  {A} [fp32]: C++ {NEW_FLAGS}; Python the same",
            f"  {C} [fp32]: C++ not in the label (a program older than the read-back flags); "
            f"Python {NO_BENCHMARK}",
            f"  {B} [fp32]: C++ {NO_BENCHMARK}; Python {DIFFERENT} (differ: tf32_matmul)",
            f"  {E} [fp32]: C++ no result; Python no result"])
        verdicts = self.section(lines, "verdicts")
        # Four instances with a Python record (the errored C++ row has none),
        # two on flags, each after its instance's.
        self.assertEqual(len(verdicts), 6)
        self.assertTrue(verdicts[0].startswith(f"  {A} [fp32]: time PASS"))
        self.assertEqual(verdicts[2], f"  {C} [fp32]: flags unknown: the C++ label lacks the "
                         "read-back flags (tf32_matmul, tf32_cudnn: a program older than them)")
        self.assertTrue(verdicts[3].startswith(f"  {B} [fp32]: time PASS"))
        self.assertEqual(verdicts[4], f"  {B} [fp32]: flags differ: C++ tf32_matmul:false vs "
                         "Python tf32_matmul:true")
        self.assertEqual(verdicts[5], f"  {E} [fp32]: time n/a (no C++ and no Python figure); "
                         "memory n/a (no C++ and no Python figure); kernels n/a (no C++ and "
                         "no Python figure)")
        self.assertEqual(lines[-1], "overall: 7 PASS, 0 FAIL, 5 n/a; flags differ on 1; "
                         "flags unknown on 1")

    def test_failures_first_line(self):
        lines = self.summary()
        cut = ("CUDA out of memory. " + "x" * 300)[:197] + "..."
        self.assertEqual(len(cut), 200)
        self.assertEqual(self.section(lines, "notes (every failure"), [
            f"  C++ {D} [fp32]: {cut}",
            f"  Python kernels {C} [fp32]: RuntimeError: CUPTI_ERROR_NOT_INITIALIZED",
            f"  Python {E} [fp32]: RuntimeError: boom",
            "  step cpp_fp32: exit 1 after 40 s (raw/cpp_fp32.log): an instance errored, its "
            "row says how",
            "  step cpp_maskrcnn: timed out after 90 s (raw/cpp_maskrcnn.log)"])
        self.assertIn(f"{D:32s}     fp32 error: {cut}", lines)
        self.assertNotIn("second line", "\n".join(lines))
        self.assertNotIn("Traceback", "\n".join(lines))
        # The Python-only row, its error beside; the instance with neither:
        # its step's note (cpp_maskrcnn runs vision_maskrcnn).
        self.assertTrue(next(line for line in lines if line.startswith(E)).endswith(
            "no C++ result (see the notes below)  [python: RuntimeError: boom]"))
        self.assertIn(f"{'vision_maskrcnn/Eval':32s}  default missing: no result "
                      "(cpp_maskrcnn: timed out after 90 s (raw/cpp_maskrcnn.log))", lines)

    def test_context_equal_paths(self):
        context = self.section(self.summary(), "context:")
        self.assertEqual(context, [
            "  gpu: Fake GPU, 81559 MiB", "  build: 200 s, 16 jobs, ccache off",
            "  C++ (cpp_fp32.json): nvml: available; ld_library_path: '/opt/deps/lib'",
            "  Python (py_fp32.json): nvml: available (torch.cuda.device_memory_used); "
            "ld_library_path: '/opt/deps/lib'",
            "  library paths: equal on both sides ('/opt/deps/lib')"])

    def test_context_different_paths(self):
        self.cpp_context["nvml"] = "unavailable: libnvidia-ml.so.1: cannot open shared object"
        self.py_context.update(ld_library_path="", python_device_memory_source=(
            "unavailable: pynvml: ModuleNotFoundError: No module named 'pynvml'"))
        context = self.section(self.summary(), "context:")
        self.assertEqual(context[2:], [
            "  C++ (cpp_fp32.json): nvml: unavailable: libnvidia-ml.so.1: cannot open shared "
            "object; ld_library_path: '/opt/deps/lib'",
            "  Python (py_fp32.json): nvml: unavailable: pynvml: ModuleNotFoundError: No module "
            "named 'pynvml'; ld_library_path: (empty)",
            "  library paths differ: C++ '/opt/deps/lib' vs Python (empty)"])

    def test_context_one_side(self):
        self.cpp_context = {}
        context = self.section(self.summary(), "context:")
        self.assertEqual(context[2:], [
            "  Python (py_fp32.json): nvml: available (torch.cuda.device_memory_used); "
            "ld_library_path: '/opt/deps/lib'",
            "  library paths: not compared (only the Python side recorded ld_library_path)"])


class Rehearsal(Files, unittest.TestCase):
    def summary(self, context, status):
        self.write("context.txt", context)
        self.write("notes.txt", "cpp_fp32: exit 1 after 0 s (raw/cpp_fp32.log)\n"
                   "cpp_unet_amp: not run: needs a GPU (rehearsal)\n")
        raw = self.tmp.name
        p = run_summary(
            "--context", self.path("context.txt"), "--notes", self.path("notes.txt"),
            "--cpp", *(f"{raw}/cpp_{n}.json" for n in ("fp32", "default", "unet_amp", "moco")),
            "--py", f"{raw}/py_fp32.json", f"{raw}/py_default.json",
            "--plan", "fp32:resnet50/Train", "default:hf_Bert/Eval",
            "amp_fp16:pytorch_unet/Train", "default:moco/Train",
            "--compiled", f"{raw}/compiled", "--cpp-compiled", f"{raw}/cpp_compiled.json",
            "--compiled-plan", "resnet50/Eval", "-o", self.path("summary.txt"))
        self.assertEqual(p.returncode, status, p.stderr)
        self.assertTrue(os.path.exists(self.path("summary.txt")))
        return p.stdout.splitlines()

    def test_built(self):
        lines = self.summary("python=/usr/bin/python3 3.11.2\nrehearsal=no GPU: "
                             "torch.cuda.is_available() is False\nbuild=312 s, 16 jobs, "
                             "ccache off\n", 0)
        self.assertEqual(lines[1:4], [
            "REHEARSAL (no GPU): build and configure only",
            "  rehearsal: no GPU: torch.cuda.is_available() is False",
            "  build: 312 s, 16 jobs, ccache off"])
        start = lines.index("planned instances (nothing runs without a GPU):")
        self.assertEqual(lines[start + 1:start + 6], [
            f"  {'resnet50/Train':32s}     fp32 cpp_fp32: exit 1 after 0 s (raw/cpp_fp32.log)",
            f"  {'hf_Bert/Eval':32s}  default not run: needs a GPU",
            f"  {'pytorch_unet/Train':32s} amp_fp16 cpp_unet_amp: not run: needs a GPU "
            "(rehearsal)",
            f"  {'moco/Train':32s}  default not run: needs a GPU",
            f"  {'resnet50/Eval (AOTI)':32s}     fp32 not run: needs a GPU"])
        self.assertEqual(lines[-1], "overall: rehearsal built; nothing run (no GPU)")

    def test_not_built(self):
        lines = self.summary("rehearsal=no GPU: torch.cuda.is_available() is False\n", 1)
        self.assertEqual(lines[3], "  build: no build line in the context (the build did "
                         "not finish)")
        self.assertEqual(lines[-1], "overall: rehearsal NOT built; nothing run (no GPU)")


sys.path.insert(0, os.path.join(ROOT, "tools"))
import versus_python  # noqa: E402  (tools/versus_python.py; torch only inside functions)


def fake_torch(log, nvml=True):
    """The torch surface versus_python.py eager --device cuda touches, each
    call that matters appended to `log`: CUDA events' record, NVML's read,
    the allocator's peaks, the seed. torch.backends start at PyTorch's
    defaults (matmul TF32 off, cuDNN TF32 on)."""
    ns = types.SimpleNamespace

    def logged(what, value=None):
        return lambda *args, **kwargs: log.append(what) or value

    class Event:
        def __init__(self, enable_timing=False):
            pass

        def record(self):
            log.append("record")

        def elapsed_time(self, end):
            return 4.0

    torch = types.ModuleType("torch")
    torch.__version__ = "2.99.0+fake"
    torch.version = ns(cuda="13.0")
    torch.manual_seed = lambda seed: log.append(f"seed {seed}")
    torch.backends = ns(cuda=ns(matmul=ns(allow_tf32=False)),
                        cudnn=ns(allow_tf32=True, benchmark=False, deterministic=False,
                                 version=lambda: 91000))
    torch.cuda = ns(is_available=lambda: True, get_device_name=lambda *a: "Fake GPU",
                    synchronize=lambda: None, empty_cache=lambda: None,
                    current_device=lambda: 0, Event=Event,
                    reset_peak_memory_stats=logged("reset peaks"),
                    max_memory_allocated=logged("allocated peak", 900 * MIB),
                    max_memory_reserved=logged("reserved peak", 1000 * MIB))
    if nvml:
        torch.cuda.device_memory_used = logged("nvml", 1500 * MIB)
    return torch


class EagerCudaOrder(Files, unittest.TestCase):
    """versus_python.py eager --device cuda --kernels without a GPU: torch,
    build_pip_step and count_kernels stood in for."""

    def run_eager(self, nvml=True, failing=()):
        log = []

        def build_pip_step(name, mode, batch_size, device="cpu", precision="fp32"):
            log.append(f"build {name}/{mode}")

            def step():
                log.append(f"step {name}/{mode}")
            step.instance = f"{name}/{mode}"
            return step

        def count_kernels(step, kernel_steps):
            log.append(f"profile {step.instance}")
            if step.instance in failing:
                raise RuntimeError("CUPTI_ERROR_NOT_INITIALIZED\nmore")
            return 42.0

        out = io.StringIO()
        with mock.patch.dict(sys.modules, {"torch": fake_torch(log, nvml), "pynvml": None}), \
                mock.patch.object(versus_python, "build_pip_step", build_pip_step), \
                mock.patch.object(versus_python, "count_kernels", count_kernels), \
                mock.patch.dict(os.environ, {"LD_LIBRARY_PATH": "/opt/deps/lib"}), \
                contextlib.redirect_stdout(out):
            status = versus_python.eager_main([
                "--device", "cuda", "--models", "resnet50", "hf_Bert", "--modes", "Eval",
                "--batch-size", "4", "--warmup", "1", "--steps", "2", "--kernels",
                "--kernel-steps", "3", "--python-only", "--json", self.path("py.json")])
        with open(self.path("py.json")) as f:
            return status, log, json.load(f), out.getvalue()

    def test_timed_loops_before_any_profiler(self):
        status, log, doc, out = self.run_eager()
        self.assertEqual(status, 0, out)
        timed = ["seed 1337", "build {0}", "step {0}", "reset peaks", "record", "step {0}",
                 "record", "record", "step {0}", "record", "nvml", "allocated peak",
                 "reserved peak"]
        kernels = ["seed 1337", "build {0}", "step {0}", "profile {0}"]
        expected = ["nvml"]  # device_memory_reader's probe, before any step
        for instance in ("resnet50/Eval", "hf_Bert/Eval"):
            expected += [e.format(instance) for e in timed]
        for instance in ("resnet50/Eval", "hf_Bert/Eval"):
            expected += [e.format(instance) for e in kernels]
        self.assertEqual(log, expected)
        # The rule itself: no CUDA-event-timed step after a profiler session.
        first_profile = next(i for i, e in enumerate(log) if e.startswith("profile"))
        self.assertNotIn("record", log[first_profile:])
        records = doc["results"]
        self.assertEqual([r["benchmark"] for r in records],
                         ["resnet50/Eval/batch_size:4", "hf_Bert/Eval/batch_size:4"])
        for record, benchmark in zip(records, ("true", "false")):
            self.assertEqual(record["python_kernels_per_step"], 42.0)
            self.assertEqual(record["python_median_ms"], 4.0)
            self.assertEqual(record["python_device_memory_used"], 1500 * MIB)
            self.assertEqual(record["python_peak_mem"], 900 * MIB)
            self.assertEqual(record["python_peak_mem_reserved"], 1000 * MIB)
            # cudnn.benchmark: torchvision's on, HF's off; read back.
            self.assertEqual(record["python_flags"], "tf32_matmul:false tf32_cudnn:true "
                             f"cudnn_benchmark:{benchmark} cudnn_deterministic:false")
            self.assertEqual(record["cudnn_benchmark"], benchmark == "true")
        self.assertEqual(doc["context"]["python_device_memory_source"],
                         "torch.cuda.device_memory_used")
        self.assertEqual(doc["context"]["ld_library_path"], "/opt/deps/lib")
        self.assertIn("device memory used: torch.cuda.device_memory_used", out)

    def test_kernel_count_fails(self):
        status, log, doc, out = self.run_eager(failing=("resnet50/Eval",))
        self.assertEqual(status, 1)
        failed, counted = doc["results"]
        self.assertEqual(failed["python_kernels_error"],
                         "RuntimeError: CUPTI_ERROR_NOT_INITIALIZED")
        self.assertNotIn("python_kernels_per_step", failed)
        self.assertEqual(failed["python_median_ms"], 4.0)  # its timings kept
        self.assertNotIn("python_error", failed)
        self.assertEqual(counted["python_kernels_per_step"], 42.0)
        self.assertEqual(log[-1], "profile hf_Bert/Eval")  # the next instance still counted
        self.assertIn("python_kernels_error: RuntimeError: CUPTI_ERROR_NOT_INITIALIZED", out)

    def test_without_nvml(self):
        status, log, doc, out = self.run_eager(nvml=False)
        self.assertEqual(status, 0, out)
        self.assertNotIn("nvml", log)
        self.assertEqual([r["python_device_memory_used"] for r in doc["results"]], [None, None])
        source = doc["context"]["python_device_memory_source"]
        self.assertTrue(source.startswith("unavailable: torch 2.99.0+fake has no "
                                          "torch.cuda.device_memory_used; pynvml: "), source)


if __name__ == "__main__":
    unittest.main()
