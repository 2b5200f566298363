"""maml_omniglot: TorchBench's higher-based MAML through its own Model.eval() and Model.train()."""

import fill
import reference
import stand_ins

MODEL = "maml_omniglot"
REFERENCE = "torchbenchmark/models/maml_omniglot: Model.eval, Model.train (higher 0.2.1)"
MODE = "train"
BATCH_SIZE = 32
DTYPE = "float64"
TASKS = 2
INNER_ITER = 5
NOTES = [
    "the reference's own code with the real higher 0.2.1 (tools/requirements.txt); batch.pt"
    " (Git LFS, absent) replaced by filled meta_inputs: x_spt (u, 2x25x1x28x28), y_spt (0..4),"
    " x_qry (u, 2x75x1x28x28), y_qry; 2 tasks instead of 32 (the task count is the inputs'"
    " first dimension: the same code path), in float64 (the float32 fill converted)",
    "eval_output: Model.eval() (eval-mode net on x_spt[0], filled running statistics)",
    "qry_loss.<task>, qry_logits (last task): one train() call's query losses and logits after"
    " 5 second-order inner SGD steps (lr 0.1), from a recording F.cross_entropy",
    "grad:*: edge meta-gradients summed over the tasks; after_step:*: edge parameters after"
    " train()'s Adam step (lr 1e-3)",
]



def filled_meta_inputs():
    return (
        fill.deterministic_array("x_spt", (TASKS, 25, 1, 28, 28)),
        fill.deterministic_integers("y_spt", (TASKS, 25), 0, 5),
        fill.deterministic_array("x_qry", (TASKS, 75, 1, 28, 28)),
        fill.deterministic_integers("y_qry", (TASKS, 75), 0, 5),
    )


def build(root, name, test):
    """The reference Model, with torch.load of the absent batch.pt answered by the fill."""
    import torch

    package = reference.load_model_package(root, name)
    load = torch.load
    torch.load = lambda *args, **kwargs: filled_meta_inputs()
    try:
        model = package.Model(test=test, device="cpu", jit=False)
    finally:
        torch.load = load
    fill.deterministic_fill(model.model)
    model.model.double()
    model.meta_inputs = tuple(t.double() if t.is_floating_point() else t
                              for t in model.meta_inputs)
    model.example_inputs = (model.meta_inputs[0][0],)
    return package, model


def compute(root):
    import torch

    package, model = build(root, MODEL, "train")
    results = {}
    results["eval_output"] = model.eval()[0].detach().clone()
    recording = reference.RecordingFunctional(package.F)
    package.F = recording
    try:
        model.train()
    finally:
        package.F = recording._functional
    calls_per_task = INNER_ITER + 1
    assert len(recording.calls) == calls_per_task * TASKS, len(recording.calls)
    for t in range(TASKS):
        logits, loss = recording.calls[calls_per_task * t + INNER_ITER]
        results[f"qry_loss.{t}"] = loss.detach().clone()
        results["qry_logits"] = logits.detach().clone()
    reference.record_edges(model.model, "grad:", results, gradients=True)
    reference.record_edges(model.model, "after_step:", results)
    assert all(torch.isfinite(v).all() for v in results.values())
    return results


def _meta_inputs(tasks):
    """batch.pt (Git LFS, absent here): higher's MAML Omniglot batch, a
    tuple of numpy arrays x_spt (tasks, 25, 1, 28, 28) float32, y_spt
    (tasks, 25) int64, x_qry (tasks, 75, 1, 28, 28), y_qry (tasks, 75): 5-way
    5-shot support, 15 queries per class."""
    import numpy as np

    rng = np.random.default_rng(0)
    return (rng.random((tasks, 25, 1, 28, 28), dtype=np.float32),
            rng.integers(0, 5, (tasks, 25)),
            rng.random((tasks, 75, 1, 28, 28), dtype=np.float32),
            rng.integers(0, 5, (tasks, 75)))


def prepare(root, name, mode, batch_size, device, stack):
    import torch

    package = reference.load_model_package(root, name)
    # torch.load of the absent batch.pt (maml_omniglot's, which
    # functorch_maml_omniglot reads too): its 32 tasks.
    stack.enter_context(stand_ins.attribute(torch, "load", lambda *args, **kwargs: _meta_inputs(32)))
    return package.Model(test=mode, device=device, jit=False, batch_size=batch_size)
