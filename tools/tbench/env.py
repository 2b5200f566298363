"""What a CPU measurement depends on besides the code: the CPU and its vector
extensions, the intra-op threads, and the cores a process may run on."""

import os
import re

VECTOR_FLAGS = ("avx2", "avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_bf16",
                "avx512_fp16", "amx_bf16")
REQUIREMENTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "requirements.txt")


def machine(wanted=VECTOR_FLAGS):
    """The CPU's name and the vector extensions that decide its kernels
    (those of `wanted` that /proc/cpuinfo lists, in its order, as one
    string)."""
    cpu, flags = "?", []
    try:
        with open("/proc/cpuinfo") as f:
            for text in f:
                if text.startswith("model name") and cpu == "?":
                    cpu = text.split(":", 1)[1].strip()
                elif text.startswith("flags") and not flags:
                    present = set(text.split(":", 1)[1].split())
                    flags = [x for x in wanted if x in present]
    except OSError:
        pass
    return cpu, " ".join(flags)


def thread_env(threads):
    """This process's environment with OpenMP's and MKL's threads set."""
    env = dict(os.environ)
    env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    return env


def pinned(cores):
    """A preexec_fn that pins the child to `cores` (None or empty: no
    pinning): two processes timed alike run on the same cores."""
    if not cores:
        return None
    cores = set(cores)
    return lambda: os.sched_setaffinity(0, cores)


def first_cores(count):
    """The first `count` cores this process may use."""
    return sorted(os.sched_getaffinity(0))[:count]


def pins(path=REQUIREMENTS):
    """{distribution (lower case, - for _): version} of requirements.txt,
    where every line is name==version; raises ValueError naming the line
    that is not."""
    out = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.split("#")[0].strip()
            if not line:
                continue
            match = re.fullmatch(r"([A-Za-z0-9_.-]+)==([0-9][A-Za-z0-9_.+-]*)", line)
            if not match:
                raise ValueError(f"{path}:{number}: '{line}' is not an exact pin name==version")
            out[match.group(1).lower().replace("_", "-")] = match.group(2)
    return out
