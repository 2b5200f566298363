"""Loads a TorchBench model's own code from a pytorch/benchmark checkout and
runs its own train()/eval() on deterministically filled weights and inputs.

TorchBench's package __init__ pulls in its whole framework (components/,
install scripts, yaml configs); a model's code needs only a few names from it.
These are given as small stand-ins, so each model's __init__.py, its network
classes and its train() run unchanged:
  torchbenchmark            a package rooted at the checkout's torchbenchmark/
  torchbenchmark.util.model BenchmarkModel: stores test, device, batch_size,
                            extra_args as the real base class does
  torchbenchmark.util.env_check.set_random_seed
  torchbenchmark.DATA_PATH    the data folder path (never opened)
"""

import importlib
import importlib.machinery
import pathlib
import sys
import types


class _BenchmarkModel:
    """What a model's __init__ reads from TorchBench's BenchmarkModel."""

    def __init__(self, test, device, jit=False, batch_size=None, extra_args=None):
        self.test = test
        self.device = device
        self.jit = jit
        self.batch_size = batch_size
        self.extra_args = extra_args or []
        self.dargs = types.SimpleNamespace(precision="fp32")
        self.opt_args = types.SimpleNamespace()

    def _set_mode(self, train):
        self.model.train(train)

    def eval_in_nograd(self):
        # TorchBench runs eval() under no_grad unless a model says otherwise
        # (maml trains an inner model in its eval).
        return True


def _set_random_seed():
    import random

    import numpy as np
    import torch

    torch.manual_seed(1337)
    random.seed(1337)
    np.random.seed(1337)


class _StandIn(types.ModuleType):
    """A module the golden path never uses: any name it is asked for is an
    empty class (module-level `class X(gym.Wrapper)` still defines)."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = type(name, (), {})
        setattr(self, name, value)
        return value


def load_model_package(root, name, absent=()):
    """Imports torchbenchmark.models.<name> from the checkout at `root`.

    `absent` names modules the model imports but never uses on the path the
    golden check runs (e.g. dlrm's module-level `import onnx`, for export
    only); each becomes a stand-in, so nothing is installed for it."""
    root = pathlib.Path(root)
    for module in absent:
        if module not in sys.modules:
            stand_in = _StandIn(module)
            # torch._dynamo's import scan calls find_spec on loaded modules.
            stand_in.__spec__ = importlib.machinery.ModuleSpec(module, None)
            sys.modules[module] = stand_in
    package = sys.modules.get("torchbenchmark")
    if package is None:
        package = types.ModuleType("torchbenchmark")
        package.__path__ = [str(root / "torchbenchmark")]
        package.REPO_PATH = str(root)
        # Read at import by models with bundled inputs (pytorch_stargan); the
        # golden path never opens it.
        package.DATA_PATH = str(root / "torchbenchmark" / "data" / ".data")
        sys.modules["torchbenchmark"] = package
        util = types.ModuleType("torchbenchmark.util")
        util.__path__ = [str(root / "torchbenchmark" / "util")]
        sys.modules["torchbenchmark.util"] = util
        model = types.ModuleType("torchbenchmark.util.model")
        model.BenchmarkModel = _BenchmarkModel
        sys.modules["torchbenchmark.util.model"] = model
        env_check = types.ModuleType("torchbenchmark.util.env_check")
        env_check.set_random_seed = _set_random_seed
        sys.modules["torchbenchmark.util.env_check"] = env_check
        models = types.ModuleType("torchbenchmark.models")
        models.__path__ = [str(root / "torchbenchmark" / "models")]
        sys.modules["torchbenchmark.models"] = models
    return importlib.import_module(f"torchbenchmark.models.{name}")


def record_edges(module, prefix, out, gradients=False):
    """The twin of the C++ RecordEdgeParameters: the first and last
    parameters in registration order, or their gradients."""
    named = list(module.named_parameters())
    if not named:
        return
    for name, p in (named[0], named[-1]):
        value = p.grad if gradients else p
        if value is None:
            raise ValueError(f"parameter {name} has no gradient")
        # Sparse gradients (EmbeddingBag(sparse=True)) are compared dense.
        out[prefix + name] = (value.to_dense() if value.is_sparse else value).detach().clone()


def add_outputs(prefix, value, out):
    """Adds a tensor as `prefix`, or a tuple's tensors as `prefix.<i>`."""
    if isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            out[f"{prefix}.{i}"] = v.detach().clone()
    else:
        out[prefix] = value.detach().clone()


def turn_off_dropout(module):
    """Puts every dropout layer in eval mode (its masks cannot be shared with
    C++); the twin of the C++ TurnOffDropout."""
    import torch

    for m in module.modules():
        if isinstance(m, torch.nn.modules.dropout._DropoutNd):
            m.eval()


class StepRecorder:
    """Records, during the first optimizer step of a reference train(), the
    network's last output ("output", or "output.<i>" for a tuple), what its
    criterion returned ("loss", or "loss.<i>" for each call in order) and
    the edge gradients, taken just before the optimizer updates anything."""

    def __init__(self, net, optimizer, criterion=None):
        self.results = {}
        self._output = None
        self._losses = []
        self._handles = []
        # A wrapper rather than a forward hook: some references call
        # net.forward(...) directly, which skips hooks.
        original = net.forward

        def forward(*args, **kwargs):
            self._output = original(*args, **kwargs)
            return self._output

        net.forward = forward
        if criterion is not None:
            self._handles.append(criterion.register_forward_hook(self._on_loss))
        self._handles.append(optimizer.register_step_pre_hook(self._on_step))
        self._net = net

    def _on_loss(self, module, args, output):
        if not self.results:
            self._losses.append(output)

    def _on_step(self, optimizer, args, kwargs):
        if self.results:
            return
        add_outputs("output", self._output, self.results)
        if len(self._losses) == 1:
            add_outputs("loss", self._losses[0], self.results)
        elif self._losses:
            add_outputs("loss", tuple(self._losses), self.results)
        record_edges(self._net, "grad:", self.results, gradients=True)

    def close(self):
        for handle in self._handles:
            handle.remove()
        del self._net.forward


def record_two_train_steps(net, optimizer, criterion, train, results):
    """Runs a reference's own train() twice: the first call's output, losses
    and edge gradients (StepRecorder), then the edge parameters after both
    ("after_2_steps:<name>")."""
    recorder = StepRecorder(net, optimizer, criterion)
    try:
        train()
        train()
    finally:
        recorder.close()
    results.update(recorder.results)
    record_edges(net, "after_2_steps:", results)


def stub_torchtext_legacy():
    """Empty stand-ins for the torchtext-legacy classes some references import
    at module level (attention_is_all_you_need_pytorch's train.py, which
    nvidia_deeprecommender imports too); torchtext is not installed."""
    names = {"field": ["Field"], "data": ["Dataset"], "iterator": ["BucketIterator"],
             "translation": ["TranslationDataset"]}
    package = types.ModuleType("torchbenchmark.util.torchtext_legacy")
    package.__path__ = []
    sys.modules[package.__name__] = package
    for module_name, classes in names.items():
        module = types.ModuleType(f"{package.__name__}.{module_name}")
        for cls in classes:
            setattr(module, cls, type(cls, (), {}))
        sys.modules[module.__name__] = module


class RecordingFunctional:
    """Stands in for a reference module's torch.nn.functional (its `F`),
    recording each cross_entropy call's (logits, loss); every other name is
    the real one's."""

    def __init__(self, functional):
        self._functional = functional
        self.calls = []

    def __getattr__(self, name):
        return getattr(self._functional, name)

    def cross_entropy(self, logits, target, *args, **kwargs):
        loss = self._functional.cross_entropy(logits, target, *args, **kwargs)
        self.calls.append((logits, loss))
        return loss
