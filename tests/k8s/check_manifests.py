#!/usr/bin/env python3
"""Offline check of the Kubernetes manifests in tools/k8s/ (no cluster).

usage: check_manifests.py TORCHBENCH [K8S_DIR]

- each manifest parses as YAML and has the fields a sharded run needs: an
  Indexed Job (completionMode Indexed, completions N, parallelism <= N,
  TORCHBENCH_SHARD_COUNT = N, the results PVC mounted), a merge Job running
  tools/merge.py on the same volume and RUN_ID, a ReadWriteMany PVC;
- the shard index and count reach the program: the Indexed Job's container
  command and args run here as a pod would run them (the program on PATH as
  `torchbench`, the volume's mount path mapped to a temporary folder), with
  JOB_COMPLETION_INDEX=i and the manifest's env, plus --benchmark_list_tests;
  the lists of i = 0..N-1 are disjoint and together equal the unsharded list
  (the program with the same args and no index).
"""
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import unittest

import yaml

PROGRAM = None
K8S_DIR = pathlib.Path(__file__).resolve().parents[2] / "tools" / "k8s"


def load(name):
    with open(K8S_DIR / name) as f:
        return yaml.safe_load(f)


def env_of(container):
    return {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}


class Manifests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.job = load("indexed-job.yaml")
        cls.merge = load("merge-job.yaml")
        cls.pvc = load("results-pvc.yaml")
        cls.pod = cls.job["spec"]["template"]["spec"]
        cls.container = cls.pod["containers"][0]

    def test_indexed_job_fields(self):
        job, spec = self.job, self.job["spec"]
        self.assertEqual((job["apiVersion"], job["kind"]), ("batch/v1", "Job"))
        self.assertEqual(spec["completionMode"], "Indexed")
        count = spec["completions"]
        self.assertIsInstance(count, int)
        self.assertGreaterEqual(count, 1)
        self.assertLessEqual(spec["parallelism"], count)
        self.assertIn(self.pod["restartPolicy"], ("Never", "OnFailure"))
        self.assertTrue(self.container["image"])
        self.assertEqual(env_of(self.container).get("TORCHBENCH_SHARD_COUNT"), str(count),
                         "TORCHBENCH_SHARD_COUNT must equal completions")
        self.assertIn("JOB_COMPLETION_INDEX", " ".join(self.container["command"]))

    def _claim_and_mount(self, pod, container):
        volumes = {v["name"]: v for v in pod["volumes"]}
        mount = container["volumeMounts"][0]
        return volumes[mount["name"]]["persistentVolumeClaim"]["claimName"], mount["mountPath"]

    def test_merge_job_and_volume(self):
        self.assertEqual((self.merge["apiVersion"], self.merge["kind"]), ("batch/v1", "Job"))
        self.assertEqual(self.merge["spec"].get("completionMode", "NonIndexed"), "NonIndexed")
        merge_pod = self.merge["spec"]["template"]["spec"]
        merge_container = merge_pod["containers"][0]
        self.assertIn("tools/merge.py", " ".join(merge_container["command"]))
        self.assertEqual(self._claim_and_mount(self.pod, self.container),
                         self._claim_and_mount(merge_pod, merge_container))
        self.assertEqual(env_of(self.container)["RUN_ID"], env_of(merge_container)["RUN_ID"])
        self.assertEqual(self.pvc["kind"], "PersistentVolumeClaim")
        self.assertEqual(self.pvc["metadata"]["name"],
                         self._claim_and_mount(self.pod, self.container)[0])
        self.assertIn("ReadWriteMany", self.pvc["spec"]["accessModes"])

    def _pod_command(self, bin_dir, results, index=None):
        """The container's command and args as the pod runs them, listing."""
        _, mount = self._claim_and_mount(self.pod, self.container)
        command = [part.replace(mount, results) for part in self.container["command"]]
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("SLURM_", "JOB_COMPLETION_INDEX", "TORCHBENCH_SHARD"))}
        env["PATH"] = f"{bin_dir}:{env['PATH']}"
        if index is not None:
            env.update(env_of(self.container))
            env["JOB_COMPLETION_INDEX"] = str(index)
            return command + self.container["args"] + ["--benchmark_list_tests"], env
        return [PROGRAM, *self.container["args"], "--benchmark_list_tests"], env

    def test_index_and_count_reach_the_program(self):
        count = self.job["spec"]["completions"]
        with tempfile.TemporaryDirectory() as tmp:
            bin_dir = os.path.join(tmp, "bin")
            os.mkdir(bin_dir)
            os.symlink(os.path.abspath(PROGRAM), os.path.join(bin_dir, "torchbench"))
            results = os.path.join(tmp, "results")
            started = time.monotonic()
            command, env = self._pod_command(bin_dir, results)
            whole = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
            self.assertEqual(whole.returncode, 0, whole.stderr)
            everything = whole.stdout.split()
            self.assertTrue(everything)
            seen = {}
            for index in range(count):
                command, env = self._pod_command(bin_dir, results, index)
                shard = subprocess.run(command, env=env, capture_output=True, text=True,
                                       timeout=120)
                self.assertEqual(shard.returncode, 0, shard.stderr)
                # The program says which shard it took (from the variables).
                self.assertIn(f"shard {index}/{count}:", shard.stderr)
                for name in shard.stdout.split():
                    self.assertNotIn(name, seen, f"{name} in shards {seen.get(name)} and {index}")
                    seen[name] = index
            self.assertEqual(set(seen), set(everything))
            self.assertEqual(len(seen), len(everything))
            print(f"{len(everything)} instances in {count} disjoint shards "
                  f"({time.monotonic() - started:.1f} s)")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    PROGRAM = sys.argv[1]
    if len(sys.argv) > 2:
        K8S_DIR = pathlib.Path(sys.argv[2])
    unittest.main(argv=sys.argv[:1], verbosity=2)
