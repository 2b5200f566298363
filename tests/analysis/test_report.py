"""tools/report.py (tools/tb report) on the fixtures in fixtures/.

- gpu_synthetic.json: a hand-made GPU run (not a measurement) whose numbers
  fire every flag rule once or more, with repetitions and aggregates for one
  instance, an errored instance whose message holds HTML, and a detection
  model that syncs in Eval (exempt);
- cpu_run.json: a real CPU run of the torchbench program at batch size 1
  (--torchbench_count_ops --torchbench_profile: would_sync_per_step, no GPU
  counters), and models.json (--torchbench_list_models=json) for domains;
- batch_search.json: a hand-made batch-search file (ok, oom, timeout and
  crashed probes); batch_search_cpu.json: a real one (tools/batch_search.py,
  CPU, two models);
- profiles/: per-instance profile files: hand-made ones for the GPU run (one
  with its keys missing) and the real ones of resnet18 in cpu_run.json
  (--torchbench_trace_dir);
- built here, hand-made: runs with --torchbench_flops' counters
  (flops_per_step, flop_rate, peak_share, ...) and the machine's peaks in
  their context, for the section "Against the machine's peak".

Each report is checked to parse as HTML with balanced tags, to be
self-contained (no script, no link, no external URL), and to hold its sections,
flags and inline SVG plots.

usage: test_report.py   (unittest; runs tools/report.py in this interpreter)
"""
import contextlib
import copy
import html.parser
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(HERE, "fixtures")
GPU = os.path.join(FIXTURES, "gpu_synthetic.json")
CPU = os.path.join(FIXTURES, "cpu_run.json")
MODELS = os.path.join(FIXTURES, "models.json")
SEARCH = os.path.join(FIXTURES, "batch_search.json")
PROFILES = os.path.join(FIXTURES, "profiles")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import report  # noqa: E402  (tools/report.py)

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}


class Checker(html.parser.HTMLParser):
    """Balanced tags, one document, and nothing that loads from elsewhere."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.problems, self.tags, self.doctype = [], [], {}, None
        self.text = []

    def handle_decl(self, decl):
        self.doctype = decl

    def handle_starttag(self, tag, attrs):
        # An SVG <title> is a plot's hover text, not the document's title.
        key = "svg title" if tag == "title" and "svg" in self.stack else tag
        self.tags[key] = self.tags.get(key, 0) + 1
        if tag in ("script", "link", "img", "iframe", "object", "embed"):
            self.problems.append(f"<{tag}> in a self-contained page")
        for name, value in attrs:
            value = value or ""
            if name in ("src", "srcset", "action", "data"):
                self.problems.append(f"<{tag} {name}={value!r}>")
            if name.endswith("href") and not value.startswith("#"):
                self.problems.append(f"<{tag} {name}={value!r}>: not a link within the page")
            if name == "style" and "url(" in value and "url(#" not in value:
                self.problems.append(f"<{tag} style={value!r}>")
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
        else:
            self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


class PageTest(unittest.TestCase):
    """Runs the report into a temporary directory and checks its page."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    # assertIn and assertNotIn would print the whole page on a failure.
    def assertInPage(self, needle, haystack):
        if needle not in haystack:
            self.fail(f"{needle!r} not in the {len(haystack)} characters: {haystack[:300]!r}...")

    def assertNotInPage(self, needle, haystack):
        if needle in haystack:
            i = haystack.index(needle)
            self.fail(f"{needle!r} found: ...{haystack[max(0, i - 200):i + 200]!r}...")

    def make(self, *args):
        """Runs report.main in this process; returns (exit code, page, stderr)."""
        out = os.path.join(self.dir, "report.html")
        if os.path.exists(out):
            os.remove(out)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = report.main(list(args) + ["-o", out])
        doc = None
        if os.path.exists(out):
            with open(out, encoding="utf-8") as f:
                doc = f.read()
        return code, doc, err.getvalue()

    def check_page(self, doc):
        self.assertTrue(doc.startswith("<!DOCTYPE html>"))
        checker = Checker()
        checker.feed(doc)
        checker.close()
        self.assertEqual(checker.doctype, "DOCTYPE html")
        self.assertEqual(checker.problems, [])
        self.assertEqual(checker.stack, [])
        for tag in ("html", "head", "body", "title", "style"):
            self.assertEqual(checker.tags.get(tag), 1, tag)
        self.assertNotRegex(doc, r"(src|href)\s*=\s*[\"']?https?:")
        self.assertInPage("Legend", doc)
        return checker, " ".join(checker.text)

    def write(self, name, doc):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            json.dump(doc, f)
        return path


class Report(PageTest):
    def test_one_gpu_run(self):
        code, doc, err = self.make(GPU)
        self.assertEqual(code, 0, err)
        checker, text = self.check_page(doc)
        for section in ("1. Results by domain", "2. Train against eval", "3. Legend"):
            self.assertInPage(section, text)
        # Summary first: device, commit, LibTorch, date, instances, errored.
        head = doc[:doc.index('id="domains"')]
        for fact in ("SYNTHETIC GPU", "synthetic0001", "2.14.1", "2026-12-02", ">13<",
                     "errored"):
            self.assertInPage(fact, head)
        # One table per domain, from the context's torchbench_model_domains.
        for domain in ("vision", "nlp", "speech", "recommendation", "rl", "science"):
            self.assertInPage(f"<h3>{domain} ", doc)
        # Each flag rule fires, with its reason; yolov3 (detection) is exempt.
        for rule in ("train/eval &gt; 4×", "train/eval &lt; 2×", "GPU idle &gt; 30 %",
                     "sync in Eval", "memcpy &gt; 5 %", "kernels &gt; 3× ops", "launch-bound"):
            self.assertInPage(rule, doc)
        for detail in ("train/eval time 5.2× (&gt; 4×; typical ~3×)",
                       "train/eval time 1.5× (&lt; 2×; typical ~3×)",
                       "GPU idle 45 % of the step (&gt; 30 %); mostly waiting on the host (38 %)",
                       "12 syncs per step in Eval (not a detection model)",
                       "memcpy 8.0 % of the step (&gt; 5 %)",
                       "400 kernels per step for 100 aten ops (4.0× &gt; 3×)",
                       "median kernel 4.2 µs (&lt; 10 µs) with GPU idle 45 % (&gt; 20 %)"):
            self.assertInPage(detail, doc)
        flags = doc[doc.index("<h3>Flags</h3>"):]
        self.assertNotInPage("yolov3", flags[:flags.index("</table>")])
        self.assertNotInPage("resnet50", flags[:flags.index("</table>")])
        # The median aggregate (90 ms), not the mean of the repetitions (102 ms).
        row = re.search(r"<td>resnet50</td><td>Train</td>.*?</tr>", doc).group(0)
        self.assertInPage('title="median of 3 repetitions">90.0<', row)
        # The errored instance, its message escaped.
        self.assertInPage("timm_vision_transformer", doc)
        self.assertInPage("Tried to allocate 2.00 GiB &lt;GPU 0&gt; &amp; &#x27;friends&#x27;", doc)
        self.assertNotInPage("<GPU 0>", doc)
        # GPU idle column and plots: breakdown and train/eval ratios.
        self.assertInPage("45.0 %", doc)
        self.assertEqual(checker.tags.get("svg"), 2)
        self.assertInPage('aria-label="train/eval time ratio per model"', doc)

    def test_cpu_run(self):
        code, doc, err = self.make(CPU, "--profiles", PROFILES)
        self.assertEqual(code, 0, err)
        checker, text = self.check_page(doc)
        self.assertInPage("AMD EPYC (cpu)", doc)
        # Domains from the run's own context.
        for domain in ("vision", "nlp", "recommendation", "rl"):
            self.assertInPage(f"<h3>{domain} ", doc)
        # No GPU counters: "—" in the GPU idle column, no breakdown plot.
        row = re.search(r"<tr><td>alexnet</td><td>Eval</td>.*?</tr>", doc).group(0)
        self.assertInPage("<td class=\"num\">—</td>", row)
        self.assertNotInPage("Where the GPU step goes", doc)
        self.assertEqual(checker.tags.get("svg"), 1)  # the train/eval ratios
        # On CPU would_sync_per_step stands in for syncs: SAC's Eval step.
        self.assertInPage("30 ops that would sync on a GPU per step in Eval", doc)
        # Real profiles (tools: --torchbench_trace_dir): the top 3 Train-only ops.
        row = re.search(r"<tr><td>resnet18</td><td class=\"wrap\">(.*?)</td>", doc).group(1)
        self.assertEqual(re.findall(r"aten::\w+", row),
                         ["aten::convolution_backward", "aten::sqrt", "aten::div"])
        self.assertInPage("optimizer 37%", doc)

    def test_models_json_gives_domains(self):
        with open(CPU) as f:
            run = json.load(f)
        del run["context"]["torchbench_model_domains"]
        path = self.write("no_domains.json", run)
        code, doc, err = self.make(path, "--models-json", MODELS)
        self.assertEqual(code, 0, err)
        self.check_page(doc)
        self.assertInPage("<h3>vision ", doc)
        self.assertNotInPage("<h3>unknown ", doc)
        # Neither: every model's domain is unknown.
        code, doc, err = self.make(path)
        self.assertEqual(code, 0, err)
        self.assertInPage('<h3>unknown <span class="muted">(10 instances)', doc)
        self.assertNotInPage("<h3>vision ", doc)

    def test_cpu_would_sync_proxy(self):
        with open(GPU) as f:
            run = json.load(f)
        gpu_only = [k for k in run["benchmarks"][0] if k.startswith("gpu_")] + [
            "kernels_per_step", "syncs_per_step", "memcpy_per_step", "kernel_median_us"]
        for row in run["benchmarks"]:
            for key in gpu_only:
                row.pop(key, None)
        run["context"]["torchbench_device"] = "cpu"
        code, doc, err = self.make(self.write("cpu.json", run))
        self.assertEqual(code, 0, err)
        self.check_page(doc)
        self.assertInPage("12 ops that would sync on a GPU per step in Eval", doc)
        for rule in ("GPU idle &gt; 30 %", "memcpy &gt; 5 %", "launch-bound", "kernels &gt; 3×"):
            self.assertNotInPage(rule + " (", doc)

    def test_two_runs(self):
        with open(GPU) as f:
            a = json.load(f)
        b = copy.deepcopy(a)
        b["context"]["torchbench_git_commit"] = "synthetic0002"
        scale = {"resnet50/Eval/batch_size:32": 1.2, "dlrm/Train/batch_size:1024": 0.8}
        for row in b["benchmarks"]:
            s = scale.get(row.get("run_name"), 1.0)
            row["real_time"] *= s
            if "items_per_second" in row:
                row["items_per_second"] /= s
        b["benchmarks"] = [r for r in b["benchmarks"] if r["name"] != "yolov3/Eval/batch_size:8"]
        code, doc, err = self.make(GPU, self.write("b.json", b))
        self.assertEqual(code, 0, err)
        checker, text = self.check_page(doc)
        self.assertInPage("3. B against A", text)
        self.assertInPage('<td class="diff">synthetic0001</td><td class="diff">synthetic0002</td>',
                      doc)
        self.assertInPage('<td class="num bad">1.200</td>', doc)   # slower
        self.assertInPage('<td class="num good">0.800</td>', doc)  # faster
        self.assertInPage('<td class="num">1.000</td>', doc)
        self.assertInPage("only in A", doc)
        self.assertInPage("geometric mean of step time B/A", doc)
        self.assertInPage('aria-label="step time ratio B/A per instance"', doc)
        self.assertEqual(checker.tags.get("svg"), 3)

    def test_batch_search_and_profiles(self):
        code, doc, err = self.make(GPU, SEARCH, "--profiles", PROFILES)
        self.assertEqual(code, 0, err)
        checker, text = self.check_page(doc)
        self.assertInPage("3. Throughput against batch size", text)
        # One curve per model x mode, failing probes named, suggestions listed.
        self.assertEqual(text.count("throughput against batch size:"), 0)
        self.assertEqual(doc.count('aria-label="throughput against batch size:'), 4)
        for status in ("256: oom", "16: timeout, 32: crashed"):
            self.assertInPage(status, doc)
        self.assertInPage("eval_batch_size 64, train_batch_size 32", doc)
        # Profiles: top-3 Train-only ops by self host time; a profile without
        # its keys (dlrm) is no row, and no error.
        row = re.search(r"<tr><td>resnet50</td><td class=\"wrap\">(.*?)</td>", doc).group(1)
        self.assertEqual(re.findall(r"aten::\w+", row),
                         ["aten::convolution_backward", "aten::native_batch_norm_backward",
                          "aten::_foreach_add_"])
        self.assertInPage("backward 61%", doc)
        profiles = doc[doc.index("Host ops only in Train"):doc.index("<h3>Flags</h3>")]
        self.assertNotInPage("<td>dlrm</td>", profiles)

    def test_real_batch_search(self):
        # A CPU search written by tools/batch_search.py (tools/tb batch-search).
        code, doc, err = self.make(CPU, os.path.join(FIXTURES, "batch_search_cpu.json"))
        self.assertEqual(code, 0, err)
        checker, text = self.check_page(doc)
        self.assertEqual(doc.count('aria-label="throughput against batch size:'), 4)
        self.assertInPage("train_batch_size 32, eval_batch_size 256", doc)
        self.assertInPage("knee_fraction 0.95", doc)

    def test_batch_search_alone(self):
        code, doc, err = self.make(SEARCH)
        self.assertEqual(code, 0, err)
        _, text = self.check_page(doc)
        self.assertInPage("1. Throughput against batch size", text)
        self.assertNotInPage("Results by domain", text)

    def test_errored_and_partial_instances(self):
        with open(GPU) as f:
            run = json.load(f)
        rows = [r for r in run["benchmarks"] if r["run_name"] == "dlrm/Eval/batch_size:1024"]
        bad = dict(rows[0], repetition_index=1, error_occurred=True, error_message="boom")
        run["benchmarks"].append(bad)
        run["benchmarks"].append({"name": "broken/Eval/batch_size:1", "run_name":
                                  "broken/Eval/batch_size:1", "run_type": "iteration",
                                  "error_occurred": True, "error_message": None})
        code, doc, err = self.make(self.write("errors.json", run))
        self.assertEqual(code, 0, err)
        self.check_page(doc)
        self.assertInPage("error: error (no message)", doc)
        self.assertInPage("1 of 2 repetitions errored: boom", doc)

    def test_bad_input_exits_2_with_one_line(self):
        corrupt = os.path.join(self.dir, "corrupt.json")
        with open(corrupt, "w") as f:
            f.write('{"context": {}, "benchmarks": [')
        for path, message in ((corrupt, "not valid JSON"),
                              (self.write("list.json", []), "neither Google Benchmark JSON"),
                              (os.path.join(self.dir, "absent.json"), "cannot read")):
            p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "report.py"), path,
                                "-o", os.path.join(self.dir, "x.html")],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 2, p.stderr)
            lines = p.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, p.stderr)
            self.assertInPage(message, lines[0])
            self.assertTrue(lines[0].startswith(f"report: {path}"), lines[0])
            self.assertFalse(os.path.exists(os.path.join(self.dir, "x.html")))
        code, _, err = self.make(GPU, GPU, GPU)
        self.assertEqual(code, 2)
        self.assertInPage("3 results files", err)


def flops_row(name, ms, flops=None, rate=None, share=None, reps=0, **counters):
    """A result row of a run with --torchbench_flops (flops=None: without its counters)."""
    row = {"name": name, "run_name": name, "run_type": "iteration", "repetitions": reps or 1,
           "repetition_index": 0, "threads": 1, "iterations": 10, "real_time": ms,
           "cpu_time": ms, "time_unit": "ms", "batch_size": float(name.rsplit(":", 1)[1])}
    if flops is not None:
        row.update(flops_per_step=flops, flops_forward=flops, flop_rate=rate,
                   peak_share=share)
        if "/Train/" in name:
            row.update(flops_forward=flops / 3, flops_backward=flops * 0.6,
                       flops_optimizer=flops * (1 - 1 / 3 - 0.6))
    row.update(counters)
    return row


def flops_run(rows, **context):
    ctx = {"device_name": "SYNTHETIC CPU (hand-made, not a measurement)",
           "torchbench_device": "cpu", "libtorch_version": "2.14.1",
           "torchbench_model_domains": "resnet50:vision,dlrm:recommendation,"
                                       "BERT_pytorch:nlp,tacotron2:speech",
           "peak_gemm_float32_flops_per_second": "1.5e11",
           "peak_gemm_bfloat16_flops_per_second": "6.1e11",
           "peak_copy_bytes_per_second": "2.25e10", "peak_threads": "2",
           "machine_peaks_source": "measured"}
    ctx.update(context)
    return {"context": {k: v for k, v in ctx.items() if v is not None}, "benchmarks": rows}


class AgainstPeak(PageTest):
    """The section "Against the machine's peak" (runs with --torchbench_flops):
    a hand-made run whose rows carry the FLOP counters and whose context the
    measured peaks."""

    ROWS = [
        # Train, repetitions: the median aggregate's counters, as the times.
        flops_row("resnet50/Train/batch_size:32", 9500.0, 3.9e11, 4.1e10, 0.27, reps=2),
        dict(flops_row("resnet50/Train/batch_size:32", 8500.0, 3.9e11, 4.6e10, 0.31, reps=2),
             repetition_index=1),
        dict(flops_row("resnet50/Train/batch_size:32", 9000.0, 3.9e11, 4.33e10, 0.29,
                       reps=2), name="resnet50/Train/batch_size:32_median",
             run_type="aggregate", aggregate_name="median"),
        flops_row("resnet50/Eval/batch_size:32", 1500.0, 1.3e11, 8.67e10, 0.58),
        flops_row("dlrm/Eval/batch_size:1", 0.8, 5e6, 6.25e9, 0.042),
        flops_row("tacotron2/Eval/batch_size:4", 200.0, 2e9, 1e10, 0.07,
                  matmul_conv_share=0.35),
        flops_row("BERT_pytorch/Train/batch_size:1", 300.0),  # no --torchbench_flops
    ]

    def section(self, doc):
        start = doc.index('<section id="peak">')
        return doc[start:doc.index("</section>", start)]

    def test_page_with_peaks(self):
        code, doc, err = self.make(self.write("flops.json", flops_run(self.ROWS)))
        self.assertEqual(code, 0, err)
        checker, text = self.check_page(doc)
        self.assertInPage("3. Against the machine's peak", text)
        self.assertInPage("Against the machine's peak: median peak share 18.0 % over 4 "
                          "instances; lowest <code>dlrm/Eval/batch_size:1</code> 4.2 %", doc)
        sec = self.section(doc)
        # The plot: one horizontal line per GEMM peak, labelled; a point per
        # instance with its hover title; the legend's domains and modes.
        self.assertInPage('aria-label="achieved FLOP/s against FLOPs per step', sec)
        self.assertInPage("fp32 GEMM peak 150 GFLOP/s", sec)
        self.assertInPage("bf16 GEMM peak 610 GFLOP/s", sec)
        self.assertEqual(checker.tags.get("svg title"), 4)
        self.assertInPage("<title>resnet50/Train/batch_size:32\ndomain vision, step 9,000 ms"
                          "\n390 GFLOP per step\n(forward 130 GFLOP, backward 234 GFLOP, "
                          "optimizer 26 GFLOP)\nachieved 43.3 GFLOP/s, 29.0 % of peak</title>",
                          sec)
        for legend in ("vision", "recommendation", "speech", "Train", "Eval"):
            self.assertInPage(f">{legend}</text>", sec)
        self.assertNotInPage(">nlp</text>", sec)
        self.assertInPage("the run has no product_bytes", sec)
        # The machine's limits as facts.
        for value in ("150 GFLOP/s", "610 GFLOP/s", "22.5 GB/s", "<span>2</span>",
                      "<span>measured by the run</span>"):
            self.assertInPage(value, sec)
        # The table: lowest peak share first, the GEMM/conv column (one
        # instance has it), the label of each; BERT_pytorch has no counters.
        table = sec[sec.index("<h3>Furthest below peak</h3>"):]
        names = re.findall(r"<tr><td>([^<]+)</td>", table)
        self.assertEqual(names, ["dlrm/Eval/batch_size:1", "tacotron2/Eval/batch_size:4",
                                 "resnet50/Train/batch_size:32", "resnet50/Eval/batch_size:32"])
        self.assertInPage("<th class=num>GEMM/conv share</th>", table)
        row = re.search(r"<tr><td>dlrm/.*?</tr>", table).group(0)
        for cell in (">0.8<", ">5 M<", ">6.25 G<", ">4.2 %<", ">—<",
                     "launch/overhead-bound (few FLOPs per step)"):
            self.assertInPage(cell, row)
        self.assertInPage("products 35 % of the step", table)
        self.assertInPage("below peak: non-GEMM work or memory-bound", table)
        self.assertInPage("near GEMM peak", table)
        self.assertNotInPage("BERT_pytorch", sec)
        self.assertInPage("<td>BERT_pytorch</td>", doc)  # still in the domain tables

    def test_roofline_with_product_bytes(self):
        # With the products' bytes (product_bytes), the x axis is their
        # arithmetic intensity and the copy bandwidth a sloped roof.
        rows = [dict(r, product_bytes=r["flops_per_step"] / 40) for r in self.ROWS
                if "flops_per_step" in r]
        # A step without products (pyhpc's): 0 FLOPs, 0 bytes, no point.
        rows.append(flops_row("pyhpc/Eval/batch_size:1", 0.3, 0.0, 0.0, 0.0,
                              product_bytes=0.0))
        code, doc, err = self.make(self.write("roof.json", flops_run(rows)))
        self.assertEqual(code, 0, err)
        self.check_page(doc)
        sec = self.section(doc)
        self.assertInPage("arithmetic intensity of the step's products", sec)
        self.assertInPage("copy bandwidth 22.5 GB/s", sec)
        self.assertInPage('aria-label="the roofline', sec)
        self.assertNotInPage("the run has no product_bytes", sec)

    def test_no_flops_no_section(self):
        rows = [r for r in self.ROWS if "flops_per_step" not in r]
        rows.append(flops_row("resnet50/Eval/batch_size:32", 1500.0))
        code, doc, err = self.make(self.write("plain.json", flops_run(rows)))
        self.assertEqual(code, 0, err)
        checker, text = self.check_page(doc)
        self.assertNotInPage('id="peak"', doc)
        self.assertNotInPage("Against the machine", text)
        self.assertNotInPage("Furthest below peak", doc)
        self.assertNotInPage('aria-label="achieved FLOP/s', doc)
        self.assertIsNone(checker.tags.get("svg title"))
        # The fixtures of the other tests (no counters) have no such section either.
        code, doc, err = self.make(GPU)
        self.assertEqual(code, 0, err)
        self.assertNotInPage('id="peak"', doc)

    def test_without_peaks_or_shares(self):
        # Counters but no peak in the context and no peak_share: points, no
        # line, no ranking; flop_rate absent is worked out from the step time.
        rows = [flops_row("resnet50/Eval/batch_size:32", 1500.0, 1.3e11),
                flops_row("dlrm/Eval/batch_size:1", 0.8, 5e6)]
        for row in rows:
            del row["flop_rate"], row["peak_share"]
        run = flops_run(rows, peak_gemm_float32_flops_per_second=None,
                        peak_gemm_bfloat16_flops_per_second=None,
                        peak_copy_bytes_per_second="not a number")
        code, doc, err = self.make(self.write("bare.json", run))
        self.assertEqual(code, 0, err)
        checker, text = self.check_page(doc)
        sec = self.section(doc)
        self.assertNotInPage("GEMM peak 1", sec)
        self.assertInPage("holds no GEMM peak", sec)
        self.assertInPage("No instance has a peak share", sec)
        self.assertInPage("<title>resnet50/Eval/batch_size:32\ndomain vision, step 1,500 ms"
                          "\n130 GFLOP per step\nachieved 86.7 GFLOP/s, — of peak</title>", sec)
        self.assertEqual(checker.tags.get("svg title"), 2)

    def test_many_instances_cut_to_lowest_and_highest(self):
        rows = [flops_row(f"resnet50/Eval/batch_size:{b}", 100.0, 1e10, 1e11, b / 100)
                for b in range(1, 31)]
        code, doc, err = self.make(self.write("many.json", flops_run(rows)))
        self.assertEqual(code, 0, err)
        self.check_page(doc)
        table = self.section(doc)[self.section(doc).index("<h3>Furthest below peak</h3>"):]
        batches = [int(b) for b in re.findall(r"<tr><td>resnet50/Eval/batch_size:(\d+)</td>",
                                              table)]
        self.assertEqual(batches, list(range(1, 16)) + list(range(26, 31)))
        self.assertInPage("… 10 more …", table)
        self.assertNotInPage("GEMM/conv share", table)

    def test_where_time_goes(self):
        from report_rules import where_time_goes
        self.assertEqual(where_time_goes(5e7, 1.0, 0.9, 0.35),
                         "near GEMM peak; products 35 % of the step")
        self.assertEqual(where_time_goes(5e7, 1.0, 0.1),
                         "launch/overhead-bound (few FLOPs per step)")
        self.assertEqual(where_time_goes(1e9, 5.0, 0.2, 0.3),
                         "non-product work (elementwise, normalization, copies); "
                         "products 30 % of the step")
        self.assertEqual(where_time_goes(1e9, 5.0, 0.2, 0.8),
                         "products below peak (small or skinny shapes, layout conversions); "
                         "products 80 % of the step")
        self.assertEqual(where_time_goes(0, 1.0, 0.0),
                         "no matrix products (elementwise or integer work)")
        self.assertEqual(where_time_goes(5e7, 3.0, 0.6), "near GEMM peak")
        self.assertEqual(where_time_goes(1e9, 1.0, 0.2),
                         "below peak: non-GEMM work or memory-bound")
        self.assertIsNone(where_time_goes(1e9, 1.0, None))


if __name__ == "__main__":
    unittest.main()
