"""reference_env's stand-ins for the detection and source-tree models
(detectron2_*, vision_maskrcnn, yolov3, timm_efficientdet, DALLE2_pytorch,
doctr_*): see reference_env.py.

The COCO-based models read install.py's coco2017-minimal (coco_2017_val_100:
the first 100 val2017 images and their instances json) or coco128 (YOLO's 128
train2017 images with label files): both are written, synthetic, into a
temporary folder from coco_synthetic's images and annotations (COCO's image
sizes, 7 objects each, polygons), in the files and formats the models read.
"""

import contextlib
import json
import os
import pathlib
import sys
import tempfile
import types

import reference
from reference_env import _attribute

# model -> why TorchBench's Model cannot be built on this machine.
UNAVAILABLE = {}


# ------------------------------------------------------------ shared data

def _write_coco(folder, count=100):
    """coco2017-minimal's coco/ folder under `folder`: val2017/<id>.jpg and
    annotations/instances_val2017_100.json for `count` coco_synthetic images
    (its COCO category ids and names, polygons, areas, bboxes). Returns the
    coco/ folder."""
    import numpy as np
    from PIL import Image

    import coco_synthetic

    names = _coco_names()
    coco = pathlib.Path(folder) / "coco"
    images_dir = coco / "val2017"
    images_dir.mkdir(parents=True)
    (coco / "annotations").mkdir()
    images, annotations = [], []
    for index in range(count):
        info = coco_synthetic.image_info(index % coco_synthetic.NUM_IMAGES)
        image_id = index + 1
        file_name = f"{image_id:012d}.jpg"
        pixels = coco_synthetic.image_pixels(index % coco_synthetic.NUM_IMAGES)
        # PNG under the .jpg name the annotations use (PIL reads a file by its
        # content): lossless, so the model reads coco_synthetic's pixels, as
        # the C++ port does; JPEG's rounding would move scores near the test
        # threshold and change how many boxes the step goes on with.
        Image.fromarray(np.ascontiguousarray(pixels)).save(images_dir / file_name, format="PNG")
        images.append({"id": image_id, "file_name": file_name, "height": info["height"],
                       "width": info["width"]})
        for a in info["annotations"]:
            annotations.append({"id": len(annotations) + 1, "image_id": image_id,
                                "category_id": a["category_id"], "bbox": a["bbox"],
                                "segmentation": a["segmentation"], "area": a["area"],
                                "iscrowd": a["iscrowd"]})
    categories = [{"id": i, "name": names[k], "supercategory": ""}
                  for k, i in enumerate(coco_synthetic.COCO_CATEGORY_IDS)]
    with open(coco / "annotations" / "instances_val2017_100.json", "w") as f:
        json.dump({"images": images, "annotations": annotations, "categories": categories,
                   "info": {}, "licenses": []}, f)
    return coco


def _coco_names():
    """COCO's 80 thing names in category-id order (detectron2's metadata
    checks them against its builtin list): torchvision's COCO category list,
    indexed by category id."""
    import coco_synthetic
    from torchvision.models.detection import MaskRCNN_ResNet50_FPN_Weights

    names = MaskRCNN_ResNet50_FPN_Weights.COCO_V1.meta["categories"]
    return [names[i] for i in coco_synthetic.COCO_CATEGORY_IDS]


def _exists_also(stack, *paths):
    """os.path.exists answers True for `paths` too: the data folders the
    models assert at import, whose contents are read from the temporary
    stand-in instead."""
    exists = os.path.exists
    wanted = {os.path.normpath(str(p)) for p in paths}
    stack.enter_context(_attribute(os.path, "exists",
                                   lambda p: os.path.normpath(str(p)) in wanted or exists(p)))


def _temporary_folder(stack, prefix):
    return pathlib.Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=prefix)))


# -------------------------------------------------------------- detectron2

def _detectron2():
    import detectron2_env

    # A detectron2 source checkout at c470ca3: DETECTRON2_ROOT, as for the
    # golden files.
    return detectron2_env.setup()


def _pkg_resources(d2_root):
    """Stands in for pkg_resources (setuptools' is not installed), which
    detectron2.model_zoo imports for resource_filename: its configs/, which
    detectron2's setup.py links into the installed package, are the
    checkout's configs/."""
    module = types.ModuleType("pkg_resources")

    def resource_filename(package, resource):
        if package == "detectron2.model_zoo" and resource.startswith("configs"):
            return os.path.join(d2_root, resource)
        directory = os.path.dirname(sys.modules[package].__file__)
        return os.path.join(directory, resource)

    module.resource_filename = resource_filename
    return module


def _trained_weights(model):
    """Stands in for the trained model_final .pkl (not downloadable): the
    golden checks' deterministic fill on the parameters, with the RPN and box
    predictor scaled as detectron2_rcnn_common.SCALES, the buffers (pixel
    mean/std, cell anchors, FrozenBN's identity statistics) as built. The
    model's own initialisation is no stand-in: its MSRA-filled residual
    branches, with no normalisation behind FrozenBN, overflowed to inf in
    detectron2_fasterrcnn_r_101_c4's train step, and its near-uniform class
    scores (about 1/81) stay under the 0.05 test threshold, so eval would
    skip the work the trained model's detections and proposals cause (the
    C4 res5 head on every proposal, the mask head); the values do not change
    the step's shapes, layers or optimizer."""
    import torch

    import detectron2_rcnn_common
    import fill

    buffers = {name: b.clone() for name, b in model.named_buffers()}
    fill.deterministic_fill(model)
    with torch.no_grad():
        for name, b in model.named_buffers():
            b.copy_(buffers[name])
    detectron2_rcnn_common._scale_weights(model)


def _train_stand_in(model, residual_scale=0.2):
    """The Train stand-in for the trained .pkl, the port's own
    (StandInForCheckpoint in models/common/detectron2/generalized_rcnn.h):
    detectron2's initialisation with each bottleneck's last FrozenBN scaled,
    which keeps the features near the stem's scale as trained statistics do.
    _trained_weights' fill (made for eval to detect boxes) trains into inf
    within TorchBench's warm-up on r_101_fpn, the DC5 and the R-101 models
    (find_top_rpn_proposals: "Training has diverged"); a Train step's work is
    set by its sampling sizes, not by the weights' values."""
    _scale_residual_branches(model, "conv3.norm.weight", residual_scale)


def _scale_residual_branches(model, suffix, scale):
    """Each bottleneck's last frozen norm scale (the buffers named *suffix)
    at `scale`: a trained ResNet's residual branches are small next to their
    identity path."""
    import torch

    with torch.no_grad():
        for name, b in model.named_buffers():
            if name.endswith(suffix):
                b.fill_(scale)


def _fixed_train_input(batch_size):
    """TorchBench's train loader (common/data/coco.py's) with the port's fixed
    input: the first batch_size images in order, short edge 800 (max 1333),
    not flipped. Its own mapper draws the short edge from 640..800 and the
    flip at random, and its sampler shuffles, so each process would time
    another image at another size (two processes of
    detectron2_maskrcnn_r_50_fpn Train drew image 28 at 768x768 and image 55
    at 959x640; here image 1 at 800x1067, the program's image 0); the
    program documents the same choice (models/vision/detectron2_*.cpp)."""
    from detectron2 import model_zoo
    from detectron2.config import LazyCall as L
    from detectron2.data import transforms as T
    from detectron2.data.samplers import TrainingSampler

    get_config = model_zoo.get_config

    def fixed(path, *args, **kwargs):
        cfg = get_config(path, *args, **kwargs)
        if path == "common/data/coco.py":
            cfg.dataloader.train.mapper.augmentations = [
                L(T.ResizeShortestEdge)(short_edge_length=800, max_size=1333)]
            cfg.dataloader.train.sampler = L(TrainingSampler)(size=batch_size, shuffle=False)
        return cfg

    return _attribute(model_zoo, "get_config", fixed)


def _detectron2_model(root, name, mode, batch_size, device):
    d2 = _detectron2()
    if name == "detectron2_fcos_r_50_fpn":
        try:
            import hydra  # noqa: F401
        except Exception as e:
            # TorchBench's model factory applies the LazyConfig's overrides
            # with detectron2's LazyConfig.apply_overrides, which parses them
            # with hydra.
            raise RuntimeError(
                "its LazyConfig (fcos_R_50_FPN_1x.py) is applied through hydra, and no hydra-core"
                " runs here: 1.1 (the release for omegaconf 2.1.1, TorchBench's detectron2 pin)"
                " fails to import on Python 3.11 (a dataclass with a mutable default), and 1.2+"
                f" needs omegaconf 2.2+ ({type(e).__name__}: {e})") from e
    d2_root = os.path.dirname(os.path.dirname(os.path.abspath(d2.__file__)))
    with contextlib.ExitStack() as stack:
        data = _temporary_folder(stack, "tb_coco2017_minimal_")
        coco = _write_coco(data)
        # model_zoo imports pkg_resources (not installed): see _pkg_resources.
        if "pkg_resources" not in sys.modules:
            stack.enter_context(_attribute(sys.modules, "pkg_resources", _pkg_resources(d2_root)))
        # The module asserts install.py's coco2017-minimal exists and points
        # DETECTRON2_DATASETS at it (only if unset): the stand-in's folder,
        # unset again once the Model is built.
        tb_data = pathlib.Path(root) / "torchbenchmark" / "data" / ".data" / "coco2017-minimal"
        _exists_also(stack, tb_data)
        stack.enter_context(_attribute(os.environ, "DETECTRON2_DATASETS", str(data)))
        package = reference.load_model_package(root, name)
        from detectron2.config import defaults
        from detectron2.data import DatasetCatalog
        from detectron2.data.datasets import load_coco_json

        # coco_2017_val_100 was registered at detectron2.data's import with the
        # DETECTRON2_DATASETS of that moment: read from the stand-in's folder.
        key = "coco_2017_val_100"
        json_file, image_root = coco / "annotations" / "instances_val2017_100.json", coco / "val2017"
        stack.enter_context(_attribute(DatasetCatalog.data, key, lambda: load_coco_json(
            str(json_file), str(image_root), key)))
        # The trained .pkl install.py downloads (model_file): see _trained_weights.
        model_file = package.Model.model_file
        if model_file:
            _exists_also(stack, model_file)
            from detectron2.checkpoint import DetectionCheckpointer

            load = DetectionCheckpointer.load

            def checkpoint_load(self, path, *args, **kwargs):
                if path != model_file:
                    return load(self, path, *args, **kwargs)
                (_trained_weights if mode == "eval" else _train_stand_in)(self.model)
                return {}

            stack.enter_context(_attribute(DetectionCheckpointer, "load", checkpoint_load))
        if mode == "train":
            stack.enter_context(_fixed_train_input(batch_size))
        factory = sys.modules.get("torchbenchmark.util.framework.detectron2.model_factory")
        if factory is not None:
            # The variant's config under the package's model_zoo/configs, which
            # setup.py links to the checkout's configs/.
            stack.enter_context(_attribute(factory, "get_abs_path", lambda config: os.path.join(
                d2_root, "configs", config)))
        # build_model first moves the model to cfg.MODEL.DEVICE (default
        # "cuda"), then TorchBench moves it to self.device: built on `device`
        # directly, as there is no GPU here; the same model ends on the same
        # device.
        stack.enter_context(_attribute(defaults._C.MODEL, "DEVICE", device))
        return package.Model(test=mode, device=device, batch_size=batch_size)


# ------------------------------------------------------------ torchvision

def _vision_maskrcnn(root, mode, batch_size, device):
    import torchvision
    from torchvision.models import _api
    from torchvision.models.detection import MaskRCNN_ResNet50_FPN_Weights

    name = "vision_maskrcnn"
    with contextlib.ExitStack() as stack:
        data = _temporary_folder(stack, "tb_coco2017_minimal_")
        _write_coco(data)
        tb_data = pathlib.Path(root) / "torchbenchmark" / "data" / ".data" / "coco2017-minimal"
        _exists_also(stack, tb_data)  # asserted at import; DATA_DIR is the stand-in below
        package = reference.load_model_package(root, name)
        stack.enter_context(_attribute(package, "DATA_DIR", str(data)))
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

        stack.enter_context(_attribute(_api, "load_state_dict_from_url", coco_weights))
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

    _scale_residual_branches(model, "bn3.weight", residual_scale)
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


# ------------------------------------------------------------------ yolov3

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
    (pathlib.Path(folder) / "coco.names").write_text("\n".join(_coco_names()) + "\n")
    relative = os.path.relpath(images, model_dir)
    (pathlib.Path(folder) / "coco128.data").write_text(
        f"classes=80\ntrain={relative}\nvalid={relative}\nnames={folder}/coco.names\n")


def _yolov3(root, mode, batch_size, device):
    import numpy as np

    name = "yolov3"
    with contextlib.ExitStack() as stack:
        data = _temporary_folder(stack, "tb_coco128_")
        tb_data = pathlib.Path(root) / "torchbenchmark" / "data" / ".data" / "coco128"
        _exists_also(stack, tb_data)  # asserted at import; DATA_DIR is the stand-in below
        # SummaryWriter: imported by yolo_train, whose writer is commented out.
        package = reference.load_model_package(root, name, absent=("torch.utils.tensorboard",))
        _write_coco128(data, pathlib.Path(package.__file__).parent)
        stack.enter_context(_attribute(package, "DATA_DIR", str(data)))
        # numpy 2 removed np.int (int's alias), which the data set code and
        # labels_to_class_weights call while the Model is built.
        if not hasattr(np, "int"):
            stack.enter_context(_attribute(np, "int", int))
        # yolo_train globs hyp*.txt and deletes *_batch*.jpg and results.txt in
        # the working directory: the temporary folder's, not the caller's.
        cwd = os.getcwd()
        os.chdir(data)
        stack.callback(os.chdir, cwd)
        return package.Model(test=mode, device=device, batch_size=batch_size)


# ------------------------------------------------------------------- doctr

def _doctr(root, name, mode, batch_size, device):
    from adapters import doctr_det_predictor as adapter

    with contextlib.ExitStack() as stack:
        # The modules doctr imports at module level but the model never runs
        # (readers, metrics, hub code): adapter.ABSENT.
        for module in adapter.USED:
            if isinstance(sys.modules.get(module), reference._StandIn):
                del sys.modules[module]
        package = reference.load_model_package(root, name, absent=adapter.ABSENT)
        import doctr.models.classification.vgg.pytorch as vgg
        import doctr.models.detection.differentiable_binarization.pytorch as dbnet
        import doctr.models.recognition.crnn.pytorch as crnn

        # pretrained=True downloads the checkpoints: the models' own
        # initialisation instead (the same layers and shapes).
        for module in (vgg, dbnet, crnn):
            stack.enter_context(_attribute(module, "load_pretrained_params",
                                           lambda *args, **kwargs: None))
        return package.Model(test=mode, device=device, batch_size=batch_size)


# ----------------------------------------------------------- cuda-only ones

def _dalle2(root, mode, batch_size, device):
    from adapters import DALLE2_pytorch as adapter

    # dalle2_pytorch from its source tree, and clip.load('ViT-B/32') (a
    # download) building the same CLIP architecture with its own
    # initialisation: adapter._load_library. TorchBench's Model raises
    # NotImplementedError on the CPU before using either.
    lib = adapter._load_library(deterministic=False)
    # The package's __init__ (not run: it imports the trainers) re-exports
    # these from dalle2_pytorch.dalle2_pytorch; TorchBench imports them there.
    for attr in ("DALLE2", "Unet", "Decoder", "DiffusionPriorNetwork", "DiffusionPrior",
                 "OpenAIClipAdapter"):
        setattr(sys.modules["dalle2_pytorch"], attr, getattr(lib, attr))
    package = reference.load_model_package(root, "DALLE2_pytorch")
    return package.Model(test=mode, device=device, batch_size=batch_size)


def _timm_efficientdet(root, mode, batch_size, device):
    if device == "cpu":
        # TorchBench's Model raises this first thing on any device but cuda
        # (effdet's loader calls Tensor.cuda()).
        raise NotImplementedError("The original model code forces the use of CUDA.")
    raise RuntimeError("timm_efficientdet on cuda: not built here (no GPU to check its"
                       " coco2017-minimal loader, evaluator and pretrained-backbone stand-ins)")


CONSTRUCT = {}
for _name in ("detectron2_fasterrcnn_r_101_c4", "detectron2_fasterrcnn_r_101_dc5",
              "detectron2_fasterrcnn_r_101_fpn", "detectron2_fasterrcnn_r_50_c4",
              "detectron2_fasterrcnn_r_50_dc5", "detectron2_fasterrcnn_r_50_fpn",
              "detectron2_fcos_r_50_fpn", "detectron2_maskrcnn", "detectron2_maskrcnn_r_101_c4",
              "detectron2_maskrcnn_r_101_fpn", "detectron2_maskrcnn_r_50_c4",
              "detectron2_maskrcnn_r_50_fpn"):
    CONSTRUCT[_name] = (lambda name: lambda root, mode, batch_size, device: _detectron2_model(
        root, name, mode, batch_size, device))(_name)
CONSTRUCT["vision_maskrcnn"] = _vision_maskrcnn
CONSTRUCT["yolov3"] = _yolov3
CONSTRUCT["doctr_det_predictor"] = lambda root, mode, batch_size, device: _doctr(
    root, "doctr_det_predictor", mode, batch_size, device)
CONSTRUCT["doctr_reco_predictor"] = lambda root, mode, batch_size, device: _doctr(
    root, "doctr_reco_predictor", mode, batch_size, device)
CONSTRUCT["DALLE2_pytorch"] = _dalle2
CONSTRUCT["timm_efficientdet"] = _timm_efficientdet
