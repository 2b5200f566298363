"""pytorch_CycleGAN_and_pix2pix: TorchBench's CycleGAN through its own training_loop(None) and
its test model's generator."""

import importlib
import tempfile
import types

import fill
import reference
import stand_ins

MODEL = "pytorch_CycleGAN_and_pix2pix"
REFERENCE = ("torchbenchmark/models/pytorch_CycleGAN_and_pix2pix: train_cyclegan.prepare_training_loop"
             " with Model.__init__'s train arguments, training_loop(None); test_cyclegan.get_model's"
             " netG for eval")
MODE = "train"
BATCH_SIZE = 1
DTYPE = "float64"
SIZE = 32
IMAGES_PER_EPOCH = 1  # kImagesPerEpoch of the C++ port
POOL_SIZE = 2
DRAWS = 64
NOTES = [
    "run in float64 (weights filled in float32, then converted): six adversarial Adam iterations"
    " on filled weights, as dcgan and pytorch_stargan",
    "32x32 images instead of 256x256 (same layers; the PatchGAN map is 2x2), batch 1, one filled"
    " (A.0, B.0) pair per epoch, as the port's data set; the loader, its shuffling, resize, crop"
    " and flip replaced by that list",
    "networks filled under the names of a root holding netG_A, netG_B, netD_A, netD_B; the eval"
    " model's netG filled under netG_A's names and run on eval_A (u)",
    "image pools of size 2 instead of 50, so that the swap path runs within the call; Python's"
    " random.uniform returns (1 + pool.uniform) / 2 and random.randint pool.randint in order",
    "iter0:* and iter5:*: the first and last iterations' eight losses; iter0:fake_B and"
    " iter0:rec_A; grad:*: edge gradients before the first G and D steps (Adam lr 2e-4, betas"
    " 0.5/0.999); after_call:*: edge parameters after the call (six epochs, the linear LambdaLR"
    " stepping after each)",
    "the Visualizer (loss log, html) replaced by a stand-in; nothing is printed at 6 iterations",
]
LOSS_NAMES = ("D_A", "G_A", "cycle_A", "idt_A", "D_B", "G_B", "cycle_B", "idt_B")
NETS = ("netG_A", "netG_B", "netD_A", "netD_B")


class _Visualizer:
    def __init__(self, opt):
        pass

    def reset(self):
        pass


def compute(root):
    import torch

    reference.load_model_package(root, MODEL, absent=("dominate", "dominate.tags"))
    base = f"torchbenchmark.models.{MODEL}"
    train_cyclegan = importlib.import_module(f"{base}.train_cyclegan")
    test_cyclegan = importlib.import_module(f"{base}.test_cyclegan")
    image_pool = importlib.import_module(f"{base}.util.image_pool")

    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        # Model.__init__'s eval model.
        netG, _ = test_cyclegan.get_model(
            f"--dataroot {tmp}/testA --name horse2zebra_pretrained --model test --no_dropout"
            f" --gpu_ids -1 --checkpoints_dir {tmp}/checkpoints --results_dir {tmp}/results",
            "cpu")
        eval_root = torch.nn.Module()
        eval_root.netG_A = netG
        fill.deterministic_fill(eval_root)
        netG.double()
        shape = (BATCH_SIZE, 3, SIZE, SIZE)
        with torch.no_grad():
            results["eval_output"] = netG(
                fill.deterministic_tensor("eval_A", shape, torch.float64)).detach().clone()

        data = [{"A": fill.deterministic_tensor(f"A.{i}", shape, torch.float64),
                 "B": fill.deterministic_tensor(f"B.{i}", shape, torch.float64),
                 "A_paths": [f"A.{i}"], "B_paths": [f"B.{i}"]} for i in range(IMAGES_PER_EPOCH)]
        models = []
        create_model = train_cyclegan.create_model

        def keep_model(opt):
            models.append(create_model(opt))
            return models[-1]

        patched = {"create_dataset": lambda opt: data, "create_model": keep_model,
                   "Visualizer": _Visualizer}
        saved = {k: getattr(train_cyclegan, k) for k in patched}
        for k, v in patched.items():
            setattr(train_cyclegan, k, v)
        try:
            # Model.__init__'s train arguments.
            loop = train_cyclegan.prepare_training_loop(
                (f"--dataroot {tmp}/datasets/horse2zebra --name horse2zebra --model cycle_gan"
                 f" --display_id 0 --n_epochs 3 --n_epochs_decay 3 --gpu_ids -1"
                 f" --checkpoints_dir {tmp}/checkpoints").split(" "))
        finally:
            for k, v in saved.items():
                setattr(train_cyclegan, k, v)
        model = models[0]
        nets = torch.nn.Module()
        for name in NETS:
            setattr(nets, name, getattr(model, name))
        fill.deterministic_fill(nets)
        nets.double()  # In place: the optimizers keep the parameters.
        model.criterionGAN.double()
        for pool in (model.fake_A_pool, model.fake_B_pool):
            pool.pool_size = POOL_SIZE
        uniform = iter(((1 + fill.deterministic_tensor("pool.uniform", (DRAWS,), torch.float64))
                        / 2).tolist())
        randint = iter(fill.deterministic_long("pool.randint", (DRAWS,), 0, POOL_SIZE).tolist())

        def filled_uniform(a, b):
            assert (a, b) == (0, 1)
            return next(uniform)

        def filled_randint(a, b):
            assert (a, b) == (0, POOL_SIZE - 1)
            return next(randint)

        saved_random = image_pool.random
        image_pool.random = types.SimpleNamespace(uniform=filled_uniform, randint=filled_randint)

        iterations = []
        optimize = model.optimize_parameters

        def recorded_optimize():
            optimize()
            iterations.append({name: getattr(model, "loss_" + name).detach().clone()
                               for name in LOSS_NAMES})
            if len(iterations) == 1:
                results["iter0:fake_B"] = model.fake_B.detach().clone()
                results["iter0:rec_A"] = model.rec_A.detach().clone()

        model.optimize_parameters = recorded_optimize

        def first_step(prefixes):
            def hook(optimizer, args, kwargs):
                if not iterations:
                    for name in prefixes:
                        reference.record_edges(getattr(model, name), f"grad:{name}.", results,
                                               gradients=True)
            return hook

        handles = [model.optimizer_G.register_step_pre_hook(first_step(("netG_A", "netG_B"))),
                   model.optimizer_D.register_step_pre_hook(first_step(("netD_A", "netD_B")))]
        try:
            loop(None)
        finally:
            image_pool.random = saved_random
            for handle in handles:
                handle.remove()
    if len(iterations) != 6 * IMAGES_PER_EPOCH:
        raise RuntimeError(f"expected {6 * IMAGES_PER_EPOCH} iterations, got {len(iterations)}")
    for index in (0, len(iterations) - 1):
        for name in LOSS_NAMES:
            results[f"iter{index}:loss_{name}"] = iterations[index][name]
    for name in NETS:
        reference.record_edges(getattr(model, name), f"after_call:{name}.", results)
    assert all(torch.isfinite(v).all() for v in results.values())
    return results


def prepare(root, name, mode, batch_size, device, stack):
    import numpy as np
    from PIL import Image

    # dominate: the visualizer's HTML pages, which the step never writes.
    package = reference.load_model_package(root, name, absent=("dominate", "dominate.tags"))
    # The training loop's data loader reads the images in the step, and it
    # saves its networks into checkpoints/ (save_epoch_freq 5), which
    # _create_data_dir would make in the checkout: a folder that lasts as
    # long as the Model holds both.
    lasting = tempfile.TemporaryDirectory(prefix="tb_cyclegan_")
    data = stand_ins.data_path(stack, lasting.name, package)
    # TorchBench's horse2zebra inputs: one 256x256 JPEG in trainA and in
    # trainB (the C++ port's images per epoch), each epoch one iteration.
    rng = np.random.default_rng(0)
    for split in ("trainA", "trainB", "testA"):
        folder = data / "pytorch_CycleGAN_and_pix2pix_inputs" / "datasets" / "horse2zebra" / split
        folder.mkdir(parents=True)
        Image.fromarray(rng.integers(0, 256, (256, 256, 3), dtype=np.uint8)).save(
            folder / "n00000000_0.jpg")

    def create_data_dir(suffix):
        folder = data / suffix
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    stack.enter_context(stand_ins.attribute(package, "_create_data_dir", create_data_dir))
    stand_ins.unsafe_torch_load(stack)  # example_input.pt: a pickled dict
    model = package.Model(test=mode, device=device, batch_size=batch_size)
    return stand_ins.lasting_folder(model, lasting)
