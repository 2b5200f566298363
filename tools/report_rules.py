"""The results report's flag rules, its label of what a step's time goes to,
and its reading and writing of a number: what tools/report.py (which applies
the rules to the runs), tools/report_page.py (which names and explains them on
the page) and tools/report_plots.py use. Standard library only."""

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


# What a step's time goes to, in the "against the machine's peak" section and
# tools/flops_table.py (--torchbench_flops): the thresholds of where_time_goes.
FEW_FLOPS = 1e8        # FLOPs per step below which a step is small ...
SHORT_STEP_MS = 2.0    # ... and, when it also takes under this, overhead-bound
NEAR_PEAK_SHARE = 0.5  # peak_share from which a step counts as near GEMM peak
PRODUCT_BOUND = 0.5    # matmul_conv_share from which the products are the step


MEMORY_BOUND = 0.5     # memory_bound_share from which the products are bandwidth-bound


def where_time_goes(flops, step_ms, peak_share, matmul_conv_share=None,
                    memory_bound_share=None):
    """A short label of what a step's time goes to, in this order: no
    products at all (0 FLOPs); peak_share >= NEAR_PEAK_SHARE, near the GEMM
    peak; few FLOPs in a short step (< FEW_FLOPS and < SHORT_STEP_MS),
    launch/overhead-bound; the program's memory_bound_share (of the products'
    roofline time, the part in calls whose bytes at the copy bandwidth
    outlast their FLOPs at the GEMM peak) >= MEMORY_BOUND, memory-bound
    products; with the profile's matmul_conv_share (the step's
    share in products, --torchbench_profile): under PRODUCT_BOUND the rest of
    the step (elementwise, normalization, copies) dominates, else the products
    themselves run below peak (small or skinny shapes, layout conversions);
    without it, below peak. The measured share follows when there is one.
    None without a peak share to judge by."""
    if flops == 0:
        return "no matrix products (elementwise or integer work)"
    if peak_share is None:
        return None
    if peak_share >= NEAR_PEAK_SHARE:
        label = "near GEMM peak"
    elif flops is not None and step_ms is not None and flops < FEW_FLOPS \
            and step_ms < SHORT_STEP_MS:
        label = "launch/overhead-bound (few FLOPs per step)"
    elif memory_bound_share is not None and memory_bound_share >= MEMORY_BOUND:
        label = (f"memory-bound products: {100 * memory_bound_share:.0f} % of their roofline "
                 "time is operand traffic")
    elif matmul_conv_share is None:
        label = "below peak: non-GEMM work or memory-bound"
    elif matmul_conv_share < PRODUCT_BOUND:
        label = "non-product work (elementwise, normalization, copies)"
    else:
        label = "products below peak (small or skinny shapes, layout conversions)"
    if matmul_conv_share is not None:
        label += f"; products {100 * matmul_conv_share:.0f} % of the step"
    return label


SI_PREFIXES = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def si(v, unit=""):
    """A number with three significant digits and an SI prefix: si(1.234e12,
    "FLOP/s") is "1.23 TFLOP/s"; "—" for None."""
    if v is None:
        return "—"
    v = float(f"{v:.3g}")  # rounded first: 999.7e9 is 1 T, not 1e+03 G
    for factor, prefix in SI_PREFIXES:
        if abs(v) >= factor:
            return f"{v / factor:.3g} {prefix}{unit}"
    return f"{v:.3g} {unit}".rstrip()
