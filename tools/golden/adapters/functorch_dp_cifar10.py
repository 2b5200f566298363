"""functorch_dp_cifar10: TorchBench's DP-SGD ResNet18 and its own train()."""

import fill
import reference

MODEL = "functorch_dp_cifar10"
REFERENCE = (
    "torchbenchmark/models/functorch_dp_cifar10: Model.__init__, Model.train, "
    "Model.eval, clip_and_accumulate_and_add_noise, compute_norms"
)
MODE = "train"
BATCH_SIZE = 4
DTYPE = "float32"
NOTES = [
    "eval_output: Model.eval() on the filled net (GroupNorm: no running statistics)",
    "sample_norms, grad_sample:*: compute_norms and the vmap(grad) per-sample gradients of the "
    "first train() call",
    "grad:*: the clipped, summed gradients / batch size of that call with noise_multiplier=0 "
    "(clip_and_accumulate_and_add_noise's own code; torch.normal still draws, with std 0)",
    "after_1_step:*: the first and last parameters after that Adam step",
    "after_noised_step:*: after a second train() with noise_multiplier=1.0, both sides seeded "
    "with torch.manual_seed(0) right before (the same torch.normal calls in the same order)",
]


def filled_model(package):
    """The package's Model on filled weights and inputs, and its eval()
    output; shared with opacus_cifar10."""
    model = package.Model(test="train", device="cpu", batch_size=BATCH_SIZE)
    fill.deterministic_fill(model.model)
    images = fill.deterministic_tensor("images", (BATCH_SIZE, 3, 32, 32))
    model.example_inputs = (images,)
    model.example_target = fill.deterministic_long("targets", (BATCH_SIZE,), 0, 10)
    return model, {"eval_output": model.eval()[0].detach().clone()}


def noised_step(model, results):
    """A second train() with the noise on, seeded as the C++ side seeds it."""
    import torch

    torch.manual_seed(0)
    model.train()
    reference.record_edges(model.model, "after_noised_step:", results)
    for value in results.values():
        assert torch.isfinite(value).all()
    return results


def compute(root):
    package = reference.load_model_package(root, MODEL)
    model, results = filled_model(package)
    net = model.model

    original = package.clip_and_accumulate_and_add_noise
    named = list(net.named_parameters())

    def noise_off(module):
        sample_grads = tuple(p.grad_sample for p in module.parameters())
        norms, _ = package.compute_norms(sample_grads)
        results["sample_norms"] = norms.detach().clone()
        results["grad_sample:" + named[0][0]] = named[0][1].grad_sample.detach().clone()
        results["grad_sample:" + named[-1][0]] = named[-1][1].grad_sample.detach().clone()
        original(module, noise_multiplier=0.0)
        reference.record_edges(net, "grad:", results, gradients=True)

    package.clip_and_accumulate_and_add_noise = noise_off
    try:
        model.train()
    finally:
        package.clip_and_accumulate_and_add_noise = original
    reference.record_edges(net, "after_1_step:", results)
    return noised_step(model, results)
