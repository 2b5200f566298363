"""maml: TorchBench's Meta learner through its own Model.eval() (a full meta-training step)."""

import fill
import reference
import stand_ins

MODEL = "maml"
REFERENCE = "torchbenchmark/models/maml: Meta.forward_train, Learner.forward, Model.eval"
MODE = "eval"
BATCH_SIZE = 1
DTYPE = "float64"
TASKS = 2
NOTES = [
    "one Model.eval() call (Meta.forward_train: per task 5 first-order inner steps, then the"
    " meta Adam step) on 2 filled tasks instead of 32 (the task count is the inputs' first"
    " dimension: the same code path), in float64 (the float32 fill converted)",
    "inputs filled as x_spt (u, 2x5x1x28x28), y_spt (0..4), x_qry (u, 2x75x1x28x28), y_qry",
    "accs: eval()'s output; loss: losses_q[-1] / task_num; query_logits: the last task's"
    " logits after 5 inner steps (both from a recording F.cross_entropy)",
    "grad:net.vars.0|17: the meta-gradients; after_step:*: those weights and two running"
    " statistics (net.vars_bn) after the call",
]



def compute(root):
    import torch

    package = reference.load_model_package(root, MODEL)
    model = package.Model(test="eval", device="cpu", jit=False)
    meta = model.module
    fill.deterministic_fill(meta)
    meta.double()  # In place: meta_optim keeps the parameters.
    setsz, querysz = 5, 75
    model.example_inputs = (
        fill.deterministic_tensor("x_spt", (TASKS, setsz, 1, 28, 28)).double(),
        fill.deterministic_long("y_spt", (TASKS, setsz), 0, 5),
        fill.deterministic_tensor("x_qry", (TASKS, querysz, 1, 28, 28)).double(),
        fill.deterministic_long("y_qry", (TASKS, querysz), 0, 5),
    )
    meta_module = package.meta
    recording = reference.RecordingFunctional(meta_module.F)
    meta_module.F = recording
    try:
        (accs,) = model.eval()
    finally:
        meta_module.F = recording._functional
    # Per task: the k=0 support loss, two no_grad query losses, then a
    # support and a query loss for each of steps 1..4.
    assert len(recording.calls) == 11 * TASKS, len(recording.calls)
    last_query = [recording.calls[11 * t + 10] for t in range(TASKS)]
    results = {
        "accs": accs.detach().clone(),
        "loss": (sum(loss for _, loss in last_query) / TASKS).detach().clone(),
        "query_logits": last_query[-1][0].detach().clone(),
    }
    params = dict(meta.named_parameters())
    for name in ("net.vars.0", "net.vars.17"):
        results["grad:" + name] = params[name].grad.detach().clone()
        results["after_step:" + name] = params[name].detach().clone()
    for name in ("net.vars_bn.0", "net.vars_bn.7"):
        results["after_step:" + name] = params[name].detach().clone()
    assert all(torch.isfinite(v).all() for v in results.values())
    return results


def prepare(root, name, mode, batch_size, device, stack):
    # maml's Model takes jit positionally (TorchBench passes it).
    return stand_ins.plain(root, name, mode, batch_size, device, stack, jit=False)
