"""mobilenet_v2_quantized_qat: torchvision mobilenet_v2 through torch's own FX
quantization-aware training (prepare_qat_fx, fbgemm QAT qconfig) and int8
conversion (convert_fx), as TorchBench's Model builds it.

The filled model is TorchBench's prepared QAT model (Model(test="train")):
the fill covers weights and BatchNorm statistics; the fake-quantize
modules' observer state (scale, eps, min_val, max_val) is then put back to
its initial values, as prepare_qat_fx leaves it (the fill would put a
min_val above max_val). Dropout is off (its mask cannot be shared).

Keys (shared with resnet50_quantized_qat):
  eval_output_fresh  Model.eval()'s path: convert_fx of the just-prepared
                     model (observers never ran: every activation scale is
                     1, zero point 0), run on the first image.
  eval_output_fixed_range  the same with every activation observer set to
                     the range [-4, 4] first: int8 kernels at a scale where
                     the outputs have signal (mobilenet's fresh output
                     rounds to all zeros).
  output, loss, grad:*, after_step:*  train(): a new Adam, the fake-quant
                     forward, CrossEntropyLoss against filled labels (the
                     reference draws them with random_), backward, step.
  eval_output        convert_fx within that train() call, after backward and
                     before the Adam step (observers have seen one forward),
                     run on the first image: the int8 kernels with observed
                     scales. Before the step, because Adam's first step
                     moves a parameter by lr * sign(grad), and a gradient
                     that is zero up to rounding (a channel the fake-quant
                     clamps) then moves by +-lr by the summation order.
"""

import copy

import fill
import reference

MODEL = "mobilenet_v2_quantized_qat"
REFERENCE = ("torchbenchmark/models/mobilenet_v2_quantized_qat: Model.__init__ "
             "(prepare_qat_fx), train, prep_qat_eval (convert_fx), eval")
MODE = "train"
BATCH_SIZE = 2
IMAGE_SIZE = 32
DTYPE = "float32"
FIXED_RANGE = 4.0
NOTES = [
    f"images {BATCH_SIZE}x3x{IMAGE_SIZE}x{IMAGE_SIZE} (the reference's 224 takes the same path)",
    "made on one thread, as the tests run (gradients through ~50 fake-quants are thread-order sensitive)",
    "observer state reset to prepare_qat_fx's initial values after the fill; dropout off",
    "eval_output_fresh: convert_fx of the just-prepared model (TorchBench's eval path), first image",
    "output, loss, grad:*, after_step:*: one train() (new Adam, CE against filled labels)",
    "eval_output: convert_fx in that train() after backward, before the step (observed scales)",
    "eval_output_fixed_range: the same conversion with every activation observer's range set"
    f" to [{-FIXED_RANGE}, {FIXED_RANGE}]",
    "int8 outputs of fixed scales (eval_output_fresh, eval_output_fixed_range) are compared in"
    " quantization steps: integer kernels from machine-independent inputs, where one"
    " requantization rounding is a whole step; eval_output's scales come from the observed"
    " fake-quant forward, which a one-ulp input change moves (see the conditioning notes)",
]
QUANTIZED_KEYS = ("eval_output_fresh", "eval_output_fixed_range")

GRAD_KEYS = {
    "mobilenet_v2_quantized_qat": ["features.0.0.weight", "features.0.0.bn.weight",
                                   "features.17.conv.2.weight", "classifier.1.weight",
                                   "classifier.1.bias"],
    "resnet50_quantized_qat": ["conv1.weight", "conv1.bn.weight", "layer4.2.conv3.weight",
                               "fc.weight", "fc.bias"],
}


def reset_observers(net):
    import torch
    from torch.ao.quantization import FusedMovingAvgObsFakeQuantize

    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, FusedMovingAvgObsFakeQuantize):
                m.scale.fill_(1.0)
                obs = m.activation_post_process
                obs.eps.fill_(torch.finfo(torch.float32).eps)
                if obs.min_val.dim() == 0:
                    obs.min_val.fill_(float("inf"))
                    obs.max_val.fill_(float("-inf"))


def fix_activation_ranges(net, bound):
    """Every per-tensor (activation) observer as if it had seen [-bound, bound]."""
    import torch
    from torch.ao.quantization import FusedMovingAvgObsFakeQuantize

    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, FusedMovingAvgObsFakeQuantize):
                obs = m.activation_post_process
                if obs.min_val.dim() == 0:
                    obs.min_val.fill_(-bound)
                    obs.max_val.fill_(bound)


def qat_compute(root, name, batch_size, image_size):
    import torch
    from torch.ao.quantization import quantize_fx

    package = reference.load_model_package(root, name)
    model = package.Model(test="train", device="cpu", batch_size=batch_size)
    net = model.model
    fill.deterministic_fill(net)
    reset_observers(net)
    reference.turn_off_dropout(net)
    images = fill.deterministic_tensor("images", (batch_size, 3, image_size, image_size))
    labels = fill.deterministic_long("labels", (batch_size,), 0, 1000)
    model.example_inputs = (images,)
    results = {}

    fresh = copy.deepcopy(model)
    fresh.prep_qat_eval()
    results["eval_output_fresh"] = fresh.eval()[0].detach().clone()
    fixed = copy.deepcopy(model)
    fix_activation_ranges(fixed.model, FIXED_RANGE)
    fixed.prep_qat_eval()
    results["eval_output_fixed_range"] = fixed.eval()[0].detach().clone()

    # Model.train() with the labels filled instead of drawn.
    params = dict(net.named_parameters())
    optimizer = torch.optim.Adam(net.parameters())
    optimizer.zero_grad()
    pred = net(images)
    loss = torch.nn.CrossEntropyLoss()(pred, labels)
    loss.backward()
    observed = copy.deepcopy(model)
    observed.prep_qat_eval()
    results["eval_output"] = observed.eval()[0].detach().clone()
    optimizer.step()
    results["output"] = pred.detach().clone()
    results["loss"] = loss.detach().clone()
    for key in GRAD_KEYS[name]:
        results["grad:" + key] = params[key].grad.detach().clone()
        results["after_step:" + key] = params[key].detach().clone()
    assert torch.isfinite(results["loss"]).all()
    return results


def compute(root):
    return single_threaded(qat_compute, root, MODEL, BATCH_SIZE, IMAGE_SIZE)


def single_threaded(function, *args):
    """Runs `function` on one thread, as the C++ tests run: the gradients
    of the first layers pass through ~50 fake-quants, whose straight-through
    masks turn reduction-order rounding into relative errors near 1e-4
    between thread counts (measured: Python on 1 against 2 threads)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return function(*args)
    finally:
        torch.set_num_threads(threads)
