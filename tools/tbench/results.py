"""Reading the torchbench program's Google Benchmark JSON."""

import json
import math
import re

# Google Benchmark's time units as powers of ten of a second: one table,
# and 10.0 ** k is exactly the literal 1e-9, 1e-6, ... that the tools used.
TIME_UNIT_EXPONENTS = {"ns": -9, "us": -6, "ms": -3, "s": 0}
_TARGET = {"s": 0, "ms": -3}

# The TF32 and cuDNN flags a CUDA result ran under, as the program's label
# spells them (`name:true|false`, read back from PyTorch), each with the key
# tools/versus_python.py eager records it under.
CUDA_FLAGS = (("tf32_matmul", "matmul_allow_tf32"), ("tf32_cudnn", "cudnn_allow_tf32"),
              ("cudnn_benchmark", "cudnn_benchmark"),
              ("cudnn_deterministic", "cudnn_deterministic"))


def scale(unit, to="ms"):
    """The factor from Google Benchmark's `unit` to seconds or milliseconds;
    None for a unit it does not write."""
    if unit not in TIME_UNIT_EXPONENTS:
        return None
    return 10.0 ** (TIME_UNIT_EXPONENTS[unit] - _TARGET[to])


def real_time(row, to="ms"):
    """A result row's real_time (one step: device time on a GPU, steady
    clock on the CPU) in seconds or milliseconds. Raises KeyError on a row
    without it or with a unit Google Benchmark does not write."""
    factor = scale(row.get("time_unit", "ns"), to)
    if factor is None:
        raise KeyError(f"time_unit {row.get('time_unit')!r}")
    return row["real_time"] * factor


def load(path):
    """The parsed JSON document at `path` (OSError and ValueError for the
    caller to word)."""
    with open(path) as f:
        return json.load(f)


def instance_name(row):
    """The printed instance name of a row (an aggregate's run_name)."""
    return row.get("run_name", row.get("name"))


def geomean(values):
    """The geometric mean of the positive values (None without any): the
    suite-level summary of ratios, as TorchBench's own scores."""
    values = [v for v in values if v and v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def safe_name(name):
    """An instance name as a file name, as the program writes its profiles:
    every character but [A-Za-z0-9._-] becomes _."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)
