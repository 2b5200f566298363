"""The results report's flag rules and its reading of a number: what
tools/report.py (which applies the rules to the runs) and tools/report_page.py
(which names and explains them on the page) both use. Standard library only."""

import math

# The heuristic rules of the train-vs-eval section: id -> (short name, rule).
RULES = {
    "ratio_high": ("train/eval > 4×", "the training step costs more than 4× the inference "
                   "step per sample (forward + backward + optimizer is typically ~3× forward)"),
    "ratio_low": ("train/eval < 2×", "the training step costs less than 2× the inference step "
                  "per sample: fixed overheads dominate, or inference does extra work"),
    "idle": ("GPU idle > 30 %", "the GPU is idle more than 30 % of the step window"),
    "eval_sync": ("sync in Eval", "host-device syncs per step in Eval of a model that is not a "
                  "detection model (on CPU: would_sync_per_step, the ops that would sync on a GPU)"),
    "memcpy": ("memcpy > 5 %", "copies take more than 5 % of the step window"),
    "kernels": ("kernels > 3× ops", "more than 3 GPU kernels per aten op: ops that decompose "
                "into many small kernels"),
    "launch": ("launch-bound", "median kernel under 10 µs while the GPU idles more than 20 %: "
               "the host cannot launch kernels as fast as they run"),
}


def number(v):
    """A finite float, else None (absent, null, NaN, a string...)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    v = float(v)
    return v if math.isfinite(v) else None
