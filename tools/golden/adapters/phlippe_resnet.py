"""phlippe_resnet: TorchBench's CIFAR ResNet and its own train()."""

import fill
import reference

MODEL = "phlippe_resnet"
REFERENCE = "torchbenchmark/models/phlippe_resnet: Model.__init__, Model.train, Model.eval"
MODE = "train"
BATCH_SIZE = 2
DTYPE = "float32"
NOTES = [
    "eval_output: Model.eval() on the filled net (running statistics filled, non-trivial)",
    "output, loss, grad:*: the first train() call (SGD lr 0.1, momentum 0.9, wd 1e-4)",
    "after_2_steps:*: the first and last parameters after two train() calls (momentum used)",
]


def phlippe_compute(model):
    """Runs a phlippe Model's own eval() and train() on filled weights and
    inputs; shared with phlippe_densenet."""
    import torch

    net = model.model
    fill.deterministic_fill(net)
    images = fill.deterministic_tensor("images", (BATCH_SIZE, 3, 32, 32))
    # phlippe_resnet reads self.images, phlippe_densenet self.example_inputs.
    model.images = images
    model.example_inputs = (images,)
    model.example_target = fill.deterministic_long("targets", (BATCH_SIZE,), 0, 10)
    results = {"eval_output": model.eval()[0].detach().clone()}
    reference.record_two_train_steps(net, model.optimizer, model.criterion, model.train, results)
    assert torch.isfinite(results["loss"]).all()
    return results


def compute(root):
    package = reference.load_model_package(root, "phlippe_resnet")
    return phlippe_compute(package.Model(test="train", device="cpu", batch_size=BATCH_SIZE))
