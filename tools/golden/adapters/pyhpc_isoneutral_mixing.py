"""pyhpc_isoneutral_mixing: isoneutral_diffusion_pre through TorchBench's own eval()."""

import math

import torch

import fill
import reference

MODEL = "pyhpc_isoneutral_mixing"
REFERENCE = "torchbenchmark/models/pyhpc_isoneutral_mixing: Model.__init__ (input shapes), Model.eval"
MODE = "eval"
BATCH_SIZE = 4096
DTYPE = "float64"
NOTES = [
    "K_11, K_22, K_33, Ai_ez, Ai_nz, Ai_bx, Ai_by: the seven tensors Model.eval() returns (its inputs,"
    " written in place) on filled float64 inputs: masks u < 0.6 (rand < 0.8), randn arrays sqrt(3) u"
    " (mean 0, variance 1), Ai_* the reference's zeros",
]

# _generate_inputs' return order; None marks the Ai_* zeros, kept as made.
NAMES = [
    "maskT", "maskU", "maskV", "maskW", "dxt", "dxu", "dyt", "dyu", "dzt", "dzw", "cost", "cosu",
    "salt", "temp", "zt", "K_iso", "K_11", "K_22", "K_33", None, None, None, None,
]
OUTPUTS = ["K_11", "K_22", "K_33", "Ai_ez", "Ai_nz", "Ai_bx", "Ai_by"]


def filled(name, like):
    if name is None:
        return like
    if name.startswith("mask"):
        return (fill.deterministic_tensor(name, tuple(like.shape), torch.float64) < 0.6).to(torch.float64)
    return fill.deterministic_tensor(name, tuple(like.shape), torch.float64, 0.0, math.sqrt(3.0))


def compute(root):
    package = reference.load_model_package(root, MODEL)
    model = package.Model(test="eval", device="cpu", batch_size=BATCH_SIZE)
    assert len(model.example_inputs) == len(NAMES)
    assert all(x.dtype == torch.float64 for x in model.example_inputs)
    model.example_inputs = [filled(name, x) for name, x in zip(NAMES, model.example_inputs)]
    assert not any(x.any() for x in model.example_inputs[-4:]), "Ai_* inputs are zeros"
    return dict(zip(OUTPUTS, model.eval()))
