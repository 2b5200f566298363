#!/usr/bin/env python3
"""Makes tests/golden/vision_ops.golden: what torchvision's ops compute.

    make_vision_ops_golden.py [--out DIR]

tests/unit/vision_ops_test.cpp calls the same compiled operators from C++
(torchbench/vision_ops.h) on the same inputs and requires every recorded
figure to be equal, not close: on the CPU the kernels are the same code. The
inputs come from the deterministic fill (fill.py), combined with float32 ops
the C++ test repeats in the same order:

  nms/iou<t>                    torchvision.ops.nms on 300 boxes, t = 0.3 0.5 0.7
  batched_nms/offset            batched_nms on 300 boxes (1,200 coordinates:
                                the coordinate-offset branch), 5 categories
  batched_nms/loop              batched_nms on 1,500 boxes (6,000 > 4,000: the
                                per-category loop), 5 categories
  roi_align/<aligned>/<s>/...   roi_align (spatial scale 0.5, 5x4) and the
                                input's gradient through autograd, for
                                aligned False/True and sampling ratio 0/2
  roi_pool/...                  roi_pool's output, argmax and input gradient
Index tensors are also recorded multiplied by 1..n (":weighted"), so an
order change shows in the sums.
"""

import argparse
import os
import pathlib
import sys
import tempfile

import torch
import torchvision

import fill
from make_golden import summary_lines

HERE = pathlib.Path(__file__).resolve().parent

T = fill.deterministic_tensor


def make_boxes(prefix, n):
    cx = T(f"{prefix}/cx", (n,), offset=50.0, scale=40.0)
    cy = T(f"{prefix}/cy", (n,), offset=50.0, scale=40.0)
    w = T(f"{prefix}/w", (n,), offset=20.0, scale=15.0)
    h = T(f"{prefix}/h", (n,), offset=20.0, scale=15.0)
    boxes = torch.stack([cx - w * 0.5, cy - h * 0.5, cx + w * 0.5, cy + h * 0.5], 1)
    scores = T(f"{prefix}/scores", (n,), offset=0.5, scale=0.5)
    idxs = fill.deterministic_long(f"{prefix}/idxs", (n,), 0, 5)
    return boxes, scores, idxs


def make_rois(k):
    batch = fill.deterministic_long("roi/batch", (k,), 0, 2).to(torch.float32)
    x1 = T("roi/x1", (k,), offset=20.0, scale=18.0)
    y1 = T("roi/y1", (k,), offset=16.0, scale=14.0)
    w = T("roi/w", (k,), offset=10.0, scale=8.0)
    h = T("roi/h", (k,), offset=10.0, scale=8.0)
    return torch.stack([batch, x1, y1, x1 + w, y1 + h], 1)


def index_lines(key, keep):
    weights = torch.arange(1, keep.numel() + 1, dtype=torch.float64)
    return summary_lines(key, keep) + summary_lines(f"{key}:weighted", keep.double() * weights)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(HERE.parent.parent / "tests" / "golden"))
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    ops = torchvision.ops
    lines = [
        "torchbench-golden 1",
        f"fill {fill.FILL_VERSION}",
        "model vision_ops",
        f"reference torchvision {torchvision.__version__} ops (tools/golden/make_vision_ops_golden.py)",
        "mode eval",
        "batch_size 1",
        "dtype float32",
        "note torchvision.ops nms, batched_nms (both branches), roi_align, roi_pool on CPU;",
        "note the C++ test requires equality of every figure",
    ]
    boxes, scores, idxs = make_boxes("nms", 300)
    for t in (0.3, 0.5, 0.7):
        lines += index_lines(f"nms/iou{t}", ops.nms(boxes, scores, t))
    lines += index_lines("batched_nms/offset", ops.batched_nms(boxes, scores, idxs, 0.5))
    boxes, scores, idxs = make_boxes("nms_large", 1500)
    lines += index_lines("batched_nms/loop", ops.batched_nms(boxes, scores, idxs, 0.5))

    rois = make_rois(12)
    for aligned in (False, True):
        for sampling in (0, 2):
            x = T("roi/input", (2, 3, 20, 24)).requires_grad_()
            out = ops.roi_align(x, rois, (5, 4), 0.5, sampling, aligned)
            (out * T("roi/grad_output", tuple(out.shape))).sum().backward()
            key = f"roi_align/{str(aligned).lower()}/{sampling}"
            lines += summary_lines(f"{key}/output", out)
            lines += summary_lines(f"{key}/grad_input", x.grad)
    x = T("roi/input", (2, 3, 20, 24)).requires_grad_()
    out, argmax = torch.ops.torchvision.roi_pool(x, rois, 0.5, 5, 4)
    (out * T("roi/grad_output", tuple(out.shape))).sum().backward()
    lines += summary_lines("roi_pool/output", out)
    lines += summary_lines("roi_pool/argmax", argmax)
    lines += summary_lines("roi_pool/grad_input", x.grad)

    out = pathlib.Path(args.out)
    fd, tmp = tempfile.mkstemp(dir=out, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, out / "vision_ops.golden")
    print(out / "vision_ops.golden")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
