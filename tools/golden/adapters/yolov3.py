"""yolov3: TorchBench's ultralytics YOLOv3-SPP through its own Model.eval() and Model.train()."""

import os
import pathlib

import fill
import reference
import stand_ins

MODEL = "yolov3"
REFERENCE = ("torchbenchmark/models/yolov3: Darknet(cfg/yolov3-spp.cfg), non_max_suppression,"
             " compute_loss, build_targets, SGD groups with burn-in, ModelEMA, Model.eval,"
             " Model.train")
MODE = "train"
BATCH_SIZE = 2
DTYPE = "float64"
# Multiples of 32; non-square for Eval as 384x512 is, square for Train as 416 is.
EVAL_HEIGHT, EVAL_WIDTH = 64, 96
TRAIN_SIZE = 64
TARGETS_PER_IMAGE = 4
NOTES = [
    "run in float64 (torch.set_default_dtype(torch.float64) while the reference builds and"
    " runs, Tensor.float made Tensor.double): 75 BatchNorm'd layers and NMS's thresholds;"
    " weights filled in float32, then converted",
    "coco128 is not bundled: Model.__init__ reads a two-image stand-in data set written to a"
    " temporary folder (its DATA_DIR), and the prefetched batch it made is replaced by filled"
    " images and targets; numpy's removed np.int is given back as int for the data set code",
    f"eval: batch {BATCH_SIZE}, images (u*0.5+0.5) at {EVAL_HEIGHT}x{EVAL_WIDTH} instead of"
    " rand(B, 3, 384, 512); eval_output, eval_p.<i>: Model.eval()'s outputs (inference boxes"
    " and the three raw YOLO maps); eval_detections.<i>: non_max_suppression's kept rows per"
    " image (conf 0.3, iou 0.6, merge on)",
    f"train: batch {BATCH_SIZE}, train_images integers in [0, 256) as uint8 at"
    f" {TRAIN_SIZE}x{TRAIN_SIZE}; {TARGETS_PER_IMAGE} targets per image: classes"
    " train_classes in [0, 80), centres train_xy (u*0.45+0.5), sizes train_wh (u*0.2+0.25)",
    "output.<i>: the first train() call's three YOLO maps; loss.giou, loss.obj, loss.cls, loss:"
    " compute_loss's items (before the batch/64 scaling); grad:*: gradients when the SGD step"
    " starts; after_step:*, ema:*: parameters and the EMA after the call (the EMA's copy is"
    " filled as the model is); after_2_steps:*: parameters after a second call (momentum)",
]
EDGES = ("module_list.0.Conv2d.weight", "module_list.0.BatchNorm2d.weight",
         "module_list.0.BatchNorm2d.bias", "module_list.112.Conv2d.weight",
         "module_list.112.Conv2d.bias")


def _write_data_set(folder):
    """A two-image stand-in for coco128, enough for the reference's data set code."""
    import os

    import cv2
    import numpy as np

    images = os.path.join(folder, "images", "train2017")
    labels = os.path.join(folder, "labels", "train2017")
    os.makedirs(images)
    os.makedirs(labels)
    for i in range(2):
        cv2.imwrite(os.path.join(images, f"{i}.jpg"), np.full((96, 128, 3), 100, np.uint8))
        with open(os.path.join(labels, f"{i}.txt"), "w") as f:
            f.write("0 0.5 0.5 0.4 0.4\n")
    with open(os.path.join(folder, "coco.names"), "w") as f:
        f.write("\n".join(f"c{i}" for i in range(80)) + "\n")
    return images


def compute(root):
    import os
    import pathlib
    import tempfile

    import numpy as np
    import torch

    # __init__.py asserts at import that coco128 was downloaded; its path is
    # replaced (DATA_DIR) before anything reads it.
    exists = os.path.exists
    os.path.exists = lambda p: str(p).endswith("coco128") or exists(p)
    try:
        package = reference.load_model_package(
            root, MODEL, absent=("torch.utils.tensorboard",))
    finally:
        os.path.exists = exists
    model_dir = pathlib.Path(package.__file__).parent
    results = {}
    default_dtype = torch.get_default_dtype()
    float_cast = torch.Tensor.float
    had_int = hasattr(np, "int")
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as folder:
        images = _write_data_set(folder)
        # yolo_train.py reads the .data file's paths relative to its own folder.
        relative = os.path.relpath(images, model_dir)
        with open(os.path.join(folder, "coco128.data"), "w") as f:
            f.write(f"classes=80\ntrain={relative}\nvalid={relative}\n"
                    f"names={folder}/coco.names\n")
        package.DATA_DIR = folder
        np.int = int
        torch.set_default_dtype(torch.float64)
        torch.Tensor.float = torch.Tensor.double
        os.chdir(folder)  # the reference globs and deletes *_batch*.jpg in the cwd
        try:
            _eval(package, results)
            _train(package, results)
        finally:
            os.chdir(cwd)
            torch.Tensor.float = float_cast
            torch.set_default_dtype(default_dtype)
            if not had_int:
                del np.int
    assert all(torch.isfinite(v).all() for v in results.values())
    return results


def _eval(package, results):
    import torch

    model = package.Model(test="eval", device="cpu", batch_size=BATCH_SIZE)
    _fill(model.model)
    images = fill.deterministic_tensor("images", (BATCH_SIZE, 3, EVAL_HEIGHT, EVAL_WIDTH),
                                       offset=0.5, scale=0.5).double()
    model.example_inputs = (images,)
    detections = []
    nms = package.non_max_suppression

    def recorded_nms(*args, **kwargs):
        detections.append(nms(*args, **kwargs))
        return detections[-1]

    package.non_max_suppression = recorded_nms
    try:
        with torch.no_grad():
            out = model.eval()
    finally:
        package.non_max_suppression = nms
    results["eval_output"] = out[0].detach().clone()
    for i, p in enumerate(out[1:]):
        results[f"eval_p.{i}"] = p.detach().clone()
    for i, d in enumerate(detections[0]):
        results[f"eval_detections.{i}"] = (torch.zeros(0, 6) if d is None else d).clone()


def _train(package, results):
    import torch
    from torch.optim.optimizer import register_optimizer_step_pre_hook

    from torchbenchmark.models.yolov3 import yolo_train

    model = package.Model(test="train", device="cpu", batch_size=BATCH_SIZE)
    net = model.model
    loop = model.training_loop
    ema = loop.__closure__[loop.__code__.co_freevars.index("ema")].cell_contents
    for m in (net, ema.ema):
        _fill(m)
    images = fill.deterministic_long("train_images", (BATCH_SIZE, 3, TRAIN_SIZE, TRAIN_SIZE),
                                     0, 256).to(torch.uint8)
    n = BATCH_SIZE * TARGETS_PER_IMAGE
    targets = torch.zeros(n, 6)
    targets[:, 0] = torch.arange(BATCH_SIZE).repeat_interleave(TARGETS_PER_IMAGE)
    targets[:, 1] = fill.deterministic_long("train_classes", (n,), 0, 80).double()
    targets[:, 2:4] = fill.deterministic_tensor("train_xy", (n, 2), offset=0.5,
                                                scale=0.45).double()
    targets[:, 4:6] = fill.deterministic_tensor("train_wh", (n, 2), offset=0.25,
                                                scale=0.2).double()
    batch = model.example_inputs[0]
    model.example_inputs[0] = (images, targets) + tuple(batch[2:])

    outputs, losses = [], []
    original_forward = net.forward

    def forward(*args, **kwargs):
        outputs.append(original_forward(*args, **kwargs))
        return outputs[-1]

    compute_loss = yolo_train.compute_loss

    def recorded_loss(*args, **kwargs):
        losses.append(compute_loss(*args, **kwargs))
        return losses[-1]

    def on_step(optimizer, args, kwargs):
        if not any(k.startswith("grad:") for k in results):
            params = dict(net.named_parameters())
            for name in EDGES:
                results["grad:" + name] = params[name].grad.detach().clone()

    net.forward = forward
    yolo_train.compute_loss = recorded_loss
    handle = register_optimizer_step_pre_hook(on_step)
    try:
        model.train()
        _record(net, "after_step:", results)
        _record(ema.ema, "ema:", results)
        buffers = dict(net.named_buffers())
        results["after_step:module_list.0.BatchNorm2d.running_mean"] = (
            buffers["module_list.0.BatchNorm2d.running_mean"].detach().clone())
        model.train()
        _record(net, "after_2_steps:", results)
    finally:
        del net.forward
        yolo_train.compute_loss = compute_loss
        handle.remove()
    if len(outputs) != 2 or len(losses) != 2:
        raise RuntimeError(f"expected 2 forwards and losses, got {len(outputs)}, {len(losses)}")
    for i, p in enumerate(outputs[0]):
        results[f"output.{i}"] = p.detach().clone()
    items = losses[0][1]
    for i, key in enumerate(("loss.giou", "loss.obj", "loss.cls", "loss")):
        results[key] = items[i].clone()


def _fill(module):
    """The float32 fill the C++ test makes, held in float64."""
    import torch

    fill.deterministic_fill(module)
    with torch.no_grad():
        for t in list(module.parameters()) + list(module.buffers()):
            if t.is_floating_point():
                t.copy_(t.to(torch.float32).to(torch.float64))


def _record(module, prefix, results):
    params = dict(module.named_parameters())
    for name in EDGES:
        results[prefix + name] = params[name].detach().clone()


def _write_coco128(folder, model_dir):
    """coco128 under `folder`: images/train2017/<id>.jpg (coco_synthetic
    images, COCO's sizes), labels/train2017/<id>.txt (class, centre and size
    normalised, YOLO's format), coco.names and coco128.data, whose train and
    valid paths are relative to the model's folder as yolo_train reads them."""
    import numpy as np
    from PIL import Image

    import coco_synthetic

    images = pathlib.Path(folder) / "images" / "train2017"
    labels = pathlib.Path(folder) / "labels" / "train2017"
    images.mkdir(parents=True)
    labels.mkdir(parents=True)
    for index in range(128):
        info = coco_synthetic.image_info(index % coco_synthetic.NUM_IMAGES)
        pixels = coco_synthetic.image_pixels(index % coco_synthetic.NUM_IMAGES)
        stem = f"{index + 1:012d}"
        Image.fromarray(np.ascontiguousarray(pixels)).save(images / f"{stem}.jpg", quality=90)
        w, h = info["width"], info["height"]
        rows = []
        for a in info["annotations"]:
            x, y, bw, bh = a["bbox"]
            rows.append(f"{a['contiguous_label']} {(x + bw / 2) / w:.6f} {(y + bh / 2) / h:.6f}"
                        f" {bw / w:.6f} {bh / h:.6f}")
        (labels / f"{stem}.txt").write_text("\n".join(rows) + "\n")
    (pathlib.Path(folder) / "coco.names").write_text("\n".join(stand_ins.coco_names()) + "\n")
    relative = os.path.relpath(images, model_dir)
    (pathlib.Path(folder) / "coco128.data").write_text(
        f"classes=80\ntrain={relative}\nvalid={relative}\nnames={folder}/coco.names\n")


def prepare(root, name, mode, batch_size, device, stack):
    import numpy as np

    data = stand_ins.temporary_folder(stack, "tb_coco128_")
    tb_data = pathlib.Path(root) / "torchbenchmark" / "data" / ".data" / "coco128"
    stand_ins.exists_also(stack, tb_data)  # asserted at import; DATA_DIR is the stand-in below
    # SummaryWriter: imported by yolo_train, whose writer is commented out.
    package = reference.load_model_package(root, name, absent=("torch.utils.tensorboard",))
    _write_coco128(data, pathlib.Path(package.__file__).parent)
    stack.enter_context(stand_ins.attribute(package, "DATA_DIR", str(data)))
    # numpy 2 removed np.int (int's alias), which the data set code and
    # labels_to_class_weights call while the Model is built.
    if not hasattr(np, "int"):
        stack.enter_context(stand_ins.attribute(np, "int", int))
    # yolo_train globs hyp*.txt and deletes *_batch*.jpg and results.txt in
    # the working directory: the temporary folder's, not the caller's.
    cwd = os.getcwd()
    os.chdir(data)
    stack.callback(os.chdir, cwd)
    return package.Model(test=mode, device=device, batch_size=batch_size)
