"""The golden check the detectron2 Mask R-CNN adapters share: detectron2's own
GeneralizedRCNN (c470ca3, from a source checkout: detectron2_env.py, set
DETECTRON2_ROOT), either from a COCO-InstanceSegmentation yaml as TorchBench's
Detectron2Model builds it (BASE_LR 0.001, IMS_PER_BATCH 1, build_optimizer)
or, for detectron2_maskrcnn, from the LazyConfig common/models/mask_rcnn_fpn.py
with torch.optim.SGD(params, 0.0) as that model's own wrapper does. The C++
twin is GoldenOutputs() in models/vision/detectron2_maskrcnn.cpp.

Everything of detectron2_rcnn_common.py (the Faster R-CNN check: fill by
name, constants restored, the same weight multipliers, coco_synthetic image 0
subsampled by 2 with its boxes x0.5, height/width 480x640) plus the masks:
the gt polygons are scaled by 0.5 too (float64, as the mapper's
ResizeTransform does), and the file records

  eval:mask_probs         roi_heads' pred_masks (sigmoid of the predicted
                          class's 28x28 / 14x14 logits) in eval mode
  eval:pred_mask_areas    pixels of each pasted 480x640 mask (model([input]))
  loss_mask               with the other losses (one Train step)
  grad:/after_step:roi_heads.mask_head.predictor.*   besides the
                          Faster R-CNN parameters
C4 configs shrink the regions as detectron2_rcnn_common.SHRUNK_OVERRIDES
(applied by its _build; GoldenOutputs() sets the same values).
"""

import detectron2_rcnn_common as rcnn
import fill

BATCH_SIZE = rcnn.BATCH_SIZE
DTYPE = rcnn.DTYPE
SEED = rcnn.SEED


def notes(source):
    return [
        f"detectron2 c470ca3 GeneralizedRCNN from {source}",
        "filled by name; pixel_mean/pixel_std and cell_anchors restored to their values;"
        " rpn/box predictor weights scaled as detectron2_rcnn_common.SCALES",
        "input: coco_synthetic image 0 subsampled by 2 (240x320, BGR float), its 7 gt boxes"
        " and polygons x0.5, height/width 480x640",
        "eval:* from the model in eval mode under no_grad; loss*, grad:*, after_step:* from one"
        " train step after torch.manual_seed(0)",
    ] + ([f"C4 only, to keep the test short: {rcnn.SHRUNK_OVERRIDES}"] if "_C4_" in source else [])


def _build_lazy():
    import os

    import torch

    import detectron2_env

    d2 = detectron2_env.setup()
    from detectron2.config import LazyConfig, instantiate

    path = os.path.join(os.path.dirname(d2.__file__), os.pardir, "configs", "common", "models",
                        "mask_rcnn_fpn.py")
    model = instantiate(LazyConfig.load(path).model)
    model.to("cpu")
    return model, lambda: torch.optim.SGD(model.parameters(), 0.0)


def _restore_lazy_constants(model):
    import torch

    with torch.no_grad():
        model.pixel_mean.copy_(torch.tensor([103.530, 116.280, 123.675]).view(-1, 1, 1))
        model.pixel_std.copy_(torch.tensor([1.0, 1.0, 1.0]).view(-1, 1, 1))
        ag = model.proposal_generator.anchor_generator
        for i, buf in enumerate(ag.cell_anchors):
            buf.copy_(ag.generate_cell_anchors([32 * 2 ** i], [0.5, 1.0, 2.0]))


def golden_input():
    import numpy as np

    import coco_synthetic
    from detectron2.structures import PolygonMasks

    inp = rcnn.golden_input()
    info = coco_synthetic.image_info(0)
    polys = [[np.asarray(p, dtype=np.float64) * 0.5 for p in a["segmentation"]]
             for a in info["annotations"]]
    inp["instances"].gt_masks = PolygonMasks(polys)
    return inp


def record_params(model):
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    chosen = rcnn.record_params(model)
    chosen += [n for n in names if n.startswith("roi_heads.mask_head.predictor.")]
    return chosen


def compute(yaml=None):
    """yaml: a COCO-InstanceSegmentation yaml; None for the LazyConfig model."""
    import torch

    if yaml is None:
        model, make_optimizer = _build_lazy()
        restore = lambda: _restore_lazy_constants(model)  # noqa: E731
    else:
        cfg, model = rcnn._build(f"COCO-InstanceSegmentation/{yaml}")
        from detectron2.solver import build_optimizer

        make_optimizer = lambda: build_optimizer(cfg, model)  # noqa: E731
        restore = lambda: rcnn._restore_constants(cfg, model)  # noqa: E731
    from detectron2.utils.events import EventStorage

    fill.deterministic_fill(model)
    restore()
    rcnn._scale_weights(model)
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
        instances, _ = model.roi_heads(images, features, proposals, None)
        out["eval:mask_probs"] = instances[0].pred_masks
        result = model([inp])[0]["instances"]
        out["eval:pred_boxes"] = result.pred_boxes.tensor
        out["eval:scores"] = result.scores
        out["eval:pred_classes"] = result.pred_classes
        out["eval:pred_mask_areas"] = result.pred_masks.flatten(1).sum(1).double()

    model.train()
    optimizer = make_optimizer()
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


def adapter(yaml=None):
    """(REFERENCE, MODE, BATCH_SIZE, DTYPE, NOTES, compute) of the adapter for a
    COCO-InstanceSegmentation `yaml`, or for detectron2_maskrcnn (None)."""
    if yaml is None:
        reference = ("torchbenchmark/models/detectron2_maskrcnn/__init__.py: detectron2 c470ca3"
                     " instantiate(common/models/mask_rcnn_fpn.py model), torch.optim.SGD(lr=0),"
                     " train(), eval()")
        source = ("the LazyConfig common/models/mask_rcnn_fpn.py (freeze_at 0), torch.optim.SGD("
                  "params, 0.0) (one loop iteration of train())")
    else:
        reference = ("torchbenchmark/util/framework/detectron2/model_factory.py: detectron2 c470ca3"
                     f" build_model(COCO-InstanceSegmentation/{yaml}), build_optimizer, train(), eval()")
        source = (f"COCO-InstanceSegmentation/{yaml}, TorchBench's setup() (BASE_LR 0.001,"
                  " IMS_PER_BATCH 1) and build_optimizer")
    return reference, "train", BATCH_SIZE, DTYPE, notes(source), lambda root: compute(yaml)
