"""The deterministic fill, the Python twin of torchbench/deterministic_fill.h.

Both languages compute the same bits for a tensor's name and shape, so a C++
port and its reference's own Python code can run on identical weights and
inputs (see tools/golden/make_golden.py). The rule is documented once, in
lib/include/torchbench/deterministic_fill.h; tests pin both twins to the same
values (tests/unit/deterministic_fill_test.cpp, tools/golden/test_fill.py).
"""

import os

import numpy as np

FILL_VERSION = 1

# make_golden.py's conditioning check reruns a reference with every filled
# tensor moved by about one rounding step of its dtype (alternating signs):
# a recorded quantity that moves past a tenth of the tolerance then would
# also move between machines whose kernels round differently. Set only in
# that check's child processes (its value: the adapter's DTYPE); the C++ fill
# has no such switch.
PERTURB_ENV = "TORCHBENCH_GOLDEN_PERTURB"

_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_MASK = (1 << 64) - 1


def _fnv1a64(name):
    h = _FNV_OFFSET
    for byte in name.encode("utf-8"):
        h = ((h ^ byte) * _FNV_PRIME) & _MASK
    return h


def _bits24(name, numel):
    """The 24 random bits of every element, as uint64."""
    h = np.uint64(_fnv1a64(name))
    with np.errstate(over="ignore"):
        z = h + (np.arange(1, numel + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15))
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return z >> np.uint64(40)


def deterministic_array(name, shape, dtype=np.float32, offset=0.0, scale=1.0):
    """offset + scale * u for `name`, as a numpy array of `dtype`."""
    shape = tuple(int(d) for d in shape)
    numel = int(np.prod(shape, dtype=np.int64)) if shape else 1
    u = _bits24(name, numel).astype(np.float64) / 8388608.0 - 1.0
    return (offset + scale * u).astype(dtype).reshape(shape)


def deterministic_integers(name, shape, low, high):
    """Integers in [low, high) for `name`, as int64."""
    if not (high > low and high - low < (1 << 39)):
        raise ValueError(f"bad range [{low}, {high})")
    shape = tuple(int(d) for d in shape)
    numel = int(np.prod(shape, dtype=np.int64)) if shape else 1
    values = (_bits24(name, numel) * np.uint64(high - low)) >> np.uint64(24)
    return (values.astype(np.int64) + low).reshape(shape)


def deterministic_tensor(name, shape, dtype=None, offset=0.0, scale=1.0):
    import torch

    dtype = dtype or torch.float32
    np_dtype = np.float64 if dtype == torch.float64 else np.float32
    values = deterministic_array(name, shape, np_dtype, offset, scale)
    if os.environ.get(PERTURB_ENV):
        values = _perturbed(values, os.environ[PERTURB_ENV])
    return torch.from_numpy(values).to(dtype)


def _perturbed(values, working_dtype):
    """values * (1 +- eps), eps about one rounding error of the adapter's
    working dtype. A float64 adapter that fills in float32 and
    converts computes on exactly those float32 values on every machine, so
    only its float64 fills move."""
    if working_dtype == "float64" and values.dtype == np.float32:
        return values
    # About one ulp: 1e-7 for float32, 2**-52 for float64.
    eps = 1e-7 if values.dtype == np.float32 else 2.0**-52
    signs = np.where(np.arange(values.size) % 2 == 0, 1.0, -1.0).reshape(values.shape)
    return np.asarray(values.astype(np.float64) * (1.0 + eps * signs), dtype=values.dtype)


def deterministic_long(name, shape, low, high):
    import torch

    return torch.from_numpy(deterministic_integers(name, shape, low, high))


def fill_rule(name, shape):
    """(offset, scale) for a parameter or buffer, as the C++ rule."""
    dim = len(shape)
    if name.endswith("running_var"):
        return 1.0, 0.5
    if name.endswith("running_mean") or (dim <= 1 and name.endswith("bias")):
        return 0.0, 0.1
    if dim <= 1:
        return 1.0, 0.25
    numel = int(np.prod(shape, dtype=np.int64))
    return 0.0, float(np.sqrt(3.0 / (numel / shape[0])))


def deterministic_fill(module):
    """Overwrites every floating parameter and buffer of a torch module."""
    import torch

    with torch.no_grad():
        # A tensor registered under several names (shared or tied) takes the
        # fill of its first name: the default remove_duplicate=True.
        named = list(module.named_parameters()) + list(module.named_buffers())
        for name, tensor in named:
            if tensor is None or not tensor.is_floating_point():
                continue
            offset, scale = fill_rule(name, tuple(tensor.shape))
            values = deterministic_tensor(
                name, tuple(tensor.shape),
                torch.float64 if tensor.dtype == torch.float64 else torch.float32,
                offset, scale)
            tensor.copy_(values)
