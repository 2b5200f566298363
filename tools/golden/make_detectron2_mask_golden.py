#!/usr/bin/env python3
"""Makes tests/golden/detectron2_mask.golden: detectron2's mask branch run alone.

    make_detectron2_mask_golden.py [--out DIR] [--detectron2-root DIR]

tests/models/detectron2_mask_head_test.cpp runs models/common/detectron2/
mask_head.h on the same inputs. detectron2 (c470ca3) runs from a source
checkout (tools/golden/detectron2_env.py: --detectron2-root or
DETECTRON2_ROOT, default /work/ref/src/detectron2). Small shapes, same code
paths as the models:

  fpn/...        MaskRCNNConvUpsampleHead as the FPN configs build it (4 convs,
                 deconv, predictor; here 16 channels, 6 classes, 14x14 input)
                 with deterministic weights (fill.py): logits, then in
                 training mode the loss (mask_rcnn_loss: targets by
                 PolygonMasks.crop_and_resize of coco_synthetic images 0 and 1,
                 proposals = the matched objects' boxes jittered) and the
                 gradients of the input and of the first and last parameters
  fpn_agnostic/  the same head with one (class-agnostic) mask: loss
  c4/...         the C4 form (no convs, deconv on 7x7 res5-like features,
                 32 -> 16 channels): logits, loss, gradients
  inference/     mask_rcnn_inference: the predicted classes' sigmoid masks,
                 split over two images
  paste/masks    paste_masks_in_image (CPU: one mask at a time, skip_empty) of
                 28x28 probabilities into a 60x80 image, boxes partly outside
  postprocess/   detector_postprocess from a 90x120 input to a 60x80 output:
                 boxes scaled, clipped, empty ones dropped, masks pasted
"""

import argparse
import os
import pathlib
import sys
import tempfile

import numpy as np
import torch

import coco_synthetic
import detectron2_env
import fill
from make_golden import summary_lines

HERE = pathlib.Path(__file__).resolve().parent

T = fill.deterministic_tensor

# Proposals per image for the loss: (image, count).
LOSS_IMAGES = [(0, 5), (1, 3)]


def loss_instances(Instances, Boxes, PolygonMasks):
    """Foreground proposals of coco_synthetic images 0 and 1 as the loss sees them."""
    out = []
    for image, count in LOSS_IMAGES:
        info = coco_synthetic.image_info(image)
        anns = info["annotations"]
        gt_index = fill.deterministic_integers(f"d2mask/gt_index/{image}", (count,), 0, len(anns))
        jitter = fill.deterministic_array(f"d2mask/jitter/{image}", (count, 4), np.float64, 0.0, 0.2)
        boxes, classes, polys = [], [], []
        for r, g in enumerate(gt_index):
            x, y, w, h = anns[g]["bbox"]
            j = jitter[r]
            boxes.append([x + j[0] * w, y + j[1] * h, x + w + j[2] * w, y + h + j[3] * h])
            classes.append(anns[g]["contiguous_label"] % 6)
            polys.append(anns[g]["segmentation"])
        inst = Instances((info["height"], info["width"]))
        inst.proposal_boxes = Boxes(torch.tensor(np.array(boxes), dtype=torch.float64).float())
        inst.gt_classes = torch.tensor(classes, dtype=torch.int64)
        inst.gt_masks = PolygonMasks(polys)
        out.append(inst)
    return out


def head_lines(prefix, head, in_channels, side, instances, mask_rcnn_loss, EventStorage):
    lines = []
    fill.deterministic_fill(head)
    n = sum(len(i) for i in instances)
    x = T(f"{prefix}/features", (n, in_channels, side, side)).requires_grad_()
    head.eval()
    with torch.no_grad():
        lines += summary_lines(f"{prefix}/logits", head.layers(x))
    head.train()
    with EventStorage():
        loss = head(x, instances)["loss_mask"]
    loss.backward()
    lines += summary_lines(f"{prefix}/loss_mask", loss)
    lines += summary_lines(f"{prefix}/grad:features", x.grad)
    params = list(head.named_parameters())
    for name, p in (params[0], params[-1]):
        lines += summary_lines(f"{prefix}/grad:{name}", p.grad)
    return lines


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(HERE.parent.parent / "tests" / "golden"))
    parser.add_argument("--detectron2-root", default=os.environ.get("DETECTRON2_ROOT", "/work/ref/src/detectron2"))
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    detectron2_env.setup(args.detectron2_root)
    from detectron2.layers import ShapeSpec
    from detectron2.layers.mask_ops import paste_masks_in_image
    from detectron2.modeling.postprocessing import detector_postprocess
    from detectron2.modeling.roi_heads.mask_head import (
        MaskRCNNConvUpsampleHead, mask_rcnn_inference, mask_rcnn_loss)
    from detectron2.structures import Boxes, Instances, PolygonMasks
    from detectron2.utils.events import EventStorage

    lines = [
        "torchbench-golden 1",
        f"fill {fill.FILL_VERSION}",
        "model detectron2_mask",
        "reference detectron2 c470ca3 mask branch (tools/golden/make_detectron2_mask_golden.py)",
        "mode train",
        "batch_size 1",
        "dtype float32",
        "note MaskRCNNConvUpsampleHead (FPN and C4 forms), mask_rcnn_loss with polygon targets,",
        "note mask_rcnn_inference, paste_masks_in_image, detector_postprocess (masks) on CPU",
    ]
    instances = loss_instances(Instances, Boxes, PolygonMasks)
    fpn = MaskRCNNConvUpsampleHead(ShapeSpec(channels=16, height=14, width=14), num_classes=6,
                                   conv_dims=[16] * 5)
    lines += head_lines("fpn", fpn, 16, 14, instances, mask_rcnn_loss, EventStorage)
    agnostic = MaskRCNNConvUpsampleHead(ShapeSpec(channels=16, height=14, width=14), num_classes=1,
                                        conv_dims=[16] * 5)
    fill.deterministic_fill(agnostic)
    x = T("fpn/features", (8, 16, 14, 14))
    with EventStorage():
        lines += summary_lines("fpn_agnostic/loss_mask", agnostic(x, instances)["loss_mask"])
    c4 = MaskRCNNConvUpsampleHead(ShapeSpec(channels=32, height=7, width=7), num_classes=6, conv_dims=[16])
    lines += head_lines("c4", c4, 32, 7, instances, mask_rcnn_loss, EventStorage)

    # Inference: two images of 3 detections each.
    logits = T("inference/logits", (6, 6, 28, 28), scale=4.0)
    preds = []
    for i in range(2):
        inst = Instances((50, 60))
        inst.pred_classes = fill.deterministic_long(f"inference/classes/{i}", (3,), 0, 6)
        preds.append(inst)
    mask_rcnn_inference(logits, preds)
    for i, inst in enumerate(preds):
        lines += summary_lines(f"inference/pred_masks{i}", inst.pred_masks)

    # Paste: probabilities and boxes (some partly outside the 60x80 image).
    masks = T("paste/masks", (7, 28, 28), scale=4.0).sigmoid()
    x0 = T("paste/x0", (7,), offset=40.0, scale=35.0)
    y0 = T("paste/y0", (7,), offset=30.0, scale=25.0)
    w = T("paste/w", (7,), offset=20.0, scale=18.0)
    h = T("paste/h", (7,), offset=15.0, scale=13.0)
    boxes = torch.stack([x0, y0, x0 + w, y0 + h], 1)
    boxes[0] = torch.tensor([-6.5, -3.25, 20.75, 18.5])  # over the top-left corner
    lines += summary_lines("paste/masks", paste_masks_in_image(masks, boxes, (60, 80), threshold=0.5))

    # detector_postprocess: one box empty after clipping (dropped).
    boxes_in = boxes * 1.5
    boxes_in[3] = torch.tensor([125.0, 10.0, 140.0, 30.0])
    results = Instances((90, 120))
    results.pred_boxes = Boxes(boxes_in)
    results.scores = T("postprocess/scores", (7,), offset=0.5, scale=0.5)
    results.pred_classes = fill.deterministic_long("postprocess/classes", (7,), 0, 6)
    results.pred_masks = masks[:, None]
    post = detector_postprocess(results, 60, 80)
    lines += summary_lines("postprocess/boxes", post.pred_boxes.tensor)
    lines += summary_lines("postprocess/masks", post.pred_masks)

    out = pathlib.Path(args.out)
    fd, tmp = tempfile.mkstemp(dir=out, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, out / "detectron2_mask.golden")
    print(out / "detectron2_mask.golden")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
