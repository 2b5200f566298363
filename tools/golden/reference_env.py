"""TorchBench's own Model classes built on this machine, and their steps.

build_step constructs a TorchBench-referenced model through construct():
TorchBench's code runs unchanged, and where its __init__ reaches for
something this machine lacks, a stand-in takes its place for the
construction only:
  - a module the model imports but its step never runs (export, logging,
    data-set download code): an empty stand-in module;
  - a data folder install.py would have downloaded: synthetic files in the
    format and at the sizes the model reads, in a temporary DATA_PATH;
  - downloaded weights: the model's own initialisation (timing does not
    depend on the values, only on the shapes).

What a model needs is its adapter's (adapters/<model>.py), as TorchBench
keeps each model's knowledge in its own __init__.py: an adapter's optional
prepare(root, name, mode, batch_size, device, stack) -> Model builds
TorchBench's Model with its stand-ins (stand_ins.py), entering each patch
into `stack` (a contextlib.ExitStack closed once the Model is built, which
restores what was patched), or raises why the model cannot be built here.
This module finds the adapter by the model's name; a model without one
(or without prepare) is built as it is.
"""

import contextlib
import importlib

import reference
import stand_ins


def _squeezenet1_1(root, name, mode, batch_size, device, stack):
    import types

    # SqueezeNet1_1_Weights.IMAGENET1K_V1.
    stand_ins.own_initialisation(stack, "squeezenet1_1")
    model = stand_ins.plain(root, name, mode, batch_size, device, stack)
    # TorchVisionModel.eval reads dynamo and opt_args.cudagraph, which
    # TorchBench's BenchmarkModel.__init__ sets (False, False without extra
    # arguments) and reference's stand-in base class does not.
    if not hasattr(model, "dynamo"):
        model.dynamo = False
    if not hasattr(model.opt_args, "cudagraph"):
        model.opt_args = types.SimpleNamespace(**vars(model.opt_args), cudagraph=False)
    return model


# Models without a golden adapter whose Model still needs a stand-in.
WITHOUT_ADAPTER = {"squeezenet1_1": _squeezenet1_1}


def adapter(name):
    """adapters/<name>.py, or None when the model has none."""
    try:
        return importlib.import_module(f"adapters.{name}")
    except ModuleNotFoundError as e:
        if e.name != f"adapters.{name}":
            raise
        return None


def construct(root, name, mode, batch_size, device="cpu"):
    """TorchBench's torchbenchmark.models.<name>.Model(test=mode, device,
    batch_size), with the stand-ins the model needs here."""
    prepare = getattr(adapter(name), "prepare", None) or WITHOUT_ADAPTER.get(name)
    if prepare is None:
        package = reference.load_model_package(root, name)
        return package.Model(test=mode, device=device, batch_size=batch_size)
    with contextlib.ExitStack() as stack:
        return prepare(root, name, mode, batch_size, device, stack)


def build_step(root, name, mode, batch_size, device="cpu"):
    """TorchBench's own Model(test=mode, device, batch_size), built through
    construct (the stand-ins its environment needs here), and its step
    as TorchBench's BenchmarkModel.invoke runs it: train() (or the staged
    forward / backward / optimizer of a model that defines them), eval()
    under no_grad unless the model's eval_in_nograd() says otherwise.
    Returns (model, step)."""
    import torch

    model = construct(root, name, mode, batch_size, device)
    if mode == "train":
        if all(hasattr(model, a) for a in ("forward", "backward", "optimizer")):
            def step():
                opt = getattr(model, "opt", None)
                if opt:
                    opt.zero_grad()
                losses = model.forward()
                model.backward(losses)
                if opt:
                    model.optimizer()
            return model, step
        return model, model.train
    grad = eval_needs_grad(model)

    def step():
        with torch.set_grad_enabled(grad):
            model.eval()
    return model, step


def eval_needs_grad(model):
    """Whether TorchBench's BenchmarkModel.invoke runs the Model's eval()
    with autograd on: it runs it under no_grad unless the model's
    eval_in_nograd() says False (maml trains an inner model in its eval)."""
    return not model.eval_in_nograd()
