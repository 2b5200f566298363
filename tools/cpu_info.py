"""What a CPU measurement depends on, shared by the tools that time things
(versus_python.py, abtest.py): the CPU and its vector extensions, and the
environment that fixes LibTorch's intra-op threads."""

import os

VECTOR_FLAGS = ("avx2", "avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_bf16",
                "avx512_fp16", "amx_bf16")


def machine():
    """The CPU's name and the vector extensions that decide its kernels."""
    cpu, flags = "?", []
    try:
        with open("/proc/cpuinfo") as f:
            for text in f:
                if text.startswith("model name") and cpu == "?":
                    cpu = text.split(":", 1)[1].strip()
                elif text.startswith("flags") and not flags:
                    present = set(text.split(":", 1)[1].split())
                    flags = [x for x in VECTOR_FLAGS if x in present]
    except OSError:
        pass
    return cpu, " ".join(flags)


def thread_env(threads):
    """This process's environment with OpenMP's and MKL's threads set."""
    env = dict(os.environ)
    env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    return env
