"""timm_efficientdet: effdet tf_efficientdet_d1 in DetBenchTrain / DetBenchPredict.

effdet is TorchBench's pin, rwightman/efficientdet-pytorch at 79d26d8 (its
requirements.txt), with TorchBench's effdet.patch applied in memory (the
one_hot index cast; the other hunks touch only data set and evaluator code).
It runs from a source checkout: TORCHBENCH_EFFDET_SRC, or else
<reference-root>/../src/efficientdet-pytorch. It needs omegaconf (pinned in
tools/requirements.txt); effdet/__init__ imports its COCO evaluator, which
imports pycocotools: that module is stubbed (the evaluator is never built).
The checkout's effdet/ is imported as the package `effdet` with importlib
(source_package.py), and TorchBench's args.py is loaded from its file: sys.path
is left as it is.
The optimizer and scheduler are built as TorchBench's __init__ builds them,
from its args.py defaults.
"""

import os
import pathlib
import sys
import types

import fill
import source_package

MODEL = "timm_efficientdet"
REFERENCE = ("effdet@79d26d8 create_model('tf_efficientdet_d1', bench_task='train'|'predict'),"
             " AnchorLabeler, timm create_optimizer/create_scheduler from"
             " torchbenchmark/models/timm_efficientdet/args.py, train.py train_epoch")
MODE = "train"
BATCH_SIZE = 2
DTYPE = "float64"
IMAGE_SIZE = 128
CONTENT = IMAGE_SIZE * 3 // 4
OBJECTS_PER_IMAGE = (4, 7, 12, 2, 9, 6, 3, 15)
RECORDED = (
    "model.backbone.conv_stem.weight",
    "model.backbone.blocks.6.1.conv_pwl.weight",
    "model.fpn.cell.0.fnode.4.combine.edge_weights",
    "model.fpn.cell.3.fnode.7.after_combine.conv.conv_pw.weight",
    "model.class_net.predict.conv_pw.bias",
    "model.box_net.predict.conv_pw.weight",
)
NOTES = [
    f"config image_size {IMAGE_SIZE}x{IMAGE_SIZE} instead of 640 (same modules; anchors for"
    f" {IMAGE_SIZE}); run in float64 (the bench .double(), Tensor.float made Tensor.double);"
    " weights filled in float32, then converted; the filled anchors.boxes buffer is"
    " regenerated in float32 (the scripted detection code casts to float32 anyway); drop path off (every DropPath's drop_prob 0)",
    f"images: u = fill 'images' (float64, 127.5 + 127.5 u: 0..255) at {IMAGE_SIZE}x{IMAGE_SIZE}, (u - 255*mean) /"
    f" (255*std) with ImageNet mean/std, rows from {CONTENT} on set to 0 (mean padding)",
    "targets: image i has OBJECTS_PER_IMAGE[i % 8] boxes from fill 'gt_boxes' (float64 0.5 + 0.5 u in [0, 1),"
    " centres in the middle 80%, sides 4% + 50% u^2 of the content), clipped, as float32;"
    " classes fill integers 'gt_classes' in [1, 81); AnchorLabeler(match_threshold=0.5) in float32"
    ".label_anchors(filter_valid=False) per image as the loader's collate calls it, labels cast"
    " to float32 as TorchBench's prefetch() does",
    "eval_detections: a fresh filled DetBenchPredict in training mode (TorchBench never calls"
    " .eval()) with img_info img_scale 1, img_size (W, H content)",
    "train: one train_epoch step: forward, loss, zero_grad, backward, clip_grad_norm_(10), SGD"
    " (lr 1e-4 set by the cosine scheduler's warm-up), scheduler.step_update; class_out.*,"
    " box_out.*: the network's outputs at levels 0 and 4; grad:* before clipping; after_step:*",
]


def _effdet_src(root):
    src = os.environ.get("TORCHBENCH_EFFDET_SRC")
    if src:
        return pathlib.Path(src)
    return pathlib.Path(root).resolve().parent / "src" / "efficientdet-pytorch"


def _import_effdet(root):
    for name in ("pycocotools", "pycocotools.coco", "pycocotools.cocoeval"):
        if name not in sys.modules:
            sys.modules[name] = types.ModuleType(name)
    sys.modules["pycocotools.coco"].COCO = object
    sys.modules["pycocotools.cocoeval"].COCOeval = object
    src = _effdet_src(root)
    if not (src / "effdet" / "__init__.py").exists():
        raise RuntimeError(f"effdet source not found at {src} (set TORCHBENCH_EFFDET_SRC)")
    import torch

    effdet = source_package.import_package("effdet", src / "effdet")
    from effdet import loss as effdet_loss

    # TorchBench's effdet.patch: the one-hot scatter index cast to int64.
    def one_hot(x, num_classes: int):
        x_non_neg = (x >= 0).unsqueeze(-1)
        onehot = torch.zeros(x.shape + (num_classes,), device=x.device, dtype=torch.float32)
        ind = (x.unsqueeze(-1) * x_non_neg).to(dtype=torch.int64)
        return onehot.scatter(-1, ind, 1) * x_non_neg

    effdet_loss.one_hot = one_hot
    return effdet


def _args(root):
    folder = pathlib.Path(root) / "torchbenchmark" / "models" / "timm_efficientdet"
    tb_args = source_package.load_module("args", folder / "args.py")
    argv = sys.argv
    sys.argv = [argv[0]]
    try:
        return tb_args.get_args()
    finally:
        sys.argv = argv


def _build(effdet, task):
    import torch
    from effdet.anchors import Anchors
    from timm.layers import DropPath

    bench = effdet.create_model("tf_efficientdet_d1", bench_task=task, pretrained=False,
                                pretrained_backbone=False, image_size=(IMAGE_SIZE, IMAGE_SIZE),
                                bench_labeler=False)
    for m in bench.modules():
        if isinstance(m, DropPath):
            m.drop_prob = 0.0
    fill.deterministic_fill(bench)
    bench.double()
    # float32 anchors: the scripted _batch_detection casts box outputs and
    # scores to float32 (.float() there is TorchScript's), and nms needs the
    # boxes' dtype to equal the scores'.
    bench.anchors.boxes = Anchors.from_config(bench.config).boxes.to(torch.float32)
    return bench


def _inputs(effdet):
    import torch
    from effdet.anchors import Anchors, AnchorLabeler

    pixels = fill.deterministic_tensor("images", (BATCH_SIZE, 3, IMAGE_SIZE, IMAGE_SIZE),
                                       dtype=torch.float64, offset=127.5, scale=127.5)
    mean = torch.tensor([0.485 * 255, 0.456 * 255, 0.406 * 255], dtype=torch.float64)
    std = torch.tensor([0.229 * 255, 0.224 * 255, 0.225 * 255], dtype=torch.float64)
    images = (pixels - mean.view(1, 3, 1, 1)) / std.view(1, 3, 1, 1)
    images[:, :, CONTENT:, :] = 0
    counts = [OBJECTS_PER_IMAGE[i % 8] for i in range(BATCH_SIZE)]
    u = fill.deterministic_tensor("gt_boxes", (sum(counts), 4), dtype=torch.float64,
                                  offset=0.5, scale=0.5)
    cy = CONTENT * (0.1 + 0.8 * u[:, 0])
    cx = IMAGE_SIZE * (0.1 + 0.8 * u[:, 1])
    bh = CONTENT * (0.04 + 0.5 * u[:, 2] * u[:, 2])
    bw = IMAGE_SIZE * (0.04 + 0.5 * u[:, 3] * u[:, 3])
    boxes = torch.stack([(cy - bh / 2).clamp(0, CONTENT), (cx - bw / 2).clamp(0, IMAGE_SIZE),
                         (cy + bh / 2).clamp(0, CONTENT), (cx + bw / 2).clamp(0, IMAGE_SIZE)],
                        1).float()
    classes = fill.deterministic_long("gt_classes", (sum(counts),), 1, 81).float()
    config = effdet.get_efficientdet_config("tf_efficientdet_d1")
    config.image_size = (IMAGE_SIZE, IMAGE_SIZE)
    labeler = AnchorLabeler(Anchors.from_config(config), config.num_classes, match_threshold=0.5)
    target = {}
    start = 0
    per_level = None
    positives = []
    for n in counts:
        cls_t, box_t, num_pos = labeler.label_anchors(
            boxes[start:start + n], classes[start:start + n], filter_valid=False)
        start += n
        if per_level is None:
            per_level = [([], []) for _ in cls_t]
        for level, (c, b) in enumerate(zip(cls_t, box_t)):
            per_level[level][0].append(c)
            per_level[level][1].append(b)
        positives.append(num_pos)
    for level, (c, b) in enumerate(per_level):
        target[f"label_cls_{level}"] = torch.stack(c).to(torch.float32)
        target[f"label_bbox_{level}"] = torch.stack(b).to(torch.float32)
    target["label_num_positives"] = torch.stack(positives).to(torch.float32)
    return images, target


def compute(root):
    import torch

    effdet = _import_effdet(root)
    from timm.optim import create_optimizer
    from timm.scheduler import create_scheduler

    args = _args(root)
    # The loader labels in float32 (BoxList accepts nothing else).
    images, target = _inputs(effdet)
    float_cast = torch.Tensor.float
    torch.Tensor.float = torch.Tensor.double
    results = {}
    try:
        for level in (0, 4):
            results[f"label_cls_{level}"] = target[f"label_cls_{level}"].clone()
            results[f"label_bbox_{level}"] = target[f"label_bbox_{level}"].clone()
        results["label_num_positives"] = target["label_num_positives"].clone()

        predict = _build(effdet, "predict")
        predict.train()
        img_info = {"img_scale": torch.ones(BATCH_SIZE, dtype=torch.float32),
                    "img_size": torch.tensor([[IMAGE_SIZE, CONTENT]] * BATCH_SIZE,
                                             dtype=torch.float32)}
        with torch.no_grad():
            results["eval_detections"] = predict(images, img_info=img_info).clone()

        bench = _build(effdet, "train")
        optimizer = create_optimizer(args, bench)
        scheduler, _ = create_scheduler(args, optimizer)
        outputs = {}
        bench.model.register_forward_hook(lambda m, i, o: outputs.update(out=o))
        bench.train()
        output = bench(images, target)
        loss = output["loss"]
        loss.item()
        optimizer.zero_grad()
        loss.backward()
        class_out, box_out = outputs["out"]
        for level in (0, 4):
            results[f"class_out.{level}"] = class_out[level].detach().clone()
            results[f"box_out.{level}"] = box_out[level].detach().clone()
        for key in ("loss", "class_loss", "box_loss"):
            results[key] = output[key].detach().clone()
        params = dict(bench.named_parameters())
        for name in RECORDED:
            results[f"grad:{name}"] = params[name].grad.detach().clone()
        torch.nn.utils.clip_grad_norm_(bench.parameters(), args.clip_grad)
        optimizer.step()
        scheduler.step_update(num_updates=1, metric=loss.item())
        for name in RECORDED:
            results[f"after_step:{name}"] = params[name].detach().clone()
    finally:
        torch.Tensor.float = float_cast
    assert all(torch.isfinite(v).all() for v in results.values())
    return results


def prepare(root, name, mode, batch_size, device, stack):
    if device == "cpu":
        # TorchBench's Model raises this first thing on any device but cuda
        # (effdet's loader calls Tensor.cuda()).
        raise NotImplementedError("The original model code forces the use of CUDA.")
    raise RuntimeError("timm_efficientdet on cuda: not built here (no GPU to check its"
                       " coco2017-minimal loader, evaluator and pretrained-backbone stand-ins)")
