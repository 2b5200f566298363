"""pytorch_stargan: TorchBench's StarGAN through its own Solver.train() and eval()."""

import importlib
import os
import sys
import tempfile

import fill
import reference
import stand_ins

MODEL = "pytorch_stargan"
REFERENCE = ("torchbenchmark/models/pytorch_stargan: Solver (G, D, Adams), Solver.train with"
             " num_iters=1, Model.eval's G(x_real, c_trg_list[0])")
MODE = "train"
BATCH_SIZE = 2
DTYPE = "float64"
NOTES = [
    "run in float64 (weights filled in float32, then converted): in float32 the gradient"
    " penalty's double backward moves the gradient of D's first layer by 8e-4 relative for a"
    " 1e-7 relative input change (measured), beyond the 1e-4 bar across machines; in float64 a"
    " 1e-13 change moves no result by more than 1.4e-12",
    "batch 2 (the reference's batch is fixed at 16; the networks are batch-agnostic)",
    "Solver.G and Solver.D filled under the names of a root holding G and D; images filled (u),"
    " labels filled integers in {0, 1}; one prefetched batch, as the reference's loader",
    "randomness replaced: torch.randperm (target labels) returns the reversed order and"
    " torch.rand (the gradient penalty's alpha) returns alpha = 0.5 + 0.5 u",
    "eval_output: G in eval mode (InstanceNorm on its filled running statistics) on the images and"
    " create_labels(labels)[0], under no_grad, before training",
    "d_loss_*: the D step's losses; x_fake: G(x_real, c_trg); grad:D.*: D's edge gradients before"
    " its Adam step (lr 1e-4, betas 0.5/0.999); after_step:*: D's edge parameters and two of G's"
    " running statistics after the call (the G step does not run at iteration 0)",
]


def compute(root):
    import torch

    package = reference.load_model_package(root, MODEL)
    solver_module = importlib.import_module(f"torchbenchmark.models.{MODEL}.solver")
    main = importlib.import_module(f"torchbenchmark.models.{MODEL}.main")
    config = main.parse_config()
    config.num_iters = 1
    config.batch_size = BATCH_SIZE
    config.use_tensorboard = False
    config.device = "cpu"

    images = fill.deterministic_tensor("images", (BATCH_SIZE, 3, 128, 128), torch.float64)
    labels = fill.deterministic_long("labels", (BATCH_SIZE, 5), 0, 2).to(torch.float64)
    loader = [(images, labels)]  # Model.__init__'s prefetched single batch
    solver = solver_module.Solver(celeba_loader=loader, rafd_loader=None, config=config)
    nets = torch.nn.Module()
    nets.G, nets.D = solver.G, solver.D
    fill.deterministic_fill(nets)
    nets.double()  # In place: the solver's optimizers keep the parameters.

    results = {}
    with torch.no_grad():
        solver.G.eval()
        x, c_trg_list = next(solver.get_test_inputs())
        results["eval_output"] = solver.G(x, c_trg_list[0]).detach().clone()
        solver.G.train()

    losses = {}
    fakes = []

    def on_d_step(optimizer, args, kwargs):
        reference.record_edges(solver.D, "grad:D.", results, gradients=True)

    handles = [
        solver.d_optimizer.register_step_pre_hook(on_d_step),
        solver.G.register_forward_hook(lambda m, a, out: fakes.append(out)),
    ]
    alpha = fill.deterministic_tensor("alpha", (BATCH_SIZE, 1, 1, 1), torch.float64, 0.5, 0.5)
    randperm, rand = torch.randperm, torch.rand
    torch.randperm = lambda n, *a, **k: torch.arange(n - 1, -1, -1)
    torch.rand = lambda *a, **k: alpha
    item = torch.Tensor.item
    calls = []

    def logged_item(self):
        # Only train()'s own logging; the optimizers call item() too.
        if sys._getframe(1).f_code.co_filename.endswith("solver.py"):
            calls.append(self.detach().clone())
        return item(self)

    torch.Tensor.item = logged_item
    try:
        solver.train()
    finally:
        torch.randperm, torch.rand, torch.Tensor.item = randperm, rand, item
        for handle in handles:
            handle.remove()
    # train() logs the four D losses with .item(), in this order.
    for name, value in zip(("d_loss_real", "d_loss_fake", "d_loss_cls", "d_loss_gp"), calls):
        losses[name] = value
    if len(calls) != 4 or len(fakes) != 1:
        raise RuntimeError(f"expected 4 logged losses and 1 G call, got {len(calls)}, {len(fakes)}")
    results.update(losses)
    results["x_fake"] = fakes[0].detach().clone()
    reference.record_edges(solver.D, "after_step:D.", results)
    buffers = dict(nets.named_buffers())
    for key in ("G.main.1.running_mean", "G.main.19.running_var"):
        results["after_step:" + key] = buffers[key].detach().clone()
    return results


# CelebA's list_attr_celeba.txt attribute names, in its order.
CELEBA_ATTRIBUTES = (
    "5_o_Clock_Shadow Arched_Eyebrows Attractive Bags_Under_Eyes Bald Bangs Big_Lips Big_Nose"
    " Black_Hair Blond_Hair Blurry Brown_Hair Bushy_Eyebrows Chubby Double_Chin Eyeglasses Goatee"
    " Gray_Hair Heavy_Makeup High_Cheekbones Male Mouth_Slightly_Open Mustache Narrow_Eyes"
    " No_Beard Oval_Face Pale_Skin Pointy_Nose Receding_Hairline Rosy_Cheeks Sideburns Smiling"
    " Straight_Hair Wavy_Hair Wearing_Earrings Wearing_Hat Wearing_Lipstick Wearing_Necklace"
    " Wearing_Necktie Young").split()


def prepare(root, name, mode, batch_size, device, stack):
    import numpy as np
    from PIL import Image

    package = reference.load_model_package(root, name)
    data = stand_ins.temporary_data_path(stack, package)
    celeba = data / "pytorch_stargan_inputs" / "data" / "celeba"
    images = celeba / "images"
    images.mkdir(parents=True)
    # CelebA's aligned 178x218 JPEGs and attribute list: the first 3 rows
    # are the test split, the rest one training batch (num_iters = 1).
    rng = np.random.default_rng(0)
    rows = []
    for i in range(batch_size + 3):
        filename = f"{i + 1:06d}.jpg"
        Image.fromarray(rng.integers(0, 256, (218, 178, 3), dtype=np.uint8)).save(images / filename)
        values = rng.choice(["1", "-1"], len(CELEBA_ATTRIBUTES))
        rows.append(" ".join([filename, *values]))
    (celeba / "list_attr_celeba.txt").write_text(
        "\n".join([str(len(rows)), " ".join(CELEBA_ATTRIBUTES), *rows]) + "\n")
    # parse_config's log/model/sample/result folders are relative to the
    # working directory (makedirs creates them; the one-iteration step saves
    # nothing): a temporary folder instead.
    lasting = tempfile.TemporaryDirectory(prefix="tb_stargan_")
    parse_config = package.parse_config

    def config_in_temporary_folder(*args, **kwargs):
        config = parse_config(*args, **kwargs)
        for key in ("log_dir", "model_save_dir", "sample_dir", "result_dir"):
            setattr(config, key, os.path.join(lasting.name, getattr(config, key)))
        return config

    stack.enter_context(stand_ins.attribute(package, "parse_config", config_in_temporary_folder))
    model = package.Model(test=mode, device=device, batch_size=batch_size)
    return stand_ins.lasting_folder(model, lasting)
