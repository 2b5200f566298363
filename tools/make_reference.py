#!/usr/bin/env python3
"""Builds a Python reference model and writes its weights and outputs.

The C++ fidelity test (tests/models/fidelity_test.cpp) loads the weights into
the port by state_dict name and compares the port's outputs with these.

    make_reference.py --reference torchvision:resnet50 \
        --input-shape 2,3,224,224 --seed 0 --out DIR

writes
    DIR/torchvision_resnet50.weights.safetensors  the state_dict before any
                                                  forward
    DIR/torchvision_resnet50.io.safetensors       input, eval_output,
                                                  train_output

`eval_output` is model.eval() on `input`; `train_output` is model.train() on
the same input, run after the eval forward and under no_grad, with dropout
layers kept in eval mode (their masks cannot be shared with C++), so batch
norm normalises with batch statistics while its running stats start from the
saved ones. Everything is float32 on CPU. Any failure exits non-zero with a
one-line message.
"""

import argparse
import os
import re
import sys
import tempfile


class _OneLineParser(argparse.ArgumentParser):
    def error(self, message):
        raise SystemExit(f"make_reference: error: {message}")


def _file_stem(reference):
    """Turns "<package>:<name>" into the file stem the C++ test expects."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", reference)


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
    parser = _OneLineParser(description=__doc__.splitlines()[0])
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
    # Cloned: tied weights share storage, which save_file refuses, and the
    # forwards below must not change what is saved.
    weights = {k: v.detach().clone().contiguous()
               for k, v in model.state_dict().items()}

    generator = torch.Generator().manual_seed(args.seed)
    inputs = torch.randn(shape, generator=generator, dtype=torch.float32)
    with torch.no_grad():
        model.eval()
        eval_output = _output_tensor(model(inputs), torch)
        model.train()
        # Dropout masks come from the RNG stream, which the C++ port cannot
        # share, so the train-mode forward compares with dropout off (batch
        # norm still uses batch statistics). The C++ test does the same.
        for module in model.modules():
            if isinstance(module, torch.nn.modules.dropout._DropoutNd):
                module.eval()
        train_output = _output_tensor(model(inputs), torch)

    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, _file_stem(args.reference))
    _save_atomically(save_file, weights, stem + ".weights.safetensors")
    # Written last: the test takes the io file's presence to mean "done".
    _save_atomically(save_file, {
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
        message = str(e).splitlines()[0] if str(e) else type(e).__name__
        sys.exit(f"make_reference: error: {type(e).__name__}: {message}")
