"""tools/coverage.py (tools/tb coverage) on hand-made coverage files in fixtures/.

- coverage_a.jsonl: SYNTHETIC: a registry of 24 aten operators (26 overloads:
  add.Scalar, add.Tensor, add.out) and 2 torchvision ones; resnet50 Train
  (forward, backward, optimizer) and Eval, with a stale resnet50 Eval line
  first (it reaches aten::atan2; the later line wins, so atan2 stays
  uncovered);
- coverage_b.jsonl: SYNTHETIC: the same registry; hf_Bert_large Eval and
  timm_efficientdet Eval (torchvision::nms, aten::add.Scalar nested only);
- coverage_run.json: SYNTHETIC: a Google Benchmark JSON whose context names
  coverage_b.jsonl (relative to the JSON's folder).

The figures asserted here are worked out by hand from those files: 17 of the
24 aten operators (18 of 26 overloads); resnet50 reaches 12 and alone 7, the
MLPerf-like subset (hf_Bert_large, resnet50) 15, so suite / subset = 17/15.

usage: test_coverage.py   (unittest; runs tools/coverage.py in this interpreter
and as a command)
"""
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(HERE, "fixtures")
A = os.path.join(FIXTURES, "coverage_a.jsonl")
B = os.path.join(FIXTURES, "coverage_b.jsonl")
RUN = os.path.join(FIXTURES, "coverage_run.json")
CPU = os.path.join(FIXTURES, "cpu_run.json")
TOOL = os.path.join(ROOT, "tools", "coverage.py")
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, HERE)
import coverage  # noqa: E402  (tools/coverage.py)
from tbench import files  # noqa: E402  (tools/tbench/files.py)
import report  # noqa: E402  (tools/report.py)
from test_report import Checker  # noqa: E402


def aten(*names):
    return ["aten::" + n for n in names]


RESNET50 = sorted(aten("convolution", "relu_", "addmm", "t", "mm", "add", "add_",
                       "convolution_backward", "threshold_backward", "sum", "_foreach_add_",
                       "_foreach_mul_"))
BERT = sorted(aten("embedding", "native_layer_norm", "addmm", "t", "add", "mul"))
EFFDET = sorted(aten("convolution", "relu", "upsample_nearest2d", "add", "sum"))


class Coverage(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def analyse(self, *paths, mlperf=None):
        return coverage.load_doc(list(paths), mlperf)

    def model(self, doc, name):
        return next(m for m in doc["models"] if m["model"] == name)

    def write(self, name, lines):
        path = os.path.join(self.dir, name)
        with open(path, "w", encoding="utf-8") as f:
            for line in lines:
                f.write((line if isinstance(line, str) else json.dumps(line)) + "\n")
        return path

    def cli(self, *args, tb=False):
        cmd = [os.path.join(ROOT, "tools", "tb"), "coverage"] if tb else [sys.executable, TOOL]
        return subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=120,
                              cwd=self.dir)

    def test_denominator_and_suite(self):
        doc = self.analyse(A, B)
        self.assertEqual(doc["registry"]["aten"], {"operators": 24, "overloads": 26})
        self.assertEqual(doc["registry"]["other_namespaces"], {"torchvision": {
            "operators": 2, "overloads": 2, "covered_operators": 1, "covered_overloads": 1}})
        s = doc["suite"]
        self.assertEqual((s["models"], s["instances"]), (3, 4))
        self.assertEqual(s["operators"], {
            "covered": 17, "registry": 24, "ratio": round(17 / 24, 6),
            "phases": {"forward": 13, "backward": 6, "optimizer": 2},
            "top_level": 16, "nested_only": 1})
        self.assertEqual(s["overloads"], {
            "covered": 18, "registry": 26, "ratio": round(18 / 26, 6),
            "phases": {"forward": 14, "backward": 6, "optimizer": 2},
            "top_level": 16, "nested_only": 2})
        self.assertEqual(doc["libtorch_version"], "2.14.1")
        self.assertEqual(doc["devices"], ["cpu"])
        self.assertEqual(doc["not_in_registry"], [])

    def test_models_instances_domains(self):
        doc = self.analyse(A, B)
        self.assertEqual(self.model(doc, "resnet50")["covered"], RESNET50)
        self.assertEqual(self.model(doc, "hf_Bert_large")["covered"], BERT)
        self.assertEqual(self.model(doc, "timm_efficientdet")["covered"], EFFDET)
        r = self.model(doc, "resnet50")
        self.assertEqual(r["modes"], ["Train", "Eval"])
        self.assertEqual(r["operators"]["phases"], {"forward": 7, "backward": 6, "optimizer": 2})
        self.assertEqual(r["stacked"], {"forward": 7, "backward": 3, "optimizer": 2})
        self.assertEqual((r["operators"]["top_level"], r["operators"]["nested_only"]), (11, 1))
        self.assertEqual(self.model(doc, "timm_efficientdet")["other_namespaces"],
                         {"torchvision": 1})
        # The stale resnet50 Eval line (with atan2) lost to the later one.
        inst = {i["instance"]: i for i in doc["instances"]}
        self.assertEqual(sorted(inst), ["hf_Bert_large/Eval/batch_size:1",
                                        "resnet50/Eval/batch_size:1",
                                        "resnet50/Train/batch_size:1",
                                        "timm_efficientdet/Eval/batch_size:1"])
        self.assertEqual(inst["resnet50/Eval/batch_size:1"]["operators"]["covered"], 6)
        self.assertEqual(inst["resnet50/Train/batch_size:1"]["operators"]["covered"], 12)
        self.assertEqual(inst["resnet50/Train/batch_size:1"]["operators"]["phases"],
                         {"forward": 6, "backward": 6, "optimizer": 2})
        self.assertNotIn("aten::atan2", r["covered"])
        self.assertEqual([(d["domain"], d["models"], d["operators"]["covered"])
                          for d in doc["domains"]],
                         [("detection", ["timm_efficientdet"], 5),
                          ("nlp", ["hf_Bert_large"], 6), ("vision", ["resnet50"], 12)])

    def test_unique_contributions_and_greedy(self):
        doc = self.analyse(A, B)
        self.assertEqual([(m["model"], m["unique"]) for m in doc["models"]], [
            ("resnet50", sorted(aten("relu_", "mm", "add_", "convolution_backward",
                                     "threshold_backward", "_foreach_add_", "_foreach_mul_"))),
            ("hf_Bert_large", sorted(aten("embedding", "native_layer_norm", "mul"))),
            ("timm_efficientdet", sorted(aten("relu", "upsample_nearest2d")))])
        self.assertEqual(doc["cumulative"], [
            {"model": "resnet50", "gain": 12, "covered": 12},
            {"model": "hf_Bert_large", "gain": 3, "covered": 15},
            {"model": "timm_efficientdet", "gain": 2, "covered": 17}])

    def test_families(self):
        for op, fam in (("aten::_foreach_add_", "foreach"),
                        ("aten::upsample_bilinear2d_backward", "upsample"),
                        ("aten::log10", "log"), ("aten::atan2", "atan"),
                        ("aten::native_layer_norm_backward", "native"),
                        ("aten::__and__", "and"), ("aten::add.out", "add"),
                        ("aten::_cudnn_rnn_backward", "cudnn"), ("aten::mm", "mm"),
                        ("aten::max_pool2d_with_indices_backward", "max"),
                        ("aten::linalg_svd_out", "linalg"), ("aten::_fft_r2c", "fft")):
            self.assertEqual(coverage.family(op), fam, op)
        doc = self.analyse(A, B)
        self.assertEqual(doc["uncovered"]["operators"], 7)
        self.assertEqual([(f["family"], f["operators"]) for f in doc["uncovered"]["families"]], [
            ("upsample", aten("upsample_bilinear2d", "upsample_bilinear2d_backward")),
            ("atan", aten("atan2")), ("embedding", aten("embedding_dense_backward")),
            ("foreach", aten("_foreach_addcmul_")), ("log", aten("log10")),
            ("native", aten("native_layer_norm_backward"))])

    def test_train_only(self):
        doc = self.analyse(A, B)
        t = doc["train_only"]
        self.assertEqual(t["models"], ["resnet50"])
        self.assertEqual(t["backward_only"], aten("convolution_backward", "sum",
                                                  "threshold_backward"))
        self.assertEqual(t["optimizer_only"], aten("_foreach_add_", "_foreach_mul_"))
        self.assertEqual(t["other"], aten("add_"))
        self.assertEqual(t["counts"], {"backward_only": 3, "optimizer_only": 2, "other": 1})
        self.assertEqual(self.model(doc, "resnet50")["train_only"], t["counts"])
        self.assertIsNone(self.model(doc, "hf_Bert_large")["train_only"])

    def test_mlperf(self):
        m = self.analyse(A, B)["mlperf"]
        self.assertEqual(m["models"], ["hf_Bert_large", "resnet50"])
        self.assertEqual(m["absent"], ["dlrm", "vision_maskrcnn"])
        self.assertEqual((m["operators"]["covered"], m["overloads"]["covered"]), (15, 15))
        self.assertEqual(m["suite_over_subset"], {"operators": round(17 / 15, 6),
                                                  "overloads": 1.2})
        m = self.analyse(A, B, mlperf=["timm_efficientdet"])["mlperf"]
        self.assertEqual((m["models"], m["absent"], m["default"]),
                         (["timm_efficientdet"], [], False))
        self.assertEqual(m["suite_over_subset"]["operators"], round(17 / 5, 6))
        # Only resnet50 present: the default subset is what the runs hold.
        m = self.analyse(A)["mlperf"]
        self.assertEqual((m["models"], m["suite_over_subset"]["operators"]), (["resnet50"], 1.0))

    def test_run_json_names_its_coverage_file(self):
        direct = self.analyse(A, B)
        via_run = self.analyse(A, RUN)  # cwd is not fixtures/: found beside the run JSON
        self.assertEqual(via_run["inputs"], [A, B])
        self.assertEqual(direct, via_run)

    def test_deterministic_and_read_back(self):
        outs = []
        for n in (1, 2):
            out = os.path.join(self.dir, f"c{n}.json")
            p = self.cli(A, B, "-o", out)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(out, "rb") as f:
                outs.append(f.read())
            outs.append(p.stdout.encode())
        self.assertEqual(outs[0], outs[2])
        self.assertEqual(outs[1], outs[3])
        self.assertEqual(json.loads(outs[0]), self.analyse(A, B))
        # A -o file given alone is read back as it is.
        p = self.cli(os.path.join(self.dir, "c1.json"))
        self.assertEqual((p.returncode, p.stdout.encode()), (0, outs[1]), p.stderr)

    def test_text(self):
        p = self.cli(A, B, tb=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertIn("suite: 17 / 24 aten operators (70.8 %); 18 / 26 overloads (69.2 %)",
                      lines)
        self.assertIn("  other namespaces (not in the ratio): torchvision 1 / 2", lines)
        self.assertIn("MLPerf-like subset (hf_Bert_large, resnet50; absent: dlrm, "
                      "vision_maskrcnn): 15 / 24 (62.5 %); suite / subset 1.13× "
                      "(overloads 1.20×)", lines)
        self.assertIn("only in Train (1 model with Train and Eval): 6 operators: 3 backward "
                      "only, 2 optimizer only, 1 other", lines)
        i = lines.index("uncovered: 7 aten operators in 6 families, the largest:")
        self.assertEqual(lines[i + 1:i + 3], ["  upsample 2 (upsample_bilinear2d, "
                                              "upsample_bilinear2d_backward)", "  atan 1 (atan2)"])
        self.assertLess(len(lines), 25)

    def check_page(self, page):
        c = Checker()
        c.feed(page)
        c.close()
        self.assertEqual(c.problems, [])
        self.assertEqual(c.stack, [])
        self.assertEqual(c.doctype, "DOCTYPE html")
        return c

    def test_html(self):
        out = os.path.join(self.dir, "c.html")
        p = self.cli(A, RUN, "--html", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out, encoding="utf-8") as f:
            page = f.read()
        c = self.check_page(page)
        self.assertEqual(c.tags.get("svg"), 2)
        for needle in ('<section id="coverage">', 'aria-label="aten operators per model by '
                       'phase"', 'aria-label="cumulative aten operator coverage',
                       "17 / 24 (70.8 %)", "15 / 24 (62.5 %)", "1.13×", "What no model reaches",
                       "<td>upsample</td>", "get_testing_overrides"):
            self.assertTrue(needle in page, needle)

    def test_report_section(self):
        out = os.path.join(self.dir, "r.html")
        cov = os.path.join(self.dir, "c.json")
        self.assertEqual(self.cli(A, B, "-o", cov).returncode, 0)
        for inputs in ([A, RUN], [cov]):  # coverage files (a run naming one), or a -o file
            args = [CPU, "-o", out]
            for x in inputs:
                args += ["--coverage", x]
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                code = report.main(args)
            self.assertEqual(code, 0, err.getvalue())
            with open(out, encoding="utf-8") as f:
                page = f.read()
            self.check_page(page)
            # After the run's sections (1. by domain, 2. train against eval), before the legend.
            for needle in ('<section id="coverage"><h2>3. Operator coverage</h2>',
                           '<a href="#coverage">3. Operator coverage</a>',
                           '<section id="legend"><h2>4. Legend</h2>',
                           "Operator coverage: 17 / 24 (70.8 %)",  # at a glance
                           'aria-label="cumulative aten operator coverage'):
                self.assertTrue(needle in page, needle)

    def test_bad_input_exits_2_with_one_line(self):
        reg = json.dumps({"registry": {"libtorch_version": "2.14.1", "device": "cpu",
                                       "ops": ["aten::mm"]}})
        other = json.dumps({"registry": {"libtorch_version": "2.15.0", "device": "cpu",
                                         "ops": ["aten::mm"]}})
        inst = {"instance": "m/Eval/batch_size:1", "ops": [{"op": "aten::mm", "phase": "fwd"}]}
        no_file = self.write("no_file.json", [json.dumps({"context": {}, "benchmarks": []})])
        missing = self.write("missing.json", [json.dumps(
            {"context": {"op_coverage_file": "gone.jsonl"}, "benchmarks": []})])
        cases = [
            ([os.path.join(self.dir, "absent.jsonl")], "absent.jsonl: cannot read"),
            ([self.write("invalid.jsonl", [reg, '{"instance": '])], "invalid.jsonl:2: not valid "
             "JSON"),
            ([self.write("noreg.jsonl", [json.dumps({"instance": "m/Eval/batch_size:1",
                                                     "ops": []})])], "no registry line"),
            ([A, self.write("v215.jsonl", [other])], "different libtorch_version: 2.14.1"),
            ([no_file], "names no op_coverage_file"),
            ([missing], "gone.jsonl is not there"),
            ([self.write("phase.jsonl", [reg, json.dumps(inst)])], "phase 'fwd'"),
            ([self.write("empty.jsonl", [])], "no registry line"),
            ([A, B, "--mlperf", "resnet50,dlrm"], "--mlperf: no input holds dlrm"),
        ]
        for args, message in cases:
            p = self.cli(*args, "-o", os.path.join(self.dir, "x.json"))
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            lines = p.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, p.stderr)
            self.assertTrue(lines[0].startswith("tb coverage: "), lines[0])
            self.assertIn(message, lines[0])
            self.assertEqual(p.stdout, "")
            self.assertFalse(os.path.exists(os.path.join(self.dir, "x.json")))
        # The same through tools/tb, and through the report's --coverage.
        p = self.cli(no_file, tb=True)
        self.assertEqual((p.returncode, p.stderr.count("\n")), (2, 1), p.stderr)
        self.assertTrue(p.stderr.startswith("tb coverage: "), p.stderr)
        p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "report.py"), CPU,
                            "--coverage", no_file, "-o", os.path.join(self.dir, "r.html")],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual((p.returncode, p.stderr.count("\n")), (2, 1), p.stderr)
        self.assertIn("report: --coverage: ", p.stderr)

    def test_torn_last_line_is_skipped_with_a_note(self):
        # A child killed mid-append leaves its line without a newline: that line
        # is skipped with one note naming FILE:LINE, the rest of the file counts.
        reg = {"registry": {"libtorch_version": "2.14.1", "device": "cpu",
                            "ops": ["aten::mm", "aten::add"]}}
        inst = {"instance": "m/Eval/batch_size:1", "ops": [{"op": "aten::mm"}]}
        whole = self.write("whole.jsonl", [reg, inst])
        torn = self.write("torn.jsonl", [reg, inst])
        cut = '{"instance": "n/Eval/batch_size:1", "ops": [{"op": "aten::ad'
        with open(torn, "a", encoding="utf-8") as f:
            f.write(cut)
        p = self.cli(torn)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr.splitlines(), [f"tb coverage: note: {torn}:3: skipped: cut "
                                                 f"short ({len(cut)} bytes without a newline: "
                                                 "a writer killed mid-line)"])
        self.assertEqual(p.stdout, self.cli(whole).stdout)
        doc = self.analyse(torn)
        self.assertEqual([m["model"] for m in doc["models"]], ["m"])
        # A last line that is whole JSON and only lacks its newline counts.
        with open(whole, "a", encoding="utf-8") as f:
            f.write(json.dumps(dict(inst, instance="n/Eval/batch_size:1")))
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            doc = self.analyse(whole)
        self.assertEqual((err.getvalue(), sorted(m["model"] for m in doc["models"])),
                         ("", ["m", "n"]))
        # Through the report's --coverage, the note is the report's.
        p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "report.py"), CPU,
                            "--coverage", torn, "-o", os.path.join(self.dir, "r.html")],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(f"report: note: --coverage: {torn}:3: skipped: cut short",
                      p.stderr.splitlines()[0])

    def test_corrupt_whole_line_refuses_the_file(self):
        # A line that ends with its newline was written whole: if it is not
        # JSON the file is damaged, and the tool refuses it, naming FILE:LINE.
        reg = {"registry": {"libtorch_version": "2.14.1", "device": "cpu", "ops": ["aten::mm"]}}
        inst = {"instance": "m/Eval/batch_size:1", "ops": [{"op": "aten::mm"}]}
        bad = self.write("bad.jsonl", [reg, '{"instance": "n/Ev\x00garbage', inst])
        out = os.path.join(self.dir, "x.json")
        p = self.cli(bad, "-o", out)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
        self.assertTrue(p.stderr.startswith(f"tb coverage: {bad}:2: not valid JSON ("),
                        p.stderr)
        self.assertFalse(os.path.exists(out))

    def test_repeated_instance_keeps_the_last(self):
        # A child killed after its coverage line and before its journal record
        # runs again on resume and appends the instance again: the last counts.
        reg = {"registry": {"libtorch_version": "2.14.1", "device": "cpu",
                            "ops": ["aten::mm", "aten::add"]}}
        first = {"instance": "m/Eval/batch_size:1", "ops": [{"op": "aten::add"}]}
        rerun = {"instance": "m/Eval/batch_size:1", "ops": [{"op": "aten::mm"}]}
        doc = self.analyse(self.write("rerun.jsonl", [reg, first, rerun]))
        self.assertEqual(doc["suite"]["instances"], 1)
        self.assertEqual(doc["suite"]["operators"]["covered"], 1)
        self.assertEqual(doc["suite"], self.analyse(self.write("mm.jsonl", [reg, rerun]))["suite"])

    def test_outputs_are_written_whole(self):
        # -o and --html replace a previous file by rename: no temporary left.
        out, page = os.path.join(self.dir, "c.json"), os.path.join(self.dir, "c.html")
        for path in (out, page):
            with open(path, "w", encoding="utf-8") as f:
                f.write("old")
        p = self.cli(A, B, "-o", out, "--html", page)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(os.listdir(self.dir)), ["c.html", "c.json"])
        with open(out, encoding="utf-8") as f:
            self.assertEqual(json.load(f)["tool"], coverage.TOOL)
        with open(page, encoding="utf-8") as f:
            self.assertTrue(f.read().startswith("<!DOCTYPE html>"))


class AtomicFiles(unittest.TestCase):
    """tools/tbench/files.py: the one writer every tool's output goes through."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.path = os.path.join(self.dir, "out.json")

    def tearDown(self):
        self.tmp.cleanup()

    def test_a_write_that_fails_leaves_the_old_file(self):
        files.write_json(self.path, {"old": 1})
        with self.assertRaises(TypeError):  # not JSON: fails after the first bytes
            files.write_json(self.path, {"new": 1, "bad": object()})
        with self.assertRaises(RuntimeError):
            with files.replacing(self.path) as tmp:
                with open(tmp, "w", encoding="utf-8") as f:
                    f.write("{\"half")
                raise RuntimeError("killed midway")
        self.assertEqual(os.listdir(self.dir), ["out.json"])
        with open(self.path, encoding="utf-8") as f:
            self.assertEqual(json.load(f), {"old": 1})

    def test_text_bytes_and_permissions(self):
        files.write_text(self.path, "<p>é</p>\n")
        with open(self.path, encoding="utf-8") as f:
            self.assertEqual(f.read(), "<p>é</p>\n")
        files.write_text(self.path, b"\x00\x01")
        with open(self.path, "rb") as f:
            self.assertEqual(f.read(), b"\x00\x01")
        umask = os.umask(0)
        os.umask(umask)
        self.assertEqual(os.stat(self.path).st_mode & 0o777, 0o666 & ~umask)
        nested = os.path.join(self.dir, "a", "b.json")  # the folder is made
        files.write_json(nested, [1])
        self.assertEqual(os.listdir(os.path.dirname(nested)), ["b.json"])

    def test_append_cuts_a_torn_tail(self):
        path = os.path.join(self.dir, "j.jsonl")
        self.assertEqual(files.append_line(path, '{"a": 1}'), "")
        with open(path, "a", encoding="utf-8") as f:
            f.write('{"a": 2, "b": [')  # a writer killed mid-line
        self.assertIn("cut off 15 bytes", files.append_line(path, '{"a": 3}'))
        with open(path, "a", encoding="utf-8") as f:
            f.write('{"a": 4}')  # killed before its newline: a whole record
        self.assertIn("finished it", files.append_line(path, '{"a": 5}'))
        with open(path, encoding="utf-8") as f:
            text = f.read()
        self.assertEqual(text, '{"a": 1}\n{"a": 3}\n{"a": 4}\n{"a": 5}\n')
        lines = files.json_lines(path, text + '{"a": 6')
        self.assertEqual([x.value for x in lines if x.ok], [{"a": n} for n in (1, 3, 4, 5)])
        self.assertEqual([(x.where, x.torn) for x in lines if not x.ok], [(f"{path}:5", True)])


if __name__ == "__main__":
    unittest.main()
