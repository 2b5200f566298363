#!/usr/bin/env python3
"""Makes tests/golden/polygon_mask.golden: what pycocotools rasterizes.

    make_polygon_mask_golden.py [--out DIR] [--detectron2-root DIR]

tests/models/polygon_mask_test.cpp rasterizes the same polygons with
models/common/polygon_mask.h and requires the very same pixels. Cases:

  case      a random set of 1-3 polygons in a random h x w image (1..120 px):
            convex, concave (star), self-intersecting, crossing the border,
            tiny (inside one pixel), degenerate (repeated vertices, collinear,
            two-point), with coordinates on the 0.1 grid (ties of the x5
            rounding), 0.01 (as COCO stores them) or 0.0001;
            mask = decode(merge(frPyObjects(polygons, h, w)))
  crop      a case's polygons through detectron2's
            rasterize_polygons_within_box with a float32 box (tiny, inverted,
            partly outside, large) at mask size 14 or 28
  coco      models/common/coco_synthetic.h's objects (images 0..9): the
            full-image mask of each object, and its crop_and_resize (all
            objects of an image at once, PolygonMasks.crop_and_resize) in a
            jittered box at 28 x 28, as Mask R-CNN's targets are made
Every mask is recorded as its pycocotools RLE (column-major run lengths):
the number of runs, a 64-bit FNV-1a hash of the runs, the area, and the runs
themselves when there are at most 24. The random polygons come from numpy's
RandomState(2024) and are written out (%r), so the C++ side reads
them instead of drawing them.

detectron2 runs from a source checkout (tools/golden/detectron2_env.py:
--detectron2-root or DETECTRON2_ROOT, default /work/ref/src/detectron2).
"""

import argparse
import os
import pathlib
import sys

import numpy as np

import coco_synthetic
import detectron2_env

HERE = pathlib.Path(__file__).resolve().parent

NUM_CASES = 400


def fnv1a(counts):
    h = 0xCBF29CE484222325
    for c in counts:
        for byte in int(c).to_bytes(4, "little"):
            h ^= byte
            h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def rle_line(mask):
    """mask: bool/uint8 [h, w] numpy -> 'rle <m> <hash> <area> [counts]'."""
    from pycocotools import mask as mask_util

    counts = uncompressed_counts(mask_util.encode(np.asfortranarray(mask.astype(np.uint8))))
    line = f"rle {len(counts)} {fnv1a(counts):016x} {int(mask.sum())}"
    if len(counts) <= 24:
        line += " " + " ".join(str(c) for c in counts)
    return line


def uncompressed_counts(rle):
    """pycocotools' compressed string -> the run lengths (rleFrString)."""
    s = rle["counts"]
    if isinstance(s, bytes):
        s = s.decode("ascii")
    counts, p = [], 0
    while p < len(s):
        x, k, more = 0, 0, True
        while more:
            c = ord(s[p]) - 48
            x |= (c & 0x1F) << (5 * k)
            more = bool(c & 0x20)
            p += 1
            k += 1
            if not more and (c & 0x10):
                x |= -1 << (5 * k)
        if len(counts) > 2:
            x += counts[-2]
        counts.append(x)
    return counts


def random_polygon(rng, h, w):
    kind = rng.randint(9)
    n = int(rng.randint(3, 13))
    if kind == 0:  # anywhere, crossing the border, self-intersecting
        xs = rng.uniform(-0.3 * w - 1, 1.3 * w + 1, n)
        ys = rng.uniform(-0.3 * h - 1, 1.3 * h + 1, n)
    elif kind in (1, 2):  # star: concave, around a point inside or near the image
        cx, cy = rng.uniform(-2, w + 2), rng.uniform(-2, h + 2)
        ang = np.sort(rng.uniform(0, 2 * np.pi, n))
        rad = rng.uniform(0.2, 1.0, n) * rng.uniform(1, max(h, w))
        xs, ys = cx + rad * np.cos(ang), cy + rad * np.sin(ang)
    elif kind == 3:  # tiny: within a pixel or two
        cx, cy = rng.uniform(-1, w + 1), rng.uniform(-1, h + 1)
        xs, ys = cx + rng.uniform(-0.7, 0.7, n), cy + rng.uniform(-0.7, 0.7, n)
    elif kind == 4:  # repeated vertices
        xs = rng.uniform(-1, w + 1, n)
        ys = rng.uniform(-1, h + 1, n)
        rep = rng.randint(n, size=n)
        xs, ys = xs[np.sort(rep)], ys[np.sort(rep)]
    elif kind == 5:  # collinear (a line walked back and forth) or two points
        t = rng.uniform(0, 1, n)
        x0, y0, x1, y1 = rng.uniform(-1, w + 1), rng.uniform(-1, h + 1), rng.uniform(-1, w + 1), rng.uniform(-1, h + 1)
        xs, ys = x0 + t * (x1 - x0), y0 + t * (y1 - y0)
        if rng.randint(2):
            n = 3
            xs, ys = np.array([x0, x1, x0]), np.array([y0, y1, y0])
    elif kind == 6:  # axis-aligned rectangle on half/integer coordinates
        x0, x1 = np.sort(rng.randint(-2, 2 * w + 3, 2) / 2.0)
        y0, y1 = np.sort(rng.randint(-2, 2 * h + 3, 2) / 2.0)
        xs, ys = np.array([x0, x1, x1, x0]), np.array([y0, y0, y1, y1])
    elif kind == 7:  # near the top-left corner, small negative coordinates
        xs = rng.uniform(-1.5, min(4.0, w), n)
        ys = rng.uniform(-1.5, min(4.0, h), n)
    else:  # random inside
        xs = rng.uniform(0, w, n)
        ys = rng.uniform(0, h, n)
    pts = np.stack([xs, ys], 1).reshape(-1)
    rounding = rng.randint(3)
    if rounding == 0:
        pts = np.round(pts * 10) / 10  # ties of round(5 * x)
    elif rounding == 1:
        pts = np.round(pts * 100) / 100
    else:  # off any grid, but short in the file
        pts = np.round(pts * 10000) / 10000
    return [float(v) for v in pts]


def random_box(rng, h, w):
    kind = rng.randint(5)
    if kind == 0:  # tiny (a side below 0.1) or inverted
        x0, y0 = rng.uniform(-2, w), rng.uniform(-2, h)
        return [x0, y0, x0 + rng.uniform(-0.5, 0.12), y0 + rng.uniform(-0.5, 3)]
    if kind == 1:  # partly outside
        return [rng.uniform(-10, w / 2), rng.uniform(-10, h / 2), rng.uniform(w / 2, w + 10), rng.uniform(h / 2, h + 10)]
    if kind == 2:  # the whole image
        return [0.0, 0.0, float(w), float(h)]
    x0, y0 = rng.uniform(-1, w), rng.uniform(-1, h)
    return [x0, y0, x0 + rng.uniform(0.5, w), y0 + rng.uniform(0.5, h)]


def f32(values):
    return [float(np.float32(v)) for v in values]


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(HERE.parent.parent / "tests" / "golden"))
    parser.add_argument("--detectron2-root", default=os.environ.get("DETECTRON2_ROOT", "/work/ref/src/detectron2"))
    args = parser.parse_args(argv)

    from importlib.metadata import version

    import torch
    from pycocotools import mask as mask_util

    detectron2_env.setup(args.detectron2_root)
    from detectron2.structures.masks import PolygonMasks, rasterize_polygons_within_box

    lines = ["polygon-mask-golden 1", f"note pycocotools {version('pycocotools')}, numpy {np.__version__}"]
    rng = np.random.RandomState(2024)
    for i in range(NUM_CASES):
        big = rng.randint(5) == 0
        h = int(rng.randint(1, 121 if big else 41))
        w = int(rng.randint(1, 121 if big else 41))
        polys = [random_polygon(rng, h, w) for _ in range(int(rng.randint(1, 4)))]
        mask = mask_util.decode(mask_util.merge(mask_util.frPyObjects(polys, h, w)))
        lines.append(f"case {i} {h} {w} {len(polys)}")
        lines += [f"poly {len(p)} " + " ".join(repr(v) for v in p) for p in polys]
        lines.append(rle_line(mask))
        if i % 2 == 0:
            m = 28 if rng.randint(2) else 14
            box = f32(random_box(rng, h, w))
            crop = rasterize_polygons_within_box(
                [np.asarray(p, dtype=np.float64) for p in polys], np.asarray(box, dtype=np.float32), m)
            lines.append(f"crop {m} " + " ".join(repr(v) for v in box))
            lines.append(rle_line(crop.numpy()))

    for image in range(10):
        info = coco_synthetic.image_info(image)
        h, w = info["height"], info["width"]
        polys = [a["segmentation"] for a in info["annotations"]]
        boxes = []
        for j, segm in enumerate(polys):
            mask = mask_util.decode(mask_util.frPyObjects(segm, h, w)).any(axis=2)
            lines.append(f"coco {image} {j} 0")
            lines.append(rle_line(mask))
            x, y, bw, bh = info["annotations"][j]["bbox"]
            jit = rng.uniform(-0.25, 0.25, 4)
            boxes.append(f32([x + jit[0] * bw, y + jit[1] * bh, x + bw + jit[2] * bw, y + bh + jit[3] * bh]))
        crops = PolygonMasks(polys).crop_and_resize(torch.tensor(boxes, dtype=torch.float32), 28)
        for j, box in enumerate(boxes):
            lines.append(f"coco {image} {j} 28 " + " ".join(repr(v) for v in box))
            lines.append(rle_line(crops[j].numpy()))

    out = pathlib.Path(args.out) / "polygon_mask.golden"
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out} ({out.stat().st_size} bytes)")


if __name__ == "__main__":
    main(sys.argv[1:])
