"""opacus_cifar10: TorchBench's Opacus ResNet18 (opacus 1.3.0) and its own train()."""

import os

import reference
import stand_ins
from adapters.functorch_dp_cifar10 import BATCH_SIZE, DTYPE, MODE, filled_model, noised_step

MODEL = "opacus_cifar10"
REFERENCE = (
    "torchbenchmark/models/opacus_cifar10: Model.__init__, Model.train, Model.eval "
    "(opacus 1.3.0 GradSampleModule, DPOptimizer)"
)
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
    package = reference.load_model_package(root, MODEL)
    # opacus 1.3.0's ModuleValidator.fix clones the net through torch.save /
    # torch.load, which torch >= 2.6 refuses by default (weights_only=True);
    # only while Model.__init__ runs.
    key = "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"
    previous = os.environ.get(key)
    os.environ[key] = "1"
    try:
        model, results = filled_model(package)
    finally:
        if previous is None:
            del os.environ[key]
        else:
            os.environ[key] = previous
    net = model.model

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
    return noised_step(model, results)


def prepare(root, name, mode, batch_size, device, stack):
    # opacus 1.3's ModuleValidator.fix clones the net through torch.save /
    # torch.load (a whole module: weights_only=False).
    stand_ins.unsafe_torch_load(stack)
    return stand_ins.plain(root, name, mode, batch_size, device, stack)
