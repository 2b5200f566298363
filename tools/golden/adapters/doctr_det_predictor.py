"""doctr_det_predictor: TorchBench's doctr DBNet (db_resnet50) through its own Model.eval()."""

import sys

import fill
import reference
import stand_ins

MODEL = "doctr_det_predictor"
REFERENCE = ("torchbenchmark/models/doctr_det_predictor: Model.__init__ (python-doctr 0.6.0"
             " ocr_predictor(...).det_predictor.model, DBNet db_resnet50), Model.eval"
             " (forward with return_model_output=True: prob map and DBPostProcessor boxes)")
MODE = "eval"
BATCH_SIZE = 1
DTYPE = "float64"
SIZE = 256
# 1024 rows: the full size's min_size_box (3).
PROBE_SHAPE = (2, 1024, 128)
PROBE_COARSE = (40, 8)
NOTES = [
    "python-doctr 0.6.0 (its models equal the reference's pin, doctr@acb9f64); built by"
    " TorchBench's own Model(test='eval') with pretrained=True, whose download"
    " (load_pretrained_params) is made a no-op: the weights are the deterministic fill",
    f"one image 3x{SIZE}x{SIZE} (filled as u) instead of 3x1024x1024 (same code path; only the"
    " postprocessor's min_size_box, 1 + H // 512, goes from 3 to 1), in float64 (the float32"
    " fill converted) so that no pixel of the prob map sits on a threshold by rounding",
    "output: Model.eval()'s out_map (sigmoid of prob_head's logits); preds.0: the boxes the same"
    " forward's DBPostProcessor made for the image (xmin, ymin, xmax, ymax, score; N x 5)",
    "probe.<i>: DBPostProcessor alone on a smooth synthetic map (the fill 'probe' at"
    f" {PROBE_SHAPE[0]}x1x{PROBE_COARSE[0]}x{PROBE_COARSE[1]} in [0, 0.6) (0.3 + 0.3 u),"
    f" bilinearly upsampled (align_corners=False) to {PROBE_SHAPE[1]}x{PROBE_SHAPE[2]}, then"
    " NHWC): larger blobs"
    " with holes, at 1024 rows so that boxes under 3 pixels are dropped as at the full size,"
    " beside the network map's many small ones",
    "stand-ins for modules doctr imports but never runs here: its dataset/io/metrics readers'"
    " weasyprint, pypdfium2, h5py, defusedxml, unidecode, mplcursors, langdetect, rapidfuzz,"
    " and doctr.models.factory (HF-hub push/pull, which imports names huggingface_hub 2 lacks)",
]

# What doctr imports at module level but the models never call.
ABSENT = ("weasyprint", "pypdfium2", "h5py", "defusedxml", "defusedxml.ElementTree", "unidecode",
          "mplcursors", "langdetect", "rapidfuzz", "rapidfuzz.string_metric",
          "doctr.models.factory")
# What the postprocessing really runs (another adapter may have stood in for it).
USED = ("cv2", "pyclipper", "shapely", "shapely.geometry")


def load(root, name):
    """TorchBench's doctr model package, with doctr's weight download turned off."""
    for module in USED:
        if isinstance(sys.modules.get(module), reference._StandIn):
            del sys.modules[module]
    package = reference.load_model_package(root, name, absent=ABSENT)
    import doctr.models.classification.vgg.pytorch as vgg
    import doctr.models.detection.differentiable_binarization.pytorch as dbnet
    import doctr.models.recognition.crnn.pytorch as crnn

    for module in (vgg, dbnet, crnn):
        module.load_pretrained_params = lambda *args, **kwargs: None
    return package


def run_eval(root, name, batch_size, image_shape):
    """TorchBench's Model(test="eval") for `name` on filled weights and
    images in float64, and its Model.eval(): (the network, eval()'s one
    output, the same forward's out["preds"])."""
    package = load(root, name)
    model = package.Model(test="eval", device="cpu", batch_size=batch_size)
    net = model.model
    fill.deterministic_fill(net)
    net.double()
    model.example_inputs = fill.deterministic_tensor(
        "images", (batch_size,) + tuple(image_shape)).double()
    outputs = []
    original_forward = net.forward

    def forward(*args, **kwargs):
        outputs.append(original_forward(*args, **kwargs))
        return outputs[-1]

    net.forward = forward
    try:
        (output,) = model.eval()
    finally:
        del net.forward
    assert len(outputs) == 1
    return net, output, outputs[0]["preds"]


def probe_map():
    import torch
    import torch.nn.functional as F

    coarse = fill.deterministic_tensor("probe", (PROBE_SHAPE[0], 1) + PROBE_COARSE,
                                       torch.float64, 0.3, 0.3)
    fine = F.interpolate(coarse, size=PROBE_SHAPE[1:], mode="bilinear", align_corners=False)
    return fine.permute(0, 2, 3, 1).contiguous()


def compute(root):
    import torch

    net, out_map, preds = run_eval(root, MODEL, BATCH_SIZE, (3, SIZE, SIZE))
    results = {"output": out_map.detach().clone()}
    for i, boxes in enumerate(preds):
        results[f"preds.{i}"] = torch.from_numpy(boxes.astype("float64"))
    for i, per_image in enumerate(net.postprocessor(probe_map().numpy())):
        results[f"probe.{i}"] = torch.from_numpy(per_image[0].astype("float64"))
    return results


def prepare(root, name, mode, batch_size, device, stack):
    # The modules doctr imports at module level but the model never runs
    # (readers, metrics, hub code): ABSENT.
    for module in USED:
        if isinstance(sys.modules.get(module), reference._StandIn):
            del sys.modules[module]
    package = reference.load_model_package(root, name, absent=ABSENT)
    import doctr.models.classification.vgg.pytorch as vgg
    import doctr.models.detection.differentiable_binarization.pytorch as dbnet
    import doctr.models.recognition.crnn.pytorch as crnn

    # pretrained=True downloads the checkpoints: the models' own
    # initialisation instead (the same layers and shapes).
    for module in (vgg, dbnet, crnn):
        stack.enter_context(stand_ins.attribute(module, "load_pretrained_params",
                                                lambda *args, **kwargs: None))
    return package.Model(test=mode, device=device, batch_size=batch_size)
