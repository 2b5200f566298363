"""dcgan: TorchBench's DCGAN through its own Model.eval() and Model.train()."""

import fill
import reference

MODEL = "dcgan"
REFERENCE = "torchbenchmark/models/dcgan: Generator, Discriminator, Model.eval, Model.train"
MODE = "train"
BATCH_SIZE = 4
DTYPE = "float64"
NZ = 100
EPOCHS = 5
LOSS_NAMES = ("errD_real", "errD_fake", "errG")
GOLDEN_EPOCHS = 2
NOTES = [
    "run in float64 (the float32 fill converted; the reference's float32 labels made float64),"
    " recording the first two of train()'s five epochs: on filled weights the adversarial loop"
    " amplifies a 1e-7 relative input change to 0.5 in epoch 4's fakes (measured), beyond"
    " float32's reach across machines",
    "filled by the names of a root holding netG and netD (the reference's Model.netG and"
    " Model.model); exmaple_inputs filled as images (u), the five randn noises of train()"
    " as noise.<epoch> (u)",
    "eval_output: Model.eval() (no_grad; netD stays in train mode, so BatchNorm uses batch"
    " statistics, as the reference never calls .eval()); D's buffers are restored after it,"
    " since the C++ Eval leaves the running statistics alone",
    "epoch<e>:errD_real|errD_fake|errG: the BCELosses of epochs 0 and 1 of one train() call;"
    " epoch<e>:fake: G's output in them",
    "grad:netD.*, grad:netG.*: edge gradients before the first optimizerD and optimizerG steps",
    "after_epoch1:*: edge parameters and two running statistics after epoch 1"
    " (Adam lr 2e-4, betas 0.5/0.999, two steps of each optimizer)",
]
RUNNING_STATS = ("netD.main.9.running_var", "netG.main.1.running_mean")


def compute(root):
    import torch

    package = reference.load_model_package(root, MODEL)
    model = package.Model(test="train", device="cpu", batch_size=BATCH_SIZE)
    netG, netD = model.netG, model.model
    nets = torch.nn.Module()
    nets.netG, nets.netD = netG, netD
    fill.deterministic_fill(nets)
    nets.double()  # In place: the reference's optimizers keep the parameters.
    model.exmaple_inputs = fill.deterministic_tensor("images", (BATCH_SIZE, 3, 64, 64)).double()

    results = {}
    # Only the eval test sets this; eval() reads it.
    model.inference_just_descriminator = True
    saved = {k: v.clone() for k, v in netD.state_dict().items()}
    with torch.no_grad():
        results["eval_output"] = model.eval()[0].detach().clone()
    netD.load_state_dict(saved)

    losses = []
    fakes = []
    handles = [
        model.criterion.register_forward_hook(lambda m, a, out: losses.append(out)),
        netG.register_forward_hook(lambda m, a, out: fakes.append(out)),
    ]

    def first_step(prefix, net):
        def hook(optimizer, args, kwargs):
            if not any(k.startswith(prefix) for k in results):
                reference.record_edges(net, prefix, results, gradients=True)
        return hook

    handles.append(model.optimizerD.register_step_pre_hook(first_step("grad:netD.", netD)))
    handles.append(model.optimizerG.register_step_pre_hook(first_step("grad:netG.", netG)))
    noises = iter([fill.deterministic_tensor(f"noise.{e}", (BATCH_SIZE, NZ, 1, 1)).double()
                   for e in range(EPOCHS)])
    g_steps = []

    def after_epoch1(optimizer, args, kwargs):
        g_steps.append(1)
        if len(g_steps) == GOLDEN_EPOCHS:
            reference.record_edges(netD, "after_epoch1:netD.", results)
            reference.record_edges(netG, "after_epoch1:netG.", results)
            buffers = dict(nets.named_buffers())
            for name in RUNNING_STATS:
                results["after_epoch1:" + name] = buffers[name].detach().clone()

    handles.append(model.optimizerG.register_step_post_hook(after_epoch1))
    randn = torch.randn
    full = torch.full

    def float64_full(*args, **kwargs):
        if kwargs.get("dtype") is torch.float:
            kwargs["dtype"] = torch.float64
        return full(*args, **kwargs)

    def filled_randn(*size, **kwargs):
        assert tuple(size) == (BATCH_SIZE, NZ, 1, 1), size
        return next(noises)

    torch.randn = filled_randn
    torch.full = float64_full
    try:
        model.train()
    finally:
        torch.randn = randn
        torch.full = full
        for handle in handles:
            handle.remove()
    assert len(losses) == 3 * EPOCHS and len(fakes) == EPOCHS
    for k, loss in enumerate(losses[:3 * GOLDEN_EPOCHS]):
        results[f"epoch{k // 3}:{LOSS_NAMES[k % 3]}"] = loss.detach().clone()
    for e, fake in enumerate(fakes[:GOLDEN_EPOCHS]):
        results[f"epoch{e}:fake"] = fake.detach().clone()
    assert all(torch.isfinite(v).all() for v in results.values())
    return results
