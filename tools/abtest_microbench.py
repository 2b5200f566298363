#!/usr/bin/env python3
"""One ATen operator alone, at one call the model made: tools/abtest.py runs
this in each build's own Python (the same libtorch_cpu the program links) to
check an attribution.

    abtest_microbench.py '{"op": "aten::mm", "threads": 1,
                           "sig": {"dims": ..., "types": ..., "strides": ...,
                                   "concrete": ...}}'

The call is rebuilt from the profiler's record of it ("Input Dims", "Input
Strides", "Input type", "Concrete Inputs" of a --torchbench_profile_shapes
trace): tensors of those shapes, strides and dtypes (values uniform in
[0.5, 1): no domain errors, no denormals; integer and bool tensors zero, so
that index arguments are valid), scalars and lists as recorded, None where
nothing was (the schema's default then applies; strings are not recorded).
The overload is the first whose schema takes the recorded arguments in
order (tensors where tensors were, keyword-only ones by name) and runs. A
tensor list's dtype is not recorded: float32. Prints {"us": median microseconds per
call, "calls": calls per timed batch}; the figure includes Python's cost of
one torch.ops call (a few microseconds), the same on both builds.
"""

import json
import sys
import time

import torch

DTYPES = {"float": torch.float32, "double": torch.float64, "c10::Half": torch.float16,
          "c10::BFloat16": torch.bfloat16, "long int": torch.int64, "int": torch.int32,
          "short int": torch.int16, "signed char": torch.int8, "unsigned char": torch.uint8,
          "bool": torch.bool, "c10::complex<float>": torch.complex64}


def tensor(dims, strides, dtype):
    dims = list(dims)
    strides = list(strides) if strides and len(strides) == len(dims) else None
    if strides is None:
        base = torch.empty(dims, dtype=dtype)
        strides = base.stride()
    size = 1 + sum((d - 1) * s for d, s in zip(dims, strides)) if all(dims) else 0
    if dtype.is_floating_point or dtype.is_complex:
        storage = torch.rand(size, dtype=torch.float32).mul_(0.5).add_(0.5).to(dtype)
    else:
        storage = torch.zeros(size, dtype=dtype)
    return storage.as_strided(dims, strides)


def scalar(text):
    if text in ("True", "False"):
        return text == "True"
    try:
        return int(text)
    except ValueError:
        return float(text)


def build_args(sig):
    dims = sig.get("dims") or []
    types = sig.get("types") or [""] * len(dims)
    strides = sig.get("strides") or [None] * len(dims)
    concrete = sig.get("concrete") or [""] * len(dims)
    args = []
    for d, t, s, c in zip(dims, types, strides, concrete):
        if t in DTYPES:
            args.append(tensor(d, s, DTYPES[t]))
        elif t == "TensorList":
            args.append([tensor(x, y, torch.float32) for x, y in zip(d, s or [None] * len(d))])
        elif t == "Scalar" and c != "":
            args.append(scalar(c))
        elif t == "ScalarList" and c != "":
            inner = c.strip()[1:-1].strip()
            args.append([scalar(x.strip()) for x in inner.split(",")] if inner else [])
        else:
            args.append(None)
    return args


# c10::ScalarType, Layout and MemoryFormat as the profiler records them
# (their enum values).
SCALAR_TYPES = {0: torch.uint8, 1: torch.int8, 2: torch.int16, 3: torch.int32, 4: torch.int64,
                5: torch.float16, 6: torch.float32, 7: torch.float64, 9: torch.complex64,
                10: torch.complex128, 11: torch.bool, 15: torch.bfloat16}
MEMORY_FORMATS = {0: torch.contiguous_format, 1: torch.preserve_format,
                  2: torch.channels_last, 3: torch.channels_last_3d}


def convert(param_type, value):
    """An int the profiler recorded for an enum argument, as Python passes it."""
    if isinstance(value, int) and not isinstance(value, bool):
        if "ScalarType" in param_type:
            return SCALAR_TYPES.get(value, value)
        if "MemoryFormat" in param_type:
            return MEMORY_FORMATS.get(value, value)
        if "Layout" in param_type:
            return torch.strided if value == 0 else value
    return value


def is_tensor_type(text):
    return text in ("Tensor", "Optional[Tensor]") or text.startswith("Tensor(")


def bind(packet, args):
    """(overload, positional, keyword) candidates for the recorded args."""
    for name in packet.overloads():
        overload = getattr(packet, name)
        schema = overload._schema
        params = schema.arguments
        if len(params) < len(args):
            continue
        fits = True
        for p, a in zip(params, args):
            t = str(p.type)
            if a is None:
                fits = fits and (t.startswith("Optional[") or p.has_default_value())
            elif isinstance(a, torch.Tensor) != is_tensor_type(t):
                fits = False
            elif isinstance(a, list) and a and isinstance(a[0], torch.Tensor) != \
                    t.endswith("Tensor]") and "Tensor" in t:
                fits = False
        if not fits:
            continue
        positional, keyword = [], {}
        for p, a in zip(params, args):
            a = convert(str(p.type), a)
            if p.kwarg_only:
                if a is not None:
                    keyword[p.name] = a
            else:
                positional.append(a)
        while positional and positional[-1] is None:
            positional.pop()
        yield overload, positional, keyword


def main():
    spec = json.loads(sys.argv[1])
    torch.set_num_threads(int(spec.get("threads", 1)))
    ns, name = spec["op"].split("::", 1)
    packet = getattr(getattr(torch.ops, ns), name)
    args = build_args(spec["sig"])
    errors = []
    with torch.no_grad():
        for overload, positional, keyword in bind(packet, args):
            try:
                overload(*positional, **keyword)
            except (RuntimeError, TypeError, ValueError) as e:
                errors.append(f"{overload}: {str(e).splitlines()[0][:120]}")
                continue
            break
        else:
            sys.exit(f"no overload of {spec['op']} takes the recorded call"
                     + (f" ({errors[0]})" if errors else ""))

        def op(*_):
            return overload(*positional, **keyword)

        for _ in range(5):
            op()
        calls, took = 1, 0.0
        while True:  # a batch of at least 20 ms
            start = time.perf_counter()
            for _ in range(calls):
                op()
            took = time.perf_counter() - start
            if took >= 0.02 or calls >= 1 << 20:
                break
            calls = calls * 2 if took < 0.002 else max(calls + 1, int(calls * 0.02 / took) + 1)
        batches = []
        for _ in range(int(spec.get("batches", 7))):
            start = time.perf_counter()
            for _ in range(calls):
                op()
            batches.append((time.perf_counter() - start) / calls * 1e6)
    batches.sort()
    print(json.dumps({"us": batches[len(batches) // 2], "calls": calls}))


if __name__ == "__main__":
    main()
