"""pytorch_unet: TorchBench's milesial UNet through its own Model.eval() and Model.train()."""

import fill
import reference

MODEL = "pytorch_unet"
REFERENCE = ("torchbenchmark/models/pytorch_unet: UNet(3, 2, bilinear=True), dice_loss,"
             " Model.eval, Model.train")
MODE = "train"
BATCH_SIZE = 2
DTYPE = "float64"
# Small, with an odd width as the reference's 959, so every Up block pads.
HEIGHT = 64
WIDTH = 95
NOTES = [
    "run in float64 (weights and images filled in float32, then converted; the reference's"
    " .float() casts made float64): in float32 a 1e-7 relative change of the images moves the"
    " first conv's gradient by 9e-4 relative and, through RMSprop's g / sqrt(v) of tiny"
    " gradients, its weights after a step by 6e-4 (measured), beyond the 1e-4 bar",
    f"batch 2 at {HEIGHT}x{WIDTH} (the reference's 640x959 is too slow for a unit test; the"
    " odd width makes every Up block pad by one column, as 959 does)",
    "example_inputs filled as images (u); sample_masks = randint(0, 1, ...), all zeros, as the"
    " reference draws them",
    "eval_logits, eval_output: UNet logits and Model.eval()'s one-hot of their argmax, in eval"
    " mode on the filled running statistics, before training",
    "output, loss.ce, loss.dice, loss: the first train() call's logits, CrossEntropyLoss,"
    " dice_loss and their sum; grad:*: its edge gradients before the RMSprop step",
    "after_step:*: edge parameters and two running statistics after the first train() call;"
    " after_2_steps:*: edge parameters after a second call (its new RMSprop starts with empty"
    " momentum, lr 1e-5, weight decay 1e-8, momentum 0.9)",
]
RUNNING_STATS = ("inc.double_conv.1.running_mean", "up4.conv.double_conv.4.running_var")


def compute(root, perturbation=0.0):
    """The golden results; `perturbation` scales the inputs by 1 + it (for
    checking how far float32 rounding can move them)."""
    import torch

    package = reference.load_model_package(root, MODEL)
    model = package.Model(test="train", device="cpu", batch_size=BATCH_SIZE)
    net = model.model
    fill.deterministic_fill(net)
    net.double()
    images = fill.deterministic_tensor("images", (BATCH_SIZE, 3, HEIGHT, WIDTH)).double()
    model.example_inputs = images * (1 + perturbation) if perturbation else images
    model.sample_masks = torch.randint(0, 1, (BATCH_SIZE, HEIGHT, WIDTH), dtype=torch.int64)

    float_cast = torch.Tensor.float
    torch.Tensor.float = torch.Tensor.double
    try:
        return _run(model, package)
    finally:
        torch.Tensor.float = float_cast


def _run(model, package):
    """Model.eval() and two Model.train() calls, recorded."""
    import torch
    from torch.optim.optimizer import register_optimizer_step_pre_hook

    net = model.model
    results = {}
    with torch.no_grad():
        net.eval()
        results["eval_logits"] = net(model.example_inputs).detach().clone()
    results["eval_output"] = model.eval()[0].detach().clone()

    outputs, ce, dice = [], [], []
    original_forward = net.forward

    def forward(*args, **kwargs):
        outputs.append(original_forward(*args, **kwargs))
        return outputs[-1]

    original_dice = package.dice_loss

    def recorded_dice(*args, **kwargs):
        dice.append(original_dice(*args, **kwargs))
        return dice[-1]

    def on_step(optimizer, args, kwargs):
        if not any(k.startswith("grad:") for k in results):
            reference.record_edges(net, "grad:", results, gradients=True)

    net.forward = forward
    package.dice_loss = recorded_dice
    # train() builds its RMSprop and CrossEntropyLoss anew on every call, so
    # they are hooked globally.
    handles = [
        register_optimizer_step_pre_hook(on_step),
        torch.nn.modules.module.register_module_forward_hook(
            lambda m, a, out: ce.append(out) if isinstance(m, torch.nn.CrossEntropyLoss)
            else None),
    ]
    try:
        model.train()
        reference.record_edges(net, "after_step:", results)
        buffers = dict(net.named_buffers())
        for name in RUNNING_STATS:
            results["after_step:" + name] = buffers[name].detach().clone()
        model.train()
    finally:
        del net.forward
        package.dice_loss = original_dice
        for handle in handles:
            handle.remove()
    reference.record_edges(net, "after_2_steps:", results)
    if len(outputs) != 2 or len(ce) != 2 or len(dice) != 2:
        raise RuntimeError(f"expected 2 forwards and losses, got {len(outputs)}, {len(ce)}, "
                           f"{len(dice)}")
    results["output"] = outputs[0].detach().clone()
    results["loss.ce"] = ce[0].detach().clone()
    results["loss.dice"] = dice[0].detach().clone()
    results["loss"] = (ce[0] + dice[0]).detach().clone()
    assert all(torch.isfinite(v).all() for v in results.values())
    return results
