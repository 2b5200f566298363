"""Super_SloMo: TorchBench's Super SloMo through its own Model.eval() and Model.train()."""

import importlib

import fill
import reference
import stand_ins

MODEL = "Super_SloMo"
REFERENCE = ("torchbenchmark/models/Super_SloMo: model_wrapper.Model (flowComp, ArbTimeFlowIntrp,"
             " backWarp, vgg16_conv_4_3, the loss in forward), Model.eval, Model.train with"
             " Adam(lr 1e-4)")
MODE = "train"
BATCH_SIZE = 2
DTYPE = "float64"
SIZE = 32
NOTES = [
    "run in float64 (weights filled in float32, then converted): grid_sample's bilinear weights"
    " and the division by the visibility blend put float32 results of two summation orders"
    " apart by more than 1e-4",
    "32x32 frames instead of 352x352 (same layers; the UNets' bottom is 1x1): backWarp rebuilt"
    " as backWarp(32, 32), batch 2 (the reference's is 6)",
    "vgg16 built with weights=None instead of the downloaded ImageNet weights, then filled as"
    " every other parameter (the C++ port has random VGG weights too)",
    "Model.__init__'s data loader skipped (it reads the bundled clips): example_inputs ="
    " (frame_index, frame0, frame_t, frame1) with frame_index filled integers in [0, 7) and"
    " frames filled (u), in the reference's order; its Adam(model.parameters(), lr 1e-4) made"
    " as __init__ does",
    "eval:*: Model.eval()'s (Ft_p, loss) under no_grad; train:*: the forward of one train()"
    " call; grad:*: edge gradients before its Adam step; after_step:*: edge parameters after",
]


def compute(root):
    import torch
    import torchvision

    package = reference.load_model_package(root, MODEL)
    slomo = importlib.import_module(f"torchbenchmark.models.{MODEL}.slomo_model")
    wrapper = importlib.import_module(f"torchbenchmark.models.{MODEL}.model_wrapper")
    vgg16 = torchvision.models.vgg16
    torchvision.models.vgg16 = lambda weights=None, **kwargs: vgg16(weights=None, **kwargs)
    try:
        net = wrapper.Model("cpu")
    finally:
        torchvision.models.vgg16 = vgg16
    net.trainFlowBackWarp = slomo.backWarp(SIZE, SIZE, "cpu")
    fill.deterministic_fill(net)
    net.double()

    model = package.Model.__new__(package.Model)  # __init__ reads the bundled clips
    model.model = net
    model.optimizer = torch.optim.Adam(net.parameters(), lr=0.0001)
    shape = (BATCH_SIZE, 3, SIZE, SIZE)
    model.example_inputs = (
        fill.deterministic_long("frame_index", (BATCH_SIZE,), 0, 7),
        fill.deterministic_tensor("frame0", shape, torch.float64),
        fill.deterministic_tensor("frame_t", shape, torch.float64),
        fill.deterministic_tensor("frame1", shape, torch.float64),
    )

    results = {}
    with torch.no_grad():
        ft_p, loss = model.eval()
    results["eval:Ft_p"] = ft_p.detach().clone()
    results["eval:loss"] = loss.detach().clone()

    outputs = []
    forward = net.forward

    def recorded_forward(*args):
        outputs.append(forward(*args))
        return outputs[-1]

    net.forward = recorded_forward

    def on_step(optimizer, args, kwargs):
        reference.record_edges(net.flowComp, "grad:flowComp.", results, gradients=True)
        reference.record_edges(net.ArbTimeFlowIntrp, "grad:ArbTimeFlowIntrp.", results,
                               gradients=True)

    handle = model.optimizer.register_step_pre_hook(on_step)
    try:
        model.train()
    finally:
        handle.remove()
        del net.forward
    results["train:Ft_p"] = outputs[0][0].detach().clone()
    results["train:loss"] = outputs[0][1].detach().clone()
    reference.record_edges(net.flowComp, "after_step:flowComp.", results)
    reference.record_edges(net.ArbTimeFlowIntrp, "after_step:ArbTimeFlowIntrp.", results)
    return results


def prepare(root, name, mode, batch_size, device, stack):
    import numpy as np
    from PIL import Image

    package = reference.load_model_package(root, name)
    data = stand_ins.temporary_data_path(stack, package)
    train = data / "Super_SloMo_inputs" / "dataset" / "train"
    # The Adobe240fps training clips: 12 frames of 640x360 each (SuperSloMo's
    # dim), from which the loader crops 352x352; one clip per sample.
    rng = np.random.default_rng(0)
    for clip in range(batch_size):
        folder = train / f"clip{clip:03d}"
        folder.mkdir(parents=True)
        for frame in range(12):
            pixels = rng.integers(0, 256, (360, 640, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(folder / f"{frame:02d}.png")
    # vgg16's ImageNet weights (frozen, for the perceptual loss).
    stand_ins.own_initialisation(stack, "vgg16")
    return package.Model(test=mode, device=device, batch_size=batch_size)
