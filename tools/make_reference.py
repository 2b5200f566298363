#!/usr/bin/env python3
"""Builds a Python reference model and writes its weights and outputs.

The C++ fidelity test (tests/models/fidelity_test.cpp) loads the weights into
the port by state_dict name and compares the port's outputs with these.

    make_reference.py --reference torchvision:resnet50 \
        --input-shape 2,3,224,224 --seed 0 --out DIR

writes
    DIR/torchvision_resnet50.weights.safetensors  the state_dict, randomised
                                                  (below), before any
                                                  compared forward
    DIR/torchvision_resnet50.io.safetensors       format_version, input,
                                                  eval_output, train_output

`eval_output` is model.eval() on `input`; `train_output` is model.train() on
the same input, run after the eval forward and under no_grad, with dropout
layers kept in eval mode (their masks cannot be shared with C++), so batch
norm normalises with batch statistics while its running stats start from the
saved ones. Everything is float32 on CPU. Any failure exits non-zero with a
one-line message.

Freshly initialised weights make a weak reference: batch norm's running
statistics (mean 0, var 1) and affine (1, 0) make eval() nearly the identity
on a signal that fades to ~1e-9 through the network, zero-init gains switch
whole branches off, and zero biases hide a port that drops them. So before
the weights are saved, with a generator seeded from --seed:

  * every constant parameter outside a normalisation layer (all elements
    equal: biases, nfnet's gains and skipinit scalars, layer scales) is
    redrawn, U(-0.1, 0.1) when its name ends in "bias", else U(0.5, 1.5);
  * every normalisation layer (batch/group/layer norm, timm's norm and
    norm-act layers: any module with parameters of its own whose type name
    ends in Norm or NormAct, optionally followed by e.g. 2d, or that keeps
    running_mean/running_var) gets weight U(0.5, 2) and bias U(-1, 1);
  * batch norm's running statistics are fitted to the per-channel mean and
    variance of that layer's input in one eval() forward of a separate
    calibration batch (variance floored at 0.1 x the layer's mean channel
    variance), then moved off them: running_mean = mean + U(-1, 1) * std,
    running_var = var * U(0.5, 2).

Fitting keeps every layer's eval() output near unit scale, where no fixed
range could (a fresh model's activation scale varies by orders of magnitude
between layers); moving off the fit makes eval() differ from train(), and
with the affine ranges pushes some batch norm outputs past 6 so that ReLU6
clips.
"""

import argparse
import os
import re
import sys
import tempfile

from tbench import errors, results


# Written into the io file; the C++ test (kReferenceFormatVersion) remakes
# a reference whose version differs, so a cached reference never outlives a
# change here. Bump both whenever what this script writes changes.
FORMAT_VERSION = 3


def _file_stem(reference):
    """Turns "<package>:<name>" into the file stem the C++ test expects."""
    return results.safe_name(reference)


def _build(package, name):
    if package == "torchvision":
        import torchvision

        builder = getattr(torchvision.models, name, None)
        if builder is None or not callable(builder):
            raise ValueError(f"torchvision.models has no model '{name}'")
        return builder(weights=None)
    if package == "timm":
        import timm

        return timm.create_model(name, pretrained=False)
    raise ValueError(f"reference package '{package}' is not supported yet")


def _is_norm(module, torch):
    # By type name too, for timm's own norm layers (LayerNorm2d, RmsNorm,
    # GroupNormAct, ...), but anchored at the end, since nfnet's
    # NormFreeBlock is no norm layer and its skipinit_gain is a constant to
    # redraw; holding parameters of its own leaves out ConvNormAct.
    by_name = (re.search(r"Norm(Act)?(\d+d)?$", type(module).__name__)
               is not None
               and any(True for _ in module.parameters(recurse=False)))
    return (isinstance(module, (torch.nn.modules.batchnorm._NormBase,
                                torch.nn.GroupNorm, torch.nn.LayerNorm))
            or by_name
            or hasattr(module, "running_mean")
            or hasattr(module, "running_var"))


def _dropout_to_eval(model, torch):
    # Dropout masks come from the RNG stream, which the C++ port cannot
    # share (the C++ test turns dropout off in train() too).
    for module in model.modules():
        if isinstance(module, torch.nn.modules.dropout._DropoutNd):
            module.eval()


def _randomise(model, calibration_input, generator, torch):
    """Redraws what a fresh model holds constant; see the module docstring."""

    def uniform(tensor, low, high):
        drawn = torch.rand(tensor.shape, generator=generator,
                           dtype=torch.float32)
        return (drawn * (high - low) + low).to(tensor.dtype)

    norms = [m for m in model.modules() if _is_norm(m, torch)]
    in_norm = {id(p) for m in norms for p in m.parameters(recurse=False)}
    with torch.no_grad():
        for name, p in model.named_parameters():
            if id(p) in in_norm or p.numel() == 0:
                continue
            if not p.is_floating_point() or not (p == p.flatten()[0]).all():
                continue
            if name.endswith("bias"):
                p.copy_(uniform(p, -0.1, 0.1))
            else:
                p.copy_(uniform(p, 0.5, 1.5))
        for m in norms:
            if getattr(m, "weight", None) is not None:
                m.weight.copy_(uniform(m.weight, 0.5, 2.0))
            if getattr(m, "bias", None) is not None:
                m.bias.copy_(uniform(m.bias, -1.0, 1.0))

        # Running statistics are fitted in one eval() forward, each layer
        # just before it runs, so each sees the input the eval() forward
        # below gives it (already shaped by the layers before it).
        def calibrate(module, args):
            x = args[0]
            dims = [d for d in range(x.dim()) if d != 1]
            mean = x.mean(dim=dims)
            # Floored: a channel nearly constant on this batch would
            # otherwise blow up on the test input.
            var = x.var(dim=dims, unbiased=False)
            var = var.clamp(min=0.1 * var.mean().item())
            module.running_mean.copy_(
                mean + uniform(mean, -1.0, 1.0) * var.sqrt())
            module.running_var.copy_(var * uniform(var, 0.5, 2.0))
            hooks.pop(id(module)).remove()

        hooks = {}
        for m in norms:
            if (getattr(m, "running_mean", None) is not None
                    and getattr(m, "running_var", None) is not None):
                hooks[id(m)] = m.register_forward_pre_hook(calibrate)
        model.eval()
        model(calibration_input)
        if hooks:
            raise RuntimeError("a batch norm layer did not run in forward()")


def _output_tensor(output, torch):
    if isinstance(output, torch.Tensor):
        return output
    raise TypeError(
        f"model returned {type(output).__name__}, expected a single tensor")


def _save_atomically(save_file, tensors, path):
    # A half-written file must never look like a finished reference.
    directory = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
    os.close(fd)
    try:
        save_file(tensors, tmp)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide it from others.
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def main(argv):
    parser = errors.ArgumentParser(description=__doc__.splitlines()[0],
                                   tool="make_reference: error", status=1)
    parser.add_argument("--reference", required=True,
                        help='"<package>:<name>", e.g. torchvision:resnet50')
    parser.add_argument("--input-shape", required=True,
                        help="comma-separated, e.g. 2,3,224,224")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True, help="output directory")
    args = parser.parse_args(argv)

    package, sep, name = args.reference.partition(":")
    if not sep or not package or not name:
        raise ValueError(
            f"--reference must be '<package>:<name>', got '{args.reference}'")
    try:
        shape = [int(d) for d in args.input_shape.split(",")]
    except ValueError:
        raise ValueError(f"bad --input-shape '{args.input_shape}'") from None
    if not shape or any(d <= 0 for d in shape):
        raise ValueError(f"bad --input-shape '{args.input_shape}'")

    import torch
    from safetensors.torch import save_file

    torch.manual_seed(args.seed)
    model = _build(package, name).float().cpu()
    generator = torch.Generator().manual_seed(args.seed)
    inputs = torch.randn(shape, generator=generator, dtype=torch.float32)
    calibration_input = torch.randn(shape, generator=generator,
                                    dtype=torch.float32)
    _randomise(model, calibration_input, generator, torch)
    # Cloned: tied weights share storage, which save_file refuses, and the
    # forwards below must not change what is saved.
    weights = {k: v.detach().clone().contiguous()
               for k, v in model.state_dict().items()}

    with torch.no_grad():
        model.eval()
        eval_output = _output_tensor(model(inputs), torch)
        # Batch norm normalises with batch statistics here; dropout is off.
        model.train()
        _dropout_to_eval(model, torch)
        train_output = _output_tensor(model(inputs), torch)

    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, _file_stem(args.reference))
    _save_atomically(save_file, weights, stem + ".weights.safetensors")
    # Written last: the test takes the io file's presence to mean "done".
    _save_atomically(save_file, {
        "format_version": torch.tensor([FORMAT_VERSION], dtype=torch.int64),
        "input": inputs.contiguous(),
        "eval_output": eval_output.float().contiguous(),
        "train_output": train_output.float().contiguous(),
    }, stem + ".io.safetensors")
    print(f"make_reference: wrote {stem}.{{weights,io}}.safetensors")


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except SystemExit:
        raise
    except Exception as e:  # noqa: BLE001 - one line for any failure.
        errors.exit_one_line("make_reference", e)
