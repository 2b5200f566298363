"""dcgan: TorchBench's DCGAN through its own Model.eval() and Model.train()."""

import fill
import reference

MODEL = "dcgan"
REFERENCE = "torchbenchmark/models/dcgan: Generator, Discriminator, Model.eval, Model.train"
MODE = "train"
BATCH_SIZE = 4
DTYPE = "float32"
NZ = 100
EPOCHS = 5
LOSS_NAMES = ("errD_real", "errD_fake", "errG")
NOTES = [
    "filled by the names of a root holding netG and netD (the reference's Model.netG and"
    " Model.model); exmaple_inputs filled as images (u), the five randn noises of train()"
    " as noise.<epoch> (u)",
    "eval_output: Model.eval() (no_grad; netD stays in train mode, so BatchNorm uses batch"
    " statistics, as the reference never calls .eval()); D's buffers are restored after it,"
    " since the C++ Eval leaves the running statistics alone",
    "epoch<e>:errD_real|errD_fake|errG: every BCELoss of one train() call (5 epochs);"
    " epoch<e>:fake: G's output in each epoch",
    "grad:netD.*, grad:netG.*: edge gradients before the first optimizerD and optimizerG steps",
    "after_train:*: edge parameters and two running statistics after the train() call"
    " (Adam lr 2e-4, betas 0.5/0.999, 5 steps of each optimizer)",
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
    model.exmaple_inputs = fill.deterministic_tensor("images", (BATCH_SIZE, 3, 64, 64))

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
    noises = iter([fill.deterministic_tensor(f"noise.{e}", (BATCH_SIZE, NZ, 1, 1))
                   for e in range(EPOCHS)])
    randn = torch.randn

    def filled_randn(*size, **kwargs):
        assert tuple(size) == (BATCH_SIZE, NZ, 1, 1), size
        return next(noises)

    torch.randn = filled_randn
    try:
        model.train()
    finally:
        torch.randn = randn
        for handle in handles:
            handle.remove()
    assert len(losses) == 3 * EPOCHS and len(fakes) == EPOCHS
    for k, loss in enumerate(losses):
        results[f"epoch{k // 3}:{LOSS_NAMES[k % 3]}"] = loss.detach().clone()
    for e, fake in enumerate(fakes):
        results[f"epoch{e}:fake"] = fake.detach().clone()
    reference.record_edges(netD, "after_train:netD.", results)
    reference.record_edges(netG, "after_train:netG.", results)
    buffers = dict(nets.named_buffers())
    for name in RUNNING_STATS:
        results["after_train:" + name] = buffers[name].detach().clone()
    assert all(torch.isfinite(v).all() for v in results.values())
    return results
