"""opacus_cifar10: TorchBench's Opacus ResNet18 (opacus 1.3.0) and its own train()."""

import os

import fill
import reference

MODEL = "opacus_cifar10"
REFERENCE = (
    "torchbenchmark/models/opacus_cifar10: Model.__init__, Model.train, Model.eval "
    "(opacus 1.3.0 GradSampleModule, DPOptimizer)"
)
MODE = "train"
BATCH_SIZE = 4
DTYPE = "float32"
NOTES = [
    "eval_output: Model.eval() on the filled GradSampleModule (GroupNorm: no running statistics)",
    "output, loss, grad_sample:*: the first train() call's forward, loss and Opacus's per-sample "
    "gradients (hooks, grad samplers)",
    "grad:*: what DPOptimizer hands Adam in that call with noise_multiplier=0 (clipped, summed, "
    "/ expected_batch_size; Opacus draws no noise at std 0)",
    "after_1_step:*: the first and last parameters after that step",
    "after_noised_step:*: after a second train() with noise_multiplier=1.0, both sides seeded "
    "with torch.manual_seed(0) right before (the same torch.normal calls in the same order)",
]


def compute(root):
    import torch

    # opacus 1.3.0's ModuleValidator.fix clones the net through torch.save /
    # torch.load, which torch >= 2.6 refuses by default (weights_only=True).
    os.environ["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] = "1"
    package = reference.load_model_package(root, MODEL)
    model = package.Model(test="train", device="cpu", batch_size=BATCH_SIZE)
    net = model.model
    fill.deterministic_fill(net)
    images = fill.deterministic_tensor("images", (BATCH_SIZE, 3, 32, 32))
    model.example_inputs = (images,)
    model.example_target = fill.deterministic_long("targets", (BATCH_SIZE,), 0, 10)
    results = {"eval_output": model.eval()[0].detach().clone()}

    named = list(net.named_parameters())
    original_forward = net.forward
    criterion = model.criterion

    def forward(*args, **kwargs):
        results["output"] = original_forward(*args, **kwargs)
        return results["output"]

    def loss_fn(*args, **kwargs):
        results["loss"] = criterion(*args, **kwargs)
        return results["loss"]

    dp_optimizer = model.optimizer
    inner = dp_optimizer.original_optimizer
    original_step = inner.step

    def step(*args, **kwargs):
        for name, p in (named[0], named[-1]):
            results["grad_sample:" + name] = p.grad_sample.detach().clone()
        reference.record_edges(net, "grad:", results, gradients=True)
        return original_step(*args, **kwargs)

    net.forward = forward
    model.criterion = loss_fn
    inner.step = step
    dp_optimizer.noise_multiplier = 0.0
    try:
        model.train()
    finally:
        net.forward = original_forward
        model.criterion = criterion
        inner.step = original_step
        dp_optimizer.noise_multiplier = 1.0
    results["output"] = results["output"].detach().clone()
    results["loss"] = results["loss"].detach().clone()
    reference.record_edges(net, "after_1_step:", results)
    torch.manual_seed(0)
    model.train()
    reference.record_edges(net, "after_noised_step:", results)
    for value in results.values():
        assert torch.isfinite(value).all()
    return results
