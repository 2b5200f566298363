"""What TorchBench's detectron2 Models need here (every detectron2_* adapter's
prepare): detectron2 from its source checkout, coco2017-minimal written
synthetic, and stand-ins for the trained checkpoint.

The COCO-based models read install.py's coco2017-minimal (coco_2017_val_100:
the first 100 val2017 images and their instances json): written, synthetic,
into a temporary folder from coco_synthetic's images and annotations (COCO's
image sizes, 7 objects each, polygons), in the files and formats the models
read (stand_ins.write_coco).
"""

import os
import pathlib
import sys
import types

import reference
import stand_ins


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
    stand_ins.scale_residual_branches(model, "conv3.norm.weight", residual_scale)


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

    return stand_ins.attribute(model_zoo, "get_config", fixed)


def prepare(root, name, mode, batch_size, device, stack):
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
    data = stand_ins.temporary_folder(stack, "tb_coco2017_minimal_")
    coco = stand_ins.write_coco(data)
    # model_zoo imports pkg_resources (not installed): see _pkg_resources.
    if "pkg_resources" not in sys.modules:
        stack.enter_context(stand_ins.attribute(sys.modules, "pkg_resources", _pkg_resources(d2_root)))
    # The module asserts install.py's coco2017-minimal exists and points
    # DETECTRON2_DATASETS at it (only if unset): the stand-in's folder,
    # unset again once the Model is built.
    tb_data = pathlib.Path(root) / "torchbenchmark" / "data" / ".data" / "coco2017-minimal"
    stand_ins.exists_also(stack, tb_data)
    stack.enter_context(stand_ins.attribute(os.environ, "DETECTRON2_DATASETS", str(data)))
    package = reference.load_model_package(root, name)
    from detectron2.config import defaults
    from detectron2.data import DatasetCatalog
    from detectron2.data.datasets import load_coco_json

    # coco_2017_val_100 was registered at detectron2.data's import with the
    # DETECTRON2_DATASETS of that moment: read from the stand-in's folder.
    key = "coco_2017_val_100"
    json_file, image_root = coco / "annotations" / "instances_val2017_100.json", coco / "val2017"
    stack.enter_context(stand_ins.attribute(DatasetCatalog.data, key, lambda: load_coco_json(
        str(json_file), str(image_root), key)))
    # The trained .pkl install.py downloads (model_file): see _trained_weights.
    model_file = package.Model.model_file
    if model_file:
        stand_ins.exists_also(stack, model_file)
        from detectron2.checkpoint import DetectionCheckpointer

        load = DetectionCheckpointer.load

        def checkpoint_load(self, path, *args, **kwargs):
            if path != model_file:
                return load(self, path, *args, **kwargs)
            (_trained_weights if mode == "eval" else _train_stand_in)(self.model)
            return {}

        stack.enter_context(stand_ins.attribute(DetectionCheckpointer, "load", checkpoint_load))
    if mode == "train":
        stack.enter_context(_fixed_train_input(batch_size))
    factory = sys.modules.get("torchbenchmark.util.framework.detectron2.model_factory")
    if factory is not None:
        # The variant's config under the package's model_zoo/configs, which
        # setup.py links to the checkout's configs/.
        stack.enter_context(stand_ins.attribute(factory, "get_abs_path", lambda config: os.path.join(
            d2_root, "configs", config)))
    # build_model first moves the model to cfg.MODEL.DEVICE (default
    # "cuda"), then TorchBench moves it to self.device: built on `device`
    # directly, as there is no GPU here; the same model ends on the same
    # device.
    stack.enter_context(stand_ins.attribute(defaults._C.MODEL, "DEVICE", device))
    return package.Model(test=mode, device=device, batch_size=batch_size)
