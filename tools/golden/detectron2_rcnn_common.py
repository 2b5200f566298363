"""The golden check every detectron2_fasterrcnn_* adapter shares: detectron2's
own GeneralizedRCNN (c470ca3, from a source checkout: detectron2_env.py, set
DETECTRON2_ROOT) built from the model's COCO-Detection yaml as TorchBench's
Detectron2Model builds it (BASE_LR 0.001, IMS_PER_BATCH 1, build_optimizer),
filled by name; the C++ twin is GoldenOutputs() in
models/vision/detectron2_fasterrcnn.cpp.

After the fill, the buffers that are constants rather than weights get their
real values back on both sides: pixel_mean / pixel_std (cfg.MODEL.PIXEL_*)
and the anchor generator's cell_anchors (generate_cell_anchors).

Input (small, same code path): coco_synthetic image 0 (480x640) subsampled by
2 in each direction (every other pixel, so both languages hold the same
values: the resize itself is checked in d2core's tests), BGR float, 240x320,
with its 7 boxes scaled by 0.5 (in float64, then float32 as Boxes stores
them) and contiguous classes; "height"/"width" are the original 480x640, so
detector_postprocess scales the detections by 2.

Keys:
  eval:<feature>          backbone outputs (model in eval mode, no_grad)
  eval:proposal_boxes, eval:objectness_logits   the RPN's proposals
  eval:cls_logits, eval:box_deltas   box predictor outputs on them
  eval:pred_boxes, eval:scores, eval:pred_classes   model([input]) outputs
  loss_*, loss            the train-mode loss dict and its sum
                          (torch.manual_seed(0) first: randperm sampling)
  grad:<param>            gradients after backward
  after_step:<param>      parameters after the SGD step
"""

import fill

BATCH_SIZE = 1
DTYPE = "float32"
SEED = 0


def notes(yaml):
    return [
        f"detectron2 c470ca3 GeneralizedRCNN from COCO-Detection/{yaml}, TorchBench's"
        " setup() (BASE_LR 0.001, IMS_PER_BATCH 1) and build_optimizer",
        "filled by name; pixel_mean/pixel_std and cell_anchors restored to their values",
        "input: coco_synthetic image 0 subsampled by 2 (240x320, BGR float), its 7 gt boxes"
        " x0.5, height/width 480x640",
        "eval:* from the model in eval mode under no_grad; loss*, grad:*, after_step:* from one"
        " TorchBench train() step after torch.manual_seed(0)",
    ] + ([f"C4/DC5 only, to keep the test short: {SHRUNK_OVERRIDES}"] if _shrunk(yaml) else [])


def _shrunk(yaml):
    return "_C4_" in yaml or "_DC5_" in yaml


# Config values the C4 and DC5 golden checks shrink (both sides) to keep the
# test short: their box heads are heavy per region (C4 runs res5 on every
# pooled region, DC5's fc1 takes 2048x7x7 inputs), with 1000 regions at test
# time and 512 in training at the configs' values; the code path is the same.
SHRUNK_OVERRIDES = {"MODEL.RPN.POST_NMS_TOPK_TEST": 100, "MODEL.ROI_HEADS.BATCH_SIZE_PER_IMAGE": 64}


def _build(root_yaml):
    import os

    import detectron2_env

    d2 = detectron2_env.setup()
    from detectron2.config import get_cfg
    from detectron2.modeling import build_model

    cfg = get_cfg()
    cfg.merge_from_file(os.path.join(os.path.dirname(d2.__file__), os.pardir, "configs",
                                     root_yaml))
    cfg.SOLVER.BASE_LR = 0.001
    cfg.SOLVER.IMS_PER_BATCH = 1
    cfg.MODEL.DEVICE = "cpu"
    if _shrunk(root_yaml):
        for key, value in SHRUNK_OVERRIDES.items():
            cfg.merge_from_list([key, value])
    cfg.freeze()
    return cfg, build_model(cfg)


def _restore_constants(cfg, model):
    import torch

    with torch.no_grad():
        model.pixel_mean.copy_(torch.tensor(cfg.MODEL.PIXEL_MEAN).view(-1, 1, 1))
        model.pixel_std.copy_(torch.tensor(cfg.MODEL.PIXEL_STD).view(-1, 1, 1))
        ag = model.proposal_generator.anchor_generator
        sizes = cfg.MODEL.ANCHOR_GENERATOR.SIZES
        ratios = cfg.MODEL.ANCHOR_GENERATOR.ASPECT_RATIOS
        for i, buf in enumerate(ag.cell_anchors):
            s = sizes[i] if len(sizes) > 1 else sizes[0]
            r = ratios[i] if len(ratios) > 1 else ratios[0]
            buf.copy_(ag.generate_cell_anchors(s, r))


# Multipliers applied to filled weights so the random network makes useful
# proposals and detections (unscaled, its deltas and logits are in the
# hundreds: nearly every box is clipped to the image edges or empty).
SCALES = {
    "proposal_generator.rpn_head.objectness_logits.weight": 0.01,
    "proposal_generator.rpn_head.anchor_deltas.weight": 0.001,
    "roi_heads.box_predictor.cls_score.weight": 0.01,
    "roi_heads.box_predictor.bbox_pred.weight": 0.001,
}


def _scale_weights(model):
    import torch

    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, factor in SCALES.items():
            params[name].mul_(factor)


def golden_input():
    import numpy as np
    import torch

    import coco_synthetic
    from detectron2.structures import Boxes, Instances

    info = coco_synthetic.image_info(0)
    rgb = coco_synthetic.image_pixels(0)
    bgr = np.ascontiguousarray(rgb[::2, ::2, ::-1])
    image = torch.from_numpy(bgr.transpose(2, 0, 1).copy()).to(torch.float32)
    h, w = image.shape[1:]
    boxes = []
    for a in info["annotations"]:
        x, y, bw, bh = a["bbox"]
        boxes.append([x * 0.5, y * 0.5, (x + bw) * 0.5, (y + bh) * 0.5])
    inst = Instances((h, w))
    inst.gt_boxes = Boxes(torch.tensor(np.array(boxes, dtype=np.float64)))
    inst.gt_classes = torch.tensor([a["contiguous_label"] for a in info["annotations"]],
                                   dtype=torch.int64)
    return {"image": image, "height": info["height"], "width": info["width"],
            "instances": inst}


def record_params(model):
    """The parameters whose gradients and updates the file records."""
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    chosen = [names[0]]
    chosen += [n for n in names if n.startswith("proposal_generator.rpn_head.conv.")]
    chosen += [n for n in names if n.startswith("roi_heads.box_predictor.")]
    return chosen


def compute(yaml):
    import torch

    cfg, model = _build(f"COCO-Detection/{yaml}")
    from detectron2.solver import build_optimizer
    from detectron2.utils.events import EventStorage

    fill.deterministic_fill(model)
    _restore_constants(cfg, model)
    _scale_weights(model)
    inp = golden_input()
    out = {}

    model.eval()
    with torch.no_grad():
        images = model.preprocess_image([inp])
        features = model.backbone(images.tensor)
        for k, v in features.items():
            out[f"eval:{k}"] = v
        proposals, _ = model.proposal_generator(images, features, None)
        out["eval:proposal_boxes"] = proposals[0].proposal_boxes.tensor
        out["eval:objectness_logits"] = proposals[0].objectness_logits
        rh = model.roi_heads
        boxes = [proposals[0].proposal_boxes]
        if hasattr(rh, "res5"):
            box_features = rh._shared_roi_transform([features[f] for f in rh.in_features], boxes)
            logits, deltas = rh.box_predictor(box_features.mean(dim=[2, 3]))
        else:
            bf = rh.box_pooler([features[f] for f in rh.box_in_features], boxes)
            logits, deltas = rh.box_predictor(rh.box_head(bf))
        out["eval:cls_logits"] = logits
        out["eval:box_deltas"] = deltas
        result = model([inp])[0]["instances"]
        out["eval:pred_boxes"] = result.pred_boxes.tensor
        out["eval:scores"] = result.scores
        out["eval:pred_classes"] = result.pred_classes

    model.train()
    optimizer = build_optimizer(cfg, model)
    chosen = record_params(model)
    params = dict(model.named_parameters())
    torch.manual_seed(SEED)
    with EventStorage():
        loss_dict = model([inp])
        losses = sum(loss_dict.values())
        optimizer.zero_grad()
        losses.backward()
        for n in chosen:
            out[f"grad:{n}"] = params[n].grad.detach().clone()
        optimizer.step()
    for k, v in loss_dict.items():
        out[k] = v.detach()
    out["loss"] = losses.detach()
    for n in chosen:
        out[f"after_step:{n}"] = params[n].detach().clone()
    return out


def adapter(yaml):
    """(REFERENCE, MODE, BATCH_SIZE, DTYPE, NOTES, compute) of the adapter for `yaml`."""
    reference = ("torchbenchmark/util/framework/detectron2/model_factory.py: detectron2 c470ca3"
                 f" build_model(COCO-Detection/{yaml}), build_optimizer, train(), eval()")
    return reference, "train", BATCH_SIZE, DTYPE, notes(yaml), lambda root: compute(yaml)
