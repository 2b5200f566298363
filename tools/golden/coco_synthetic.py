"""The deterministic COCO-like detection set, twin of models/common/coco_synthetic.h.

Golden adapters of the detection models feed the reference models exactly the
images and annotations the C++ models make; the header explains the set. Every
figure is computed in float64 in the same order of operations as the C++ code
(glibc's libm on both sides), so the two agree bit for bit.
"""

import math

import numpy as np

import fill

NUM_IMAGES = 100
OBJECTS_PER_IMAGE = 7
SIZES = [(480, 640), (427, 640), (640, 480), (424, 640), (640, 427),
         (426, 640), (480, 640), (612, 612), (425, 640), (640, 428)]
COCO_CATEGORY_IDS = [
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17,
    18, 19, 20, 21, 22, 23, 24, 25, 27, 28, 31, 32, 33, 34, 35, 36,
    37, 38, 39, 40, 41, 42, 43, 44, 46, 47, 48, 49, 50, 51, 52, 53,
    54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 67, 70, 72, 73,
    74, 75, 76, 77, 78, 79, 80, 81, 82, 84, 85, 86, 87, 88, 89, 90]


def _round_hundredths(v):
    return math.floor(v * 100.0 + 0.5) / 100.0


def image_info(index):
    """{"height", "width", "annotations": [COCO-style dicts + contiguous_label]}."""
    if not 0 <= index < NUM_IMAGES:
        raise ValueError(f"coco_synthetic: image {index} out of range")
    h_img, w_img = SIZES[index % len(SIZES)]
    h_img_f, w_img_f = float(h_img), float(w_img)
    annotations = []
    for j in range(OBJECTS_PER_IMAGE):
        u = fill.deterministic_array(f"coco_synthetic/{index}/{j}", (6,), np.float64, 0.5, 0.5)
        u = [float(x) for x in u]
        lo, hi = 96.0, 0.9 * min(h_img_f, w_img_f)
        if j < 3:
            lo, hi = 8.0, 32.0
        elif j < 5:
            lo, hi = 32.0, 96.0
        side = lo + (hi - lo) * u[0]
        aspect = 0.5 + 1.5 * u[1]
        w = min(side * math.sqrt(aspect), w_img_f - 2.0)
        h = min(side / math.sqrt(aspect), h_img_f - 2.0)
        x0 = 1.0 + (w_img_f - 2.0 - w) * u[2]
        y0 = 1.0 + (h_img_f - 2.0 - h) * u[3]
        vertices = 12 + int(math.floor(u[4] * 5.0))
        label = int(math.floor(u[5] * 80.0))
        cx = x0 + 0.5 * w
        cy = y0 + 0.5 * h
        polygon = []
        for v in range(vertices):
            t = 2.0 * math.pi * v / vertices
            polygon += [_round_hundredths(cx + 0.5 * w * math.cos(t)),
                        _round_hundredths(cy + 0.5 * h * math.sin(t))]
        xs, ys = polygon[0::2], polygon[1::2]
        twice_area = 0.0
        for v in range(vertices):
            n = (v + 1) % vertices
            twice_area += xs[v] * ys[n] - xs[n] * ys[v]
        annotations.append({
            "category_id": COCO_CATEGORY_IDS[label],
            "contiguous_label": label,
            "bbox": [min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys)],
            "segmentation": [polygon],
            "area": 0.5 * abs(twice_area),
            "iscrowd": 0,
        })
    return {"height": h_img, "width": w_img, "annotations": annotations}


def image_pixels(index):
    """uint8 numpy array [H, W, 3], RGB."""
    info = image_info(index)
    return fill.deterministic_integers(
        f"coco_synthetic/pixels/{index}", (info["height"], info["width"], 3), 0, 256
    ).astype(np.uint8)
