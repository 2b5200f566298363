"""pyhpc_turbulent_kinetic_energy: integrate_tke through TorchBench's own eval()."""

import math

import torch

import fill
import reference

MODEL = "pyhpc_turbulent_kinetic_energy"
REFERENCE = "torchbenchmark/models/pyhpc_turbulent_kinetic_energy: Model.__init__ (input shapes), Model.eval"
MODE = "eval"
BATCH_SIZE = 4096
DTYPE = "float64"
NOTES = [
    "tke, dtke, tke_surf_corr: the three tensors Model.eval() returns (tke_surf_corr float32, as the"
    " reference makes it) on filled inputs: masks u < 0.6 (rand < 0.8), randn arrays sqrt(3) u"
    " (mean 0, variance 1), kbot the fill's integers in [0, nz) (randint)",
]

# _generate_inputs' return order.
NAMES = [
    "u", "v", "w", "maskU", "maskV", "maskW", "dxt", "dxu", "dyt", "dyu", "dzt", "dzw", "cost", "cosu",
    "kbot", "kappaM", "mxl", "forc", "forc_tke_surface", "tke", "dtke",
]
OUTPUTS = ["tke", "dtke", "tke_surf_corr"]


def filled(name, like, nz):
    shape = tuple(like.shape)
    if name == "kbot":
        assert like.dtype == torch.int64
        return fill.deterministic_long(name, shape, 0, nz)
    assert like.dtype == torch.float64
    if name.startswith("mask"):
        return (fill.deterministic_tensor(name, shape, torch.float64) < 0.6).to(torch.float64)
    return fill.deterministic_tensor(name, shape, torch.float64, 0.0, math.sqrt(3.0))


def compute(root):
    package = reference.load_model_package(root, MODEL)
    model = package.Model(test="eval", device="cpu", batch_size=BATCH_SIZE)
    inputs = model.example_inputs
    assert len(inputs) == len(NAMES)
    nz = inputs[NAMES.index("tke")].shape[2]
    model.example_inputs = tuple(filled(name, x, nz) for name, x in zip(NAMES, inputs))
    out = model.eval()
    assert out[2].dtype == torch.float32
    return dict(zip(OUTPUTS, out))
