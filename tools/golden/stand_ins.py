"""The mechanics of standing in for what TorchBench's own Model classes need
from a machine: a patch that lasts while a Model is built, data folders,
downloaded weights, COCO-format data. Each adapter's prepare() (adapters/)
uses them for its own model; reference_env.construct runs prepare().
"""

import collections.abc
import contextlib
import json
import os
import pathlib
import sys
import tempfile

import reference


@contextlib.contextmanager
def attribute(owner, attr, value):
    """owner.attr = value (owner[attr] for a mapping: sys.modules,
    os.environ) until the context exits; removed again if it was absent."""
    mapping = isinstance(owner, collections.abc.MutableMapping)
    missing = object()
    saved = owner.get(attr, missing) if mapping else getattr(owner, attr, missing)
    if mapping:
        owner[attr] = value
    else:
        setattr(owner, attr, value)
    try:
        yield value
    finally:
        if saved is missing:
            if mapping:
                owner.pop(attr, None)
            else:
                delattr(owner, attr)
        elif mapping:
            owner[attr] = saved
        else:
            setattr(owner, attr, saved)


def data_path(stack, folder, *modules):
    """DATA_PATH = folder on the stand-in torchbenchmark package and on
    `modules` (which imported the name) while the Model is built; returns
    it as a pathlib.Path."""
    for module in (sys.modules["torchbenchmark"],) + modules:
        stack.enter_context(attribute(module, "DATA_PATH", str(folder)))
    return pathlib.Path(folder)


def temporary_data_path(stack, *modules):
    """_data_path on a temporary folder removed once the Model is built."""
    folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="tb_data_"))
    return data_path(stack, folder, *modules)


def lasting_folder(model, folder):
    """Keeps a tempfile.TemporaryDirectory as long as the Model: for a
    folder its step writes into."""
    model._reference_env_folder = folder
    return model


def own_initialisation(stack, builder):
    """torchvision.models.<builder> built with weights=None: the
    pretrained weights are downloaded; the model's own initialisation has
    the same shapes (timing does not depend on the values)."""
    import torchvision

    build = getattr(torchvision.models, builder)
    stack.enter_context(attribute(torchvision.models, builder,
                                  lambda *args, weights=None, **kwargs: build(*args, weights=None,
                                                                               **kwargs)))


def unsafe_torch_load(stack):
    """torch.load with weights_only=False by default: files TorchBench
    pickled before torch 2.6 made weights_only=True the default."""
    import torch

    load = torch.load

    def torch_load(*args, **kwargs):
        kwargs.setdefault("weights_only", False)
        return load(*args, **kwargs)

    stack.enter_context(attribute(torch, "load", torch_load))


def plain(root, name, mode, batch_size, device, stack, absent=(), **extra):
    """The Model built as is, after `absent` stand-in modules."""
    package = reference.load_model_package(root, name, absent=absent)
    return package.Model(test=mode, device=device, batch_size=batch_size, **extra)


def write_coco(folder, count=100):
    """coco2017-minimal's coco/ folder under `folder`: val2017/<id>.jpg and
    annotations/instances_val2017_100.json for `count` coco_synthetic images
    (its COCO category ids and names, polygons, areas, bboxes). Returns the
    coco/ folder."""
    import numpy as np
    from PIL import Image

    import coco_synthetic

    names = coco_names()
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


def coco_names():
    """COCO's 80 thing names in category-id order (detectron2's metadata
    checks them against its builtin list): torchvision's COCO category list,
    indexed by category id."""
    import coco_synthetic
    from torchvision.models.detection import MaskRCNN_ResNet50_FPN_Weights

    names = MaskRCNN_ResNet50_FPN_Weights.COCO_V1.meta["categories"]
    return [names[i] for i in coco_synthetic.COCO_CATEGORY_IDS]


def exists_also(stack, *paths):
    """os.path.exists answers True for `paths` too: the data folders the
    models assert at import, whose contents are read from the temporary
    stand-in instead."""
    exists = os.path.exists
    wanted = {os.path.normpath(str(p)) for p in paths}
    stack.enter_context(attribute(os.path, "exists",
                                  lambda p: os.path.normpath(str(p)) in wanted or exists(p)))


def temporary_folder(stack, prefix):
    return pathlib.Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=prefix)))


def scale_residual_branches(model, suffix, scale):
    """Each bottleneck's last frozen norm scale (the buffers named *suffix)
    at `scale`: a trained ResNet's residual branches are small next to their
    identity path."""
    import torch

    with torch.no_grad():
        for name, b in model.named_buffers():
            if name.endswith(suffix):
                b.fill_(scale)
