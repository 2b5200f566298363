"""phlippe_densenet: TorchBench's CIFAR DenseNet and its own train()."""

import reference
from adapters.phlippe_resnet import BATCH_SIZE, DTYPE, MODE, phlippe_compute

MODEL = "phlippe_densenet"
REFERENCE = "torchbenchmark/models/phlippe_densenet: Model.__init__, Model.train, Model.eval"
NOTES = [
    "eval_output: Model.eval() on the filled net (running statistics filled, non-trivial)",
    "output, loss, grad:*: the first train() call (the reference's optimizer and criterion)",
    "after_2_steps:*: the first and last parameters after two train() calls",
]
__all__ = ["BATCH_SIZE", "DTYPE", "MODE"]


def compute(root):
    package = reference.load_model_package(root, "phlippe_densenet")
    return phlippe_compute(package.Model(test="train", device="cpu", batch_size=BATCH_SIZE))
