#!/usr/bin/env python3
"""tools/merge.py on the real program's shard files.

usage: test_merge.py TORCHBENCH COMPARE_PY

Runs the program once per shard (--torchbench_shard=i/3) and once unsharded
on four small CPU instances with two repetitions each (so aggregate rows are
there too), then merges the shards: the merged file holds the unsharded
run's instances in its order and compare.py reads it against the unsharded
run. The failures are made from copies of the shard files, edited: a missing
shard or instance (exit 1), another commit, device kind, precision or shard
count (3), a corrupt, duplicate or unsharded file or an instance in two
shards (2); --allow-missing and --strict.
"""
import copy
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
MERGE = ROOT / "tools" / "merge.py"
PROGRAM = None
COMPARE_PY = None
FLAGS = ["--torchbench_device=cpu", "--torchbench_batch_sizes=1", "--torchbench_warmup_steps=1",
         "--benchmark_min_time=0.000001", "--benchmark_repetitions=2",
         "--benchmark_filter=^(phlippe_densenet|phlippe_resnet|pyhpc_equation_of_state|"
         "soft_actor_critic)/Eval/"]


def program(*args):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLURM_", "JOB_COMPLETION_INDEX", "TORCHBENCH_SHARD"))}
    p = subprocess.run([PROGRAM, *FLAGS, *args], capture_output=True, text=True, env=env,
                       timeout=300)
    if p.returncode != 0:
        raise RuntimeError(f"{PROGRAM} {' '.join(args)} exited {p.returncode}:\n{p.stderr}")
    return p


def instances(doc):
    """Instance names in the order of their first row."""
    out = []
    for row in doc["benchmarks"]:
        name = row.get("run_name", row["name"])
        if name not in out:
            out.append(name)
    return out


class Merge(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = pathlib.Path(cls.tmp.name)
        started = time.monotonic()
        cls.shard_paths = []
        for i in range(3):
            path = cls.dir / f"shard-{i}.json"
            program(f"--torchbench_shard={i}/3", f"--benchmark_out={path}",
                    "--benchmark_out_format=json")
            cls.shard_paths.append(path)
        cls.whole_path = cls.dir / "whole.json"
        program(f"--benchmark_out={cls.whole_path}", "--benchmark_out_format=json")
        cls.whole = json.loads(cls.whole_path.read_text())
        cls.shards = [json.loads(p.read_text()) for p in cls.shard_paths]
        print(f"\n3 shard runs and an unsharded one: {time.monotonic() - started:.1f} s",
              file=sys.stderr)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def setUp(self):
        self.work = pathlib.Path(tempfile.mkdtemp(dir=self.dir))
        self.out = self.work / "merged.json"

    def merge(self, *paths, flags=()):
        p = subprocess.run([sys.executable, str(MERGE), *map(str, paths), "-o", str(self.out),
                            *flags], capture_output=True, text=True, timeout=60)
        return p.returncode, p.stderr

    def edited(self, index, edit, name=None):
        """A copy of shard `index`'s file, changed by edit(doc)."""
        doc = copy.deepcopy(self.shards[index])
        edit(doc)
        path = self.work / (name or f"edited-{index}.json")
        path.write_text(json.dumps(doc))
        return path

    def test_shards_are_real_shards(self):
        plans = {doc["context"]["torchbench_shard_plan"] for doc in self.shards}
        self.assertEqual(len(plans), 1)
        given = [doc["context"]["torchbench_shard_instances"] for doc in self.shards]
        self.assertEqual(sorted(n for g in given for n in g.split(",") if n),
                         sorted(instances(self.whole)))

    def test_merge(self):
        # Given in any order, merged in the unsharded run's.
        code, err = self.merge(*reversed(self.shard_paths))
        self.assertEqual(code, 0, err)
        merged = json.loads(self.out.read_text())
        self.assertEqual(instances(merged), instances(self.whole))
        self.assertEqual(len(merged["benchmarks"]), len(self.whole["benchmarks"]))
        self.assertEqual(sorted((r["name"], r.get("run_type"), r.get("repetition_index"))
                                for r in merged["benchmarks"]),
                         sorted((r["name"], r.get("run_type"), r.get("repetition_index"))
                                for r in self.whole["benchmarks"]))
        self.assertTrue(any(r.get("run_type") == "aggregate" for r in merged["benchmarks"]))
        families = [r["family_index"] for r in merged["benchmarks"]]
        self.assertEqual(families, sorted(families))
        context = merged["context"]
        self.assertEqual(context["torchbench_shard"], "merged 3 shards")
        self.assertEqual(context["torchbench_shard_instances"].split(","),
                         instances(self.whole))
        self.assertEqual(context["torchbench_git_commit"],
                         self.shards[0]["context"]["torchbench_git_commit"])
        self.assertEqual(context["torchbench_merged_from"],
                         "shard-0.json,shard-1.json,shard-2.json")
        self.assertEqual(list(self.work.iterdir()), [self.out])  # No temporary left.

    def test_compare_reads_the_merged_file(self):
        code, err = self.merge(*self.shard_paths)
        self.assertEqual(code, 0, err)
        p = subprocess.run([sys.executable, COMPARE_PY, "benchmarks", str(self.whole_path),
                            str(self.out)], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        for name in instances(self.whole):
            self.assertIn(name, p.stdout)
            self.assertIn(f"{name}_mean", p.stdout)
        self.assertIn("OVERALL_GEOMEAN", p.stdout)

    def test_tb_merge_runs_from_the_callers_directory(self):
        for path in self.shard_paths:
            shutil.copy(path, self.work)
        p = subprocess.run([str(ROOT / "tools" / "tb"), "merge", "shard-0.json", "shard-1.json",
                            "shard-2.json", "-o", "merged.json"], cwd=self.work,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(self.out.exists())

    def test_missing_shard(self):
        self.out.write_text("before")
        code, err = self.merge(self.shard_paths[0], self.shard_paths[2])
        self.assertEqual(code, 1, err)
        self.assertIn("shard 1/3 is missing", err)
        self.assertEqual(self.out.read_text(), "before")  # A failed merge writes nothing.

    def test_missing_instance_is_named(self):
        index = next(i for i, d in enumerate(self.shards) if d["benchmarks"])
        gone = instances(self.shards[index])[0]

        def drop(doc):
            doc["benchmarks"] = [r for r in doc["benchmarks"] if r.get("run_name") != gone]
        paths = list(self.shard_paths)
        paths[index] = self.edited(index, drop, "cut.json")
        code, err = self.merge(*paths)
        self.assertEqual(code, 1, err)
        self.assertIn(f"cut.json: lacks {gone}", err)
        self.assertFalse(self.out.exists())

    def _mismatch(self, key, value, expect):
        def change(doc):
            doc["context"][key] = value
        paths = list(self.shard_paths)
        paths[1] = self.edited(1, change, "other.json")
        code, err = self.merge(*paths)
        self.assertEqual(code, 3, err)
        self.assertIn(f"other.json: {expect}", err)
        self.assertFalse(self.out.exists())

    def test_other_commit(self):
        self._mismatch("torchbench_git_commit", "0" * 40, "commit")

    def test_other_device_kind(self):
        self._mismatch("torchbench_device", "cuda:0", "device kind 'cuda'")

    def test_other_precision(self):
        self._mismatch("precision", "bf16", "precision 'bf16'")

    def test_other_libtorch(self):
        self._mismatch("libtorch_version", "2.0.0", "LibTorch version")

    def test_other_shard_count(self):
        self._mismatch("torchbench_shard", "1/4", "shard 1/4 of 4 shards")

    def test_other_plan(self):
        self._mismatch("torchbench_shard_plan", "0123456789abcdef", "shard plan")

    def test_corrupt_json(self):
        text = self.shard_paths[1].read_text()
        cut = self.work / "cut.json"
        cut.write_text(text[: len(text) // 2])
        code, err = self.merge(self.shard_paths[0], cut, self.shard_paths[2])
        self.assertEqual(code, 2, err)
        self.assertIn("cut.json: not valid JSON", err)
        self.assertFalse(self.out.exists())

    def test_duplicate_shard(self):
        again = self.work / "again.json"
        shutil.copy(self.shard_paths[0], again)
        code, err = self.merge(*self.shard_paths, again)
        self.assertEqual(code, 2, err)
        self.assertIn("again.json: shard 0/3 again", err)

    def test_instance_in_two_shards(self):
        donor = next(i for i, d in enumerate(self.shards) if d["benchmarks"])
        taker = (donor + 1) % 3
        name = instances(self.shards[donor])[0]

        def add(doc):
            doc["benchmarks"] += [r for r in self.shards[donor]["benchmarks"]
                                  if r.get("run_name") == name]
        paths = list(self.shard_paths)
        paths[taker] = self.edited(taker, add, "extra.json")
        code, err = self.merge(*paths)
        self.assertEqual(code, 2, err)
        self.assertIn(f"extra.json: holds {name}, which its plan did not give it", err)

    def test_unsharded_file_is_not_a_shard(self):
        code, err = self.merge(self.whole_path)
        self.assertEqual(code, 2, err)
        self.assertIn("whole.json: not a torchbench shard file", err)

    def test_allow_missing(self):
        code, err = self.merge(self.shard_paths[0], self.shard_paths[1], flags=["--allow-missing"])
        self.assertEqual(code, 0, err)
        self.assertIn("shard 2/3 is missing", err)
        merged = json.loads(self.out.read_text())
        self.assertEqual(instances(merged),
                         [n for n in instances(self.whole)
                          if n in instances(self.shards[0]) + instances(self.shards[1])])
        self.assertEqual(merged["context"]["torchbench_shard"],
                         "merged 2 of 3 shards (missing 2)")

    def test_strict(self):
        index = next(i for i, d in enumerate(self.shards) if d["benchmarks"])
        broken = instances(self.shards[index])[0]

        def error(doc):
            for row in doc["benchmarks"]:
                if row.get("run_name") == broken and row.get("run_type") == "iteration":
                    row["error_occurred"] = True
                    row["error_message"] = "crashed: signal 11 (SIGSEGV, Segmentation fault)"
        paths = list(self.shard_paths)
        paths[index] = self.edited(index, error, "errored.json")
        code, err = self.merge(*paths)
        self.assertEqual(code, 0, err)  # Listed, not fatal.
        self.assertIn(f"errored.json: {broken} errored: crashed: signal 11", err)
        self.out.unlink()
        code, err = self.merge(*paths, flags=["--strict"])
        self.assertEqual(code, 1, err)
        self.assertIn(f"{broken} errored", err)
        self.assertFalse(self.out.exists())


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    PROGRAM, COMPARE_PY = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
