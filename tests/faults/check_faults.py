"""Faults lose nothing: the torchbench program killed with SIGKILL after
records, torn mid-record, killed while an isolated child runs, run under a
file-size limit, a full disk and unwritable paths; each time resumed. After
all of it the journal parses, every instance is in it exactly once, and the
final --benchmark_out (and `tools/tb merge` of shards that went through the
same faults) holds the names of an uninterrupted run.

usage: check_faults.py PROBE_PROGRAM

The program is the probe models' (tests/isolation/probe_models.cpp):
probe_slow sleeps 0.1 s a step, so a kill can land between two records;
probe_ok is instant. Offsets are drawn from a fixed seed, so a failure
reproduces.
"""
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROGRAM = None
BASE = ["--torchbench_device=cpu", "--benchmark_min_time=0.000001",
        "--torchbench_warmup_steps=0"]
# Eight instances of 0.1 s each: kills land between records.
SLOW = ["--benchmark_filter=^probe_slow/", "--torchbench_batch_sizes=1,2,3,4,5,6,7,8"]
SLOW_NAMES = sorted(f"probe_slow/Eval/batch_size:{b}" for b in range(1, 9))
# Two models, so that two shards each get one.
MIXED = ["--benchmark_filter=^probe_(ok|slow)/", "--torchbench_batch_sizes=1,2,3,4"]
MIXED_NAMES = sorted(f"probe_{m}/Eval/batch_size:{b}" for m in ("ok", "slow")
                     for b in range(1, 5))


def start(*args, limit=None):
    """The program, running; `limit`: RLIMIT_FSIZE in bytes (ulimit -f)."""
    def preexec():
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return subprocess.Popen([PROGRAM, *BASE, *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, preexec_fn=preexec)


def run(*args, limit=None, timeout=90):
    p = start(*args, limit=limit)
    _, err = p.communicate(timeout=timeout)
    return p.returncode, err


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def lines_of(path):
    """Whole lines (ending with a newline) of a file, as text."""
    if not os.path.exists(path):
        return []
    with open(path, "rb") as f:
        data = f.read()
    return [line.decode() for line in data.split(b"\n")[:-1]]


def journal_instances(path):
    """The instances of a journal that must be whole: every line valid JSON,
    a context line first, no torn bytes anywhere."""
    with open(path, "rb") as f:
        data = f.read()
    assert data.endswith(b"\n"), f"{path} does not end with a whole line"
    lines = [line for line in data.decode().split("\n") if line]
    head = json.loads(lines[0])
    assert "torchbench_journal" in head, lines[0][:80]
    return [json.loads(line)["instance"] for line in lines[1:]]


def result_names(path):
    with open(path) as f:
        return sorted(b["name"] for b in json.load(f)["benchmarks"])


def children_of(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def kill_when(proc, ready, timeout=60):
    """SIGKILLs `proc` once ready() holds; False if it ended first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        if ready():
            proc.kill()
            proc.communicate(timeout=30)
            return True
        time.sleep(0.002)
    raise AssertionError("the program neither ended nor reached the kill point")


class Faults(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name
        # The uninterrupted runs everything is compared with.
        cls.ref_journal = os.path.join(cls.dir, "ref.jsonl")
        cls.ref_out = os.path.join(cls.dir, "ref.json")
        code, err = run(*SLOW, f"--torchbench_journal={cls.ref_journal}",
                        f"--benchmark_out={cls.ref_out}")
        assert code == 0, err
        assert result_names(cls.ref_out) == SLOW_NAMES, result_names(cls.ref_out)
        cls.mixed_out = os.path.join(cls.dir, "mixed.json")
        code, err = run(*MIXED, f"--benchmark_out={cls.mixed_out}")
        assert code == 0, err
        assert result_names(cls.mixed_out) == MIXED_NAMES

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, f"{self._testMethodName}-{name}")

    def finish(self, journal, args, names, extra=()):
        """Resumes to the end; checks the journal and --benchmark_out."""
        out = self.path("final.json")
        code, err = run(*args, f"--torchbench_resume={journal}",
                        f"--benchmark_out={out}", *extra)
        self.assertEqual(code, 0, err)
        instances = journal_instances(journal)
        self.assertEqual(sorted(instances), names, "each instance once")
        self.assertEqual(result_names(out), names)
        # And once more: a complete journal resumes to nothing, unchanged.
        before = read_bytes(journal)
        code, err = run(*args, f"--torchbench_resume={journal}",
                        f"--benchmark_out={out}", *extra)
        self.assertEqual(code, 0, err)
        self.assertIn(f"{len(names)} instance(s) done, 0 to run", err)
        self.assertEqual(read_bytes(journal), before)
        self.assertEqual(result_names(out), names)
        return out

    def test_killed_after_each_record(self):
        journal = self.path("j.jsonl")
        kills = 0
        while True:
            done = len(lines_of(journal))
            proc = start(*SLOW, f"--torchbench_resume={journal}")
            if not kill_when(proc, lambda: len(lines_of(journal)) > max(done, 1)):
                self.assertEqual(proc.returncode, 0)
                break
            kills += 1
            journal_instances(journal)  # Whole lines after every kill.
        self.assertGreaterEqual(kills, 4)
        self.finish(journal, SLOW, SLOW_NAMES)
        print(f"killed after records: {kills} kills, then complete")

    def test_torn_at_random_offsets(self):
        with open(self.ref_journal, "rb") as f:
            whole = f.read()
        ends = [i + 1 for i, b in enumerate(whole) if b == ord("\n")]
        rng = random.Random(45)
        # Inside the context line, a newline short of a whole record, and
        # anywhere in the records.
        offsets = [rng.randrange(1, ends[0]), ends[3] - 1, ends[-1] - 200]
        offsets += [rng.randrange(ends[0], len(whole)) for _ in range(5)]
        for cut in offsets:
            journal = self.path(f"cut{cut}.jsonl")
            with open(journal, "wb") as f:
                f.write(whole[:cut])
            with self.subTest(cut=cut):
                # A second tear: killed once more after a record, and cut
                # again in the middle of the last line.
                proc = start(*SLOW, f"--torchbench_resume={journal}")
                done = len(lines_of(journal))
                if kill_when(proc, lambda: len(lines_of(journal)) > max(done, 1)):
                    size = os.path.getsize(journal)
                    last = len(lines_of(journal)[-1]) + 1
                    os.truncate(journal, size - rng.randrange(1, last))
                self.finish(journal, SLOW, SLOW_NAMES)
        print(f"torn at offsets {offsets} of {len(whole)}: each resumed whole")

    def test_the_issue_sequence(self):
        # Issue #45: a journal of two cut 200 bytes short, resumed, resumed.
        journal = self.path("two.jsonl")
        two = ["--benchmark_filter=^probe_slow/", "--torchbench_batch_sizes=1,2"]
        three = ["--benchmark_filter=^probe_slow/", "--torchbench_batch_sizes=1,2,3"]
        code, err = run(*two, f"--torchbench_journal={journal}")
        self.assertEqual(code, 0, err)
        os.truncate(journal, os.path.getsize(journal) - 200)
        code, err = run(*three, f"--torchbench_resume={journal}")
        self.assertEqual(code, 0, err)
        self.assertIn("line 3 was cut short", err)
        self.assertIn("bytes of the record of probe_slow/Eval/batch_size:2", err)
        code, err = run(*three, f"--torchbench_resume={journal}")
        self.assertEqual(code, 0, err)
        self.assertIn("3 instance(s) done, 0 to run", err)
        self.assertEqual(sorted(journal_instances(journal)),
                         [f"probe_slow/Eval/batch_size:{b}" for b in (1, 2, 3)])

    def test_killed_while_an_isolated_child_runs(self):
        journal = self.path("j.jsonl")
        coverage = self.path("cov.jsonl")
        args = [*SLOW, "--torchbench_isolate=process",
                f"--torchbench_op_coverage={coverage}"]
        for kill in range(3):
            done = len(lines_of(journal))
            proc = start(*args, f"--torchbench_resume={journal}")
            orphans = []

            def child_running():
                kids = children_of(proc.pid)
                orphans[:] = kids
                return len(lines_of(journal)) > max(done, 1) and kids

            self.assertTrue(kill_when(proc, child_running), "ended before the kill")
            for child in orphans:  # Its own process group (isolation.cpp).
                try:
                    os.killpg(child, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            journal_instances(journal)
            if kill == 1:
                # A child killed while appending its coverage line (its
                # instance has no result, so it runs again).
                with open(coverage, "ab") as f:
                    f.write(b'{"instance": "probe_slow/Eval/batch_size:2", "mo')
        self.finish(journal, args, SLOW_NAMES)
        records = [json.loads(line) for line in lines_of(coverage)]
        self.assertIn("registry", records[0])
        self.assertEqual({r["instance"] for r in records[1:]}, set(SLOW_NAMES))
        with open(coverage, "rb") as f:
            self.assertTrue(f.read().endswith(b"\n"))

    def test_file_size_limit(self):
        ref = lines_of(self.ref_journal)
        # The context and three records fit; the fourth record does not.
        limit = sum(len(line) + 1 for line in ref[:4]) + 100
        journal = self.path("j.jsonl")
        code, err = run(*SLOW, f"--torchbench_journal={journal}", limit=limit)
        self.assertNotEqual(code, 0, "a journal write failed; the exit must say so")
        self.assertNotIn("SIGXFSZ", err)
        failed = [line for line in err.splitlines() if "File too large (EFBIG)" in line]
        self.assertEqual(len(failed), 1, err)
        self.assertIn(f"'{journal}'", failed[0])
        self.assertEqual(len(journal_instances(journal)), 3)  # Whole lines only.
        self.finish(journal, SLOW, SLOW_NAMES)

    def test_benchmark_out_that_cannot_be_written(self):
        out = self.path("out.json")
        shutil.copy(self.ref_out, out)
        before = read_bytes(out)
        # A file-size limit the results outgrow, and a full disk: the old
        # file stays whole, the failure is one line naming it, exit non-zero.
        code, err = run(*SLOW, f"--benchmark_out={out}", limit=len(before) // 2)
        self.assertNotEqual(code, 0, err)
        self.assertTrue([line for line in err.splitlines()
                         if out in line and "(EFBIG)" in line], err)
        self.assertEqual(read_bytes(out), before)
        self.assertEqual([f for f in os.listdir(self.dir) if ".tmp-" in f], [])
        code, err = run(*SLOW, "--benchmark_out=/dev/full")
        self.assertNotEqual(code, 0, err)
        self.assertTrue([line for line in err.splitlines()
                         if "/dev/full" in line and "(ENOSPC)" in line], err)

    def test_unwritable_paths(self):
        journal = self.path("j.jsonl")
        shutil.copy(self.ref_journal, journal)
        before = read_bytes(journal)
        missing = self.path("no/such/dir/j.jsonl")
        for path, errno_name in ((missing, "ENOENT"), ("/dev/full", "ENOSPC")):
            code, err = run(*SLOW, f"--torchbench_journal={path}")
            self.assertEqual(code, 2, err)
            lines = [line for line in err.splitlines() if path in line]
            self.assertEqual(len(lines), 1, err)
            self.assertIn(f"({errno_name})", lines[0])
        # --benchmark_out in a directory that does not exist: a resumed
        # journal beside it stays as it was.
        code, err = run(*SLOW, f"--torchbench_resume={journal}",
                        f"--benchmark_out={self.path('no/such/dir/out.json')}")
        self.assertNotEqual(code, 0, err)
        self.assertIn("no/such/dir/out.json", err)
        self.assertEqual(read_bytes(journal), before)
        if os.geteuid() != 0:  # Root writes through permission bits.
            os.chmod(journal, 0o444)
            code, err = run(*SLOW, f"--torchbench_resume={journal}")
            self.assertEqual(code, 2, err)
            self.assertIn("(EACCES)", err)
            self.assertEqual(read_bytes(journal), before)
        else:
            print("EACCES not checked: running as root")

    def test_two_writers_on_one_journal(self):
        journal = self.path("j.jsonl")
        first = start(*SLOW, f"--torchbench_resume={journal}")
        deadline = time.monotonic() + 30
        while len(lines_of(journal)) < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        code, err = run(*SLOW, f"--torchbench_resume={journal}")
        self.assertEqual(code, 2, err)
        self.assertIn("is being written by another run", err)
        _, err = first.communicate(timeout=60)
        self.assertEqual(first.returncode, 0, err)
        self.assertEqual(sorted(journal_instances(journal)), SLOW_NAMES)

    def test_shards_through_the_same_faults_merge_whole(self):
        outs = []
        for i in range(2):
            journal = self.path(f"shard-{i}.jsonl")
            out = self.path(f"shard-{i}.json")
            args = [*MIXED, f"--torchbench_shard={i}/2"]
            proc = start(*args, f"--torchbench_resume={journal}",
                         f"--benchmark_out={out}")
            kill_when(proc, lambda: len(lines_of(journal)) > 1)
            if len(lines_of(journal)) > 1:  # Torn in its last record.
                os.truncate(journal, os.path.getsize(journal) - 50)
            code, err = run(*args, f"--torchbench_resume={journal}",
                            f"--benchmark_out={out}")
            self.assertEqual(code, 0, err)
            code, err = run(*args, f"--torchbench_resume={journal}",
                            f"--benchmark_out={out}")
            self.assertEqual(code, 0, err)
            journal_instances(journal)
            outs.append(out)
        merged = self.path("merged.json")
        p = subprocess.run([os.path.join(ROOT, "tools", "tb"), "merge", *outs, "-o", merged],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(result_names(merged), result_names(self.mixed_out))


if __name__ == "__main__":
    PROGRAM = sys.argv.pop(1)
    started = time.monotonic()
    result = unittest.main(verbosity=2, exit=False).result
    print(f"fault tests: {time.monotonic() - started:.1f} s")
    sys.exit(0 if result.wasSuccessful() else 1)
