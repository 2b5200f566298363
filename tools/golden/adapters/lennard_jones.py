"""lennard_jones: TorchBench's LJ MLP through its own Model.eval() and Model.train()."""

import fill
import reference

MODEL = "lennard_jones"
REFERENCE = "torchbenchmark/models/lennard_jones: Model.eval, Model.train (vmap(jacrev(model)))"
MODE = "train"
BATCH_SIZE = 1000
DTYPE = "float32"
NOTES = [
    "the reference's own inputs (linspace distances along +x, analytic targets); weights filled",
    "eval_energies, eval_forces: Model.eval(); loss: make_prediction's loss_fn in one train()"
    " call; grad:*: edge gradients before its Adam step (lr 1e-3); after_step:*: edge parameters"
    " after it",
]


def compute(root):
    package = reference.load_model_package(root, MODEL)
    model = package.Model(test="train", device="cpu", batch_size=BATCH_SIZE)
    fill.deterministic_fill(model.model)
    results = {}
    energies, forces = model.eval()
    results["eval_energies"] = energies.detach().clone()
    results["eval_forces"] = forces.detach().clone()

    losses = []
    loss_fn = package.loss_fn

    def recorded_loss_fn(*args):
        losses.append(loss_fn(*args))
        return losses[-1]

    package.loss_fn = recorded_loss_fn
    handle = model.optimizer.register_step_pre_hook(
        lambda optimizer, args, kwargs: reference.record_edges(
            model.model, "grad:", results, gradients=True))
    try:
        model.train()
    finally:
        package.loss_fn = loss_fn
        handle.remove()
    results["loss"] = losses[0].detach().clone()
    reference.record_edges(model.model, "after_step:", results)
    return results
