"""functorch_maml_omniglot: TorchBench's functorch MAML through its own Model.eval() and Model.train()."""

import fill
import reference
from adapters import maml_omniglot

MODEL = "functorch_maml_omniglot"
REFERENCE = ("torchbenchmark/models/functorch_maml_omniglot: loss_for_task, Model.eval,"
             " Model.train (functorch vmap + grad)")
MODE = "train"
BATCH_SIZE = 1
DTYPE = "float64"
TASKS = maml_omniglot.TASKS
NOTES = [
    "the reference's own code (functorch's make_functional_with_buffers and grad from torch"
    " 2.14.1, its loss_for_task); batch.pt (Git LFS, absent) replaced by filled meta_inputs as"
    " for maml_omniglot: 2 tasks instead of 32, float64",
    "vmap(loss_for_task) runs as a loop over the tasks stacking the outputs: under vmap,"
    " torch 2.14.1's batched batch_norm gives a second-order meta-gradient 5e-4 (relative) off"
    " the exact one (measured: the loop, higher's maml_omniglot and a hand-written batch norm"
    " under vmap all agree with each other to 1e-15), which the C++ port computes",
    "eval_output: Model.eval() (batch statistics: track_running_stats=False)",
    "qry_losses, qry_accs: loss_for_task's outputs in one train() call",
    "grad:*: edge meta-gradients of the functional copy's parameters before Adam steps;"
    " after_step:*: those parameters after the step (the copy train() then drops)",
]


def compute(root):
    import torch
    import torch.optim.optimizer as optimizer_module

    package, model = maml_omniglot.build(root, MODEL, "train")
    results = {}
    results["eval_output"] = model.eval()[0].detach().clone()

    outputs = {}
    vmap = package.vmap

    def looping_vmap(fn):
        """vmap's contract as a loop over the leading dimension (see NOTES)."""
        def run(*inputs):
            outs = [fn(*(t[i] for t in inputs)) for i in range(inputs[0].shape[0])]
            out = tuple(torch.stack(o) for o in zip(*outs))
            outputs["qry_losses"], outputs["qry_accs"] = out
            return out
        return run

    def before_step(optimizer, args, kwargs):
        params = optimizer.param_groups[0]["params"]
        results["grad:0.weight"] = params[0].grad.detach().clone()
        results["grad:13.bias"] = params[-1].grad.detach().clone()

    def after_step(optimizer, args, kwargs):
        params = optimizer.param_groups[0]["params"]
        results["after_step:0.weight"] = params[0].detach().clone()
        results["after_step:13.bias"] = params[-1].detach().clone()

    handles = [optimizer_module.register_optimizer_step_pre_hook(before_step),
               optimizer_module.register_optimizer_step_post_hook(after_step)]
    package.vmap = looping_vmap
    try:
        model.train()
    finally:
        package.vmap = vmap
        for handle in handles:
            handle.remove()
    results["qry_losses"] = outputs["qry_losses"].detach().clone()
    results["qry_accs"] = outputs["qry_accs"].detach().clone()
    assert len(results) == 7, sorted(results)
    assert all(torch.isfinite(v).all() for v in results.values())
    return results


prepare = maml_omniglot.prepare  # maml_omniglot's batch.pt, which it reads too
