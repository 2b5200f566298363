"""pyhpc_equation_of_state: gsw_dHdT through TorchBench's own eval()."""

import torch

import fill
import reference

MODEL = "pyhpc_equation_of_state"
REFERENCE = "torchbenchmark/models/pyhpc_equation_of_state: Model.__init__ (input shapes), Model.eval"
MODE = "eval"
BATCH_SIZE = 4096
DTYPE = "float64"
NOTES = [
    "output: Model.eval() on filled float64 inputs over the reference's ranges:"
    " s = 5.005 + 4.995 u (U(0.01, 10)), t = 4 + 16 u (U(-12, 20)), p = 500 + 500 u (U(0, 1000))",
]

# (offset, scale) so that offset + scale * u spans _generate_inputs' ranges.
RANGES = {"s": (5.005, 4.995), "t": (4.0, 16.0), "p": (500.0, 500.0)}


def compute(root):
    package = reference.load_model_package(root, MODEL)
    model = package.Model(test="eval", device="cpu", batch_size=BATCH_SIZE)
    model.example_inputs = [
        fill.deterministic_tensor(name, tuple(x.shape), torch.float64, *RANGES[name])
        for name, x in zip("stp", model.example_inputs)
    ]
    return {"output": model.eval()[0]}
