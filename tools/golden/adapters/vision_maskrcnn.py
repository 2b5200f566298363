"""vision_maskrcnn: torchvision's maskrcnn_resnet50_fpn through TorchBench's own Model.eval() and
Model.train() and its coco_utils.ConvertCocoPolysToMask."""

import pathlib

import fill
import reference
import stand_ins

MODEL = "vision_maskrcnn"
REFERENCE = ("torchbenchmark/models/vision_maskrcnn: torchvision 0.29.1 maskrcnn_resnet50_fpn"
             " (COCO_V1 architecture), ConvertCocoPolysToMask, Model.eval, Model.train")
MODE = "train"
BATCH_SIZE = 2
DTYPE = "float64"
MIN_SIZE = 192
MAX_SIZE = 256
TRAIN_SEED = 1234
EDGES = ("backbone.body.layer2.0.conv1.weight", "backbone.fpn.inner_blocks.0.0.weight",
         "rpn.head.conv.0.0.weight", "roi_heads.box_head.fc6.bias",
         "roi_heads.box_predictor.cls_score.weight",
         "roi_heads.mask_predictor.mask_fcn_logits.weight")
NOTES = [
    "the model is what maskrcnn_resnet50_fpn(weights=COCO_V1) builds, without the download:"
    " resnet50(norm_layer=FrozenBatchNorm2d), _resnet_fpn_extractor(backbone, 3),"
    " MaskRCNN(backbone, num_classes=91), overwrite_eps(model, 0.0); Model.__init__ is"
    " bypassed (it needs COCO and the weights), its optimizer is built as it builds it and"
    " data_loader holds the one batch",
    "weights: the deterministic fill (float32), then model.double(); with it Eval keeps 100"
    " detections per image (scores 0.33..0.68), so postprocessing and the mask head run",
    f"inputs: coco_synthetic images 0..{BATCH_SIZE - 1} through ConvertCocoPolysToMask"
    " (pycocotools masks), images converted to float64; the transform's min_size/max_size"
    f" set to {MIN_SIZE}/{MAX_SIZE} (800/1333 is too slow for a unit test)",
    "eval.<i>.<boxes|labels|scores|masks>: Model.eval()'s outputs per image",
    f"torch.manual_seed({TRAIN_SEED}) before Model.train() (torch_choice and the samplers'"
    " randperm draw from it); loss_*: its loss dict, loss: their sum; grad:*: gradients when"
    " the SGD step starts; after_step:*: parameters after the call",
]


def _load_images(package):
    import numpy as np
    import PIL.Image
    import torch

    import coco_synthetic

    convert = package.coco_utils.ConvertCocoPolysToMask()
    images, targets = [], []
    for index in range(BATCH_SIZE):
        info = coco_synthetic.image_info(index)
        anno = []
        for a in info["annotations"]:
            anno.append({"image_id": index, "iscrowd": a["iscrowd"], "bbox": a["bbox"],
                         "category_id": a["category_id"], "segmentation": a["segmentation"],
                         "area": a["area"]})
        pil = PIL.Image.fromarray(np.ascontiguousarray(coco_synthetic.image_pixels(index)))
        image, target = convert(pil, anno)
        images.append(image.to(torch.float64))
        targets.append(target)
    return images, targets


def compute(root):
    import os

    import torch
    from torch.optim.optimizer import register_optimizer_step_pre_hook
    from torchvision.models import resnet50
    from torchvision.models.detection._utils import overwrite_eps
    from torchvision.models.detection.backbone_utils import _resnet_fpn_extractor
    from torchvision.models.detection.mask_rcnn import MaskRCNN
    from torchvision.ops import misc as misc_nn_ops

    exists = os.path.exists
    os.path.exists = lambda p: str(p).endswith("coco2017-minimal") or exists(p)
    try:
        package = reference.load_model_package(root, MODEL)
    finally:
        os.path.exists = exists

    backbone = resnet50(weights=None, norm_layer=misc_nn_ops.FrozenBatchNorm2d)
    backbone = _resnet_fpn_extractor(backbone, 3)
    net = MaskRCNN(backbone, num_classes=91)
    overwrite_eps(net, 0.0)
    fill.deterministic_fill(net)
    net.double()
    net.transform.min_size = (MIN_SIZE,)
    net.transform.max_size = MAX_SIZE

    model = package.Model.__new__(package.Model)
    model.model = net
    model.device = "cpu"
    model.NUM_OF_BATCHES = 1
    params = [p for p in net.parameters() if p.requires_grad]
    model.optimizer = torch.optim.SGD(params, lr=0.02, momentum=0.9, weight_decay=1e-4)
    images, targets = _load_images(package)
    model.data_loader = [(images, targets)]

    results = {}
    out = model.eval()
    keys = ("boxes", "labels", "scores", "masks")
    if len(out) != 4 * BATCH_SIZE:
        raise RuntimeError(f"eval returned {len(out)} tensors")
    for i, value in enumerate(out):
        results[f"eval.{i // 4}.{keys[i % 4]}"] = value.detach().clone()

    loss_dicts = []
    forward = net.forward

    def recorded_forward(*args, **kwargs):
        loss_dicts.append(forward(*args, **kwargs))
        return loss_dicts[-1]

    def on_step(optimizer, args, kwargs):
        named = dict(net.named_parameters())
        for name in EDGES:
            results["grad:" + name] = named[name].grad.detach().clone()

    net.forward = recorded_forward
    handle = register_optimizer_step_pre_hook(on_step)
    torch.manual_seed(TRAIN_SEED)
    try:
        model.train()
    finally:
        handle.remove()
        del net.forward
    loss_dict = loss_dicts[0]
    for key, value in loss_dict.items():
        results[key] = value.detach().clone()
    results["loss"] = sum(v.detach() for v in loss_dict.values())
    named = dict(net.named_parameters())
    for name in EDGES:
        results["after_step:" + name] = named[name].detach().clone()
    assert all(torch.isfinite(v.double()).all() for v in results.values())
    return results


def prepare(root, name, mode, batch_size, device, stack):
    import torchvision
    from torchvision.models import _api
    from torchvision.models.detection import MaskRCNN_ResNet50_FPN_Weights

    data = stand_ins.temporary_folder(stack, "tb_coco2017_minimal_")
    stand_ins.write_coco(data)
    tb_data = pathlib.Path(root) / "torchbenchmark" / "data" / ".data" / "coco2017-minimal"
    stand_ins.exists_also(stack, tb_data)  # asserted at import; DATA_DIR is the stand-in below
    package = reference.load_model_package(root, name)
    stack.enter_context(stand_ins.attribute(package, "DATA_DIR", str(data)))
    builder = torchvision.models.detection.maskrcnn_resnet50_fpn
    load = _api.load_state_dict_from_url

    def coco_weights(url, *args, **kwargs):
        # Stands in for the COCO_V1 download: the same architecture's own
        # initialisation (its BatchNorm2d's initial weight 1, bias 0,
        # mean 0, var 1 are FrozenBatchNorm2d's; num_batches_tracked is
        # dropped by FrozenBatchNorm2d), loaded as the weights are.
        if url != MaskRCNN_ResNet50_FPN_Weights.COCO_V1.url:
            return load(url, *args, **kwargs)
        return builder(weights=None, weights_backbone=None, num_classes=91).state_dict()

    stack.enter_context(stand_ins.attribute(_api, "load_state_dict_from_url", coco_weights))
    model = package.Model(test=mode, device=device, batch_size=batch_size)
    if mode == "train":
        images, _ = next(iter(model.data_loader))
        _calibrated_stand_in(model.model, images)
    return model


def _calibrated_stand_in(model, images, residual_scale=0.2):
    """The port's Train stand-in for COCO_V1 (models/vision/vision_maskrcnn.cpp):
    each bottleneck's last FrozenBatchNorm2d scale (bn3.weight) at 0.2, then
    every FrozenBatchNorm2d's running mean and (biased) variance set to its
    input's per-channel statistics on this batch, in forward order. From the
    architecture's own initialisation (FrozenBatchNorm an identity, an
    unnormalised ResNet-50) torchvision's own train() at lr 0.02 reaches NaN
    losses by the third step and goes on timing NaN boxes."""
    import torch
    from torchvision.ops.misc import FrozenBatchNorm2d

    def calibrate(module, inputs):
        x = inputs[0]
        module.running_mean.copy_(x.mean((0, 2, 3)))
        module.running_var.copy_(x.var((0, 2, 3), unbiased=False))

    stand_ins.scale_residual_branches(model, "bn3.weight", residual_scale)
    with torch.no_grad():
        hooks = [m.register_forward_pre_hook(calibrate) for m in model.modules()
                 if isinstance(m, FrozenBatchNorm2d)]
        training = model.training
        model.eval()  # the transform's training resize draws from the RNG
        try:
            image_list, _ = model.transform([i.float() for i in images])
            model.backbone(image_list.tensors)
        finally:
            model.train(training)
            for h in hooks:
                h.remove()
