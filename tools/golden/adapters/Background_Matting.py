"""Background_Matting: TorchBench's Model.__init__ (netB, netG, netD, losses, Adams) and two
calls of its own train() on one filled batch."""

import builtins
import importlib
import io
import pathlib
import tempfile
import types

import numpy as np

import fill
import reference
import stand_ins

MODEL = "Background_Matting"
REFERENCE = ("torchbenchmark/models/Background_Matting: Model.__init__ (ResnetConditionHR netB and"
             " netG, MultiscaleDiscriminator netD, Adams), two Model.train() calls")
MODE = "train"
BATCH_SIZE = 2
DTYPE = "float64"
SIZE = 32
BAND = (12, 20)  # the columns where the filled segmentation guide may be foreground
CALLS = 2
NOTES = [
    "run in float64 (weights filled in float32, then converted; torch's default dtype float64,"
    " so the float32 tensors train() makes (compose_image_withshift's image_sh, the GAN labels,"
    " the Sobel filters) are float64; its .type(torch.FloatTensor) masks stay float32, exactly"
    " 0/1): two calls of four Adam steps on filled weights",
    "32x32 images instead of 512x512, batch 2 instead of 4 (same layers; the discriminator's"
    " map is 7x7); netB, netG and netD filled under the names of a root holding them",
    "inputs filled (u): bg, image, seg (-1 outside columns [12, 20), so that"
    " compose_image_withshift's shift range is not empty), multi_fr, seg-gt, back-rnd; one"
    " prefetched batch as the reference's train_data, its loader replaced",
    "randomness replaced: np.random.permutation(n) is argsort(draw.perm), np.random.random_sample"
    " returns (1 + draw.uniform[k]) / 2 for call k, np.random.randint(low, high) returns"
    " low + draw.shift[j] % (high - low) for its j-th draw",
    "call<k>:loss_*: the eight scalars train() logs; call<k>:grad:*: edge and two inner gradients"
    " of netG before its Adam step (lr 1e-4) and netD's edges before its (lr 1e-5); call0:* the"
    " outputs of netB, netG and compose_image_withshift; after:*: parameters after both calls",
    "the tensorboardX writer replaced by a recorder; torch.save goes to a temporary folder",
]
ABSENT = ("tensorboardX", "skimage", "skimage.io", "pandas", "matplotlib", "matplotlib.pyplot")
LOSS_TAGS = {
    "Generator Loss": "lossG",
    "Discriminator Loss": "lossD",
    "Generator Loss: Fake": "loss_ganG",
    "Discriminator Loss: Real": "loss_ganD_real",
    "Discriminator Loss: Fake": "loss_ganD_fake",
    "Generator Loss: Alpha": "al_loss",
    "Generator Loss: Fg": "fg_loss",
    "Generator Loss: Comp": "comp_loss",
}
NET_G_EXTRA = ("comb_seg.0.weight", "model_al_out.9.weight")


class _Writer:
    scalars = {}

    def __init__(self, *args, **kwargs):
        pass

    def add_scalar(self, tag, value, step):
        _Writer.scalars[tag] = value.detach().clone()

    def add_image(self, *args, **kwargs):
        pass


class _FilledRandom:
    def __init__(self):
        import torch

        self.calls = 0
        self.shifts = 0
        self.uniform = ((1 + fill.deterministic_tensor("draw.uniform", (CALLS,), torch.float64))
                        / 2).tolist()
        self.shift = fill.deterministic_long("draw.shift", (CALLS * BATCH_SIZE,), 0,
                                             1 << 20).tolist()

    def permutation(self, n):
        return np.argsort(fill.deterministic_array("draw.perm", (n,)), kind="stable")

    def random_sample(self):
        value = self.uniform[self.calls]
        self.calls += 1
        return value

    def randint(self, low, high):
        value = int(low) + self.shift[self.shifts] % (int(high) - int(low))
        self.shifts += 1
        return value


class _FilledNumpy(types.ModuleType):
    def __init__(self, random):
        super().__init__("numpy")
        self.random = random

    def __getattr__(self, name):
        return getattr(np, name)


def inputs():
    import torch

    shape = lambda c: (BATCH_SIZE, c, SIZE, SIZE)  # noqa: E731
    seg = fill.deterministic_tensor("seg", shape(1), torch.float64)
    seg[..., :BAND[0]] = -1
    seg[..., BAND[1]:] = -1
    return {
        "bg": fill.deterministic_tensor("bg", shape(3), torch.float64),
        "image": fill.deterministic_tensor("image", shape(3), torch.float64),
        "seg": seg,
        "multi_fr": fill.deterministic_tensor("multi_fr", shape(4), torch.float64),
        "seg-gt": fill.deterministic_tensor("seg-gt", shape(1), torch.float64),
        "back-rnd": fill.deterministic_tensor("back-rnd", shape(3), torch.float64),
    }


def compute(root):
    import torch

    package = reference.load_model_package(root, MODEL, absent=ABSENT)
    functions = importlib.import_module(f"torchbenchmark.models.{MODEL}.functions")
    results = {}
    default_dtype = torch.get_default_dtype()
    with tempfile.TemporaryDirectory() as tmp:
        # __init__ reads the data set's csv and images, and opens a tensorboardX writer: its
        # loader yields one float32 sample of the filled batch here (_maybe_trace runs the
        # networks on it) and the batch is set after the fill.
        def fake_open(path, mode="r", *args, **kwargs):
            if "r" in mode:
                return io.StringIO("")
            return builtins.open(path, mode, *args, **kwargs)

        def video_data(**kwargs):
            return [{k: v[0].float() for k, v in inputs().items()}]

        patched = {"_create_data_dir": lambda: pathlib.Path(tmp), "open": fake_open,
                   "VideoData": video_data, "SummaryWriter": _Writer}
        saved = {k: getattr(package, k, None) for k in patched}
        for k, v in patched.items():
            setattr(package, k, v)
        try:
            model = package.Model(test="train", device="cpu", batch_size=BATCH_SIZE)
        finally:
            for k, v in saved.items():
                if v is None:
                    delattr(package, k)
                else:
                    setattr(package, k, v)
        model.model_dir = tmp
        nets = torch.nn.Module()
        nets.netB, nets.netG, nets.netD = model.netB, model.netG, model.netD
        fill.deterministic_fill(nets)
        nets.double()  # In place: the optimizers keep the parameters.
        model.train_data = [inputs()]

        outputs = {}

        def recorded(name, net):
            forward = net.forward

            def wrapper(*args):
                out = forward(*args)
                outputs.setdefault(name, out)
                if name == "netD":
                    outputs.setdefault("image_sh", args[0])
                return out
            return wrapper

        model.netB.forward = recorded("netB", model.netB)
        model.netG.forward = recorded("netG", model.netG)
        model.netD.forward = recorded("netD", model.netD)

        call = [0]

        def hook(net, names):
            def pre_step(optimizer, args, kwargs):
                prefix = f"call{call[0]}:grad:{net}."
                module = getattr(model, net)
                reference.record_edges(module, prefix, results, gradients=True)
                params = dict(module.named_parameters())
                for name in names:
                    results[prefix + name] = params[name].grad.detach().clone()
            return pre_step

        handles = [model.optimizerG.register_step_pre_hook(hook("netG", NET_G_EXTRA)),
                   model.optimizerD.register_step_pre_hook(hook("netD", ()))]
        random = _FilledNumpy(_FilledRandom())
        saved_np = (package.np, functions.np)
        package.np = functions.np = random
        torch.set_default_dtype(torch.float64)
        try:
            for k in range(CALLS):
                call[0] = k
                outputs.clear()
                _Writer.scalars = {}
                model.train()
                for tag, name in LOSS_TAGS.items():
                    results[f"call{k}:loss_{name}"] = _Writer.scalars[tag]
                if k == 0:
                    results["call0:alpha_sup"], results["call0:fg_sup"] = outputs["netB"]
                    results["call0:alpha"], results["call0:fg"] = outputs["netG"]
                    results["call0:image_sh"] = outputs["image_sh"]
        finally:
            torch.set_default_dtype(default_dtype)
            package.np, functions.np = saved_np
            for handle in handles:
                handle.remove()
        for net in ("netG", "netD"):
            reference.record_edges(getattr(model, net), f"after:{net}.", results)
        results["after:netG.comb_seg.0.weight"] = dict(
            model.netG.named_parameters())["comb_seg.0.weight"].detach().clone()
    results = {k: v.detach().clone() for k, v in results.items()}
    # Both background choices run: random_sample() is 0.90 in call 0, 0.10 in call 1.
    assert [u > 0.5 for u in random.random.uniform] == [True, False]
    assert all(torch.isfinite(v).all() for v in results.values())
    return results


def prepare(root, name, mode, batch_size, device, stack):
    import torch


    package = reference.load_model_package(root, name, absent=ABSENT)
    # train() saves its checkpoints into the data folder (model_dir): a
    # folder that lasts as long as the Model.
    lasting = tempfile.TemporaryDirectory(prefix="tb_data_")
    data = stand_ins.data_path(stack, lasting.name, package)
    inputs = data / "Background_Matting_inputs"
    inputs.mkdir()
    # Video_data_train.csv is only copied into the processed csv VideoData
    # reads; VideoData is the stand-in below.
    (inputs / "Video_data_train.csv").write_text("")
    size = 512  # opt.resolution: VideoData crops every sample to 512x512

    def video_data(csv_file, data_config, transform=None):
        # Stands in for the data set's samples (skimage and pandas are not
        # installed): one batch of to_tensor-range (-1..1) float32 samples at
        # the crop size; train() uses only the first batch.
        generator = torch.Generator().manual_seed(0)
        samples = []
        for _ in range(batch_size):
            sample = {k: torch.rand((c, size, size), generator=generator) * 2 - 1 for k, c in
                      (("image", 3), ("bg", 3), ("multi_fr", 4), ("seg-gt", 1), ("back-rnd", 3))}
            # The segmentation guide: foreground in a central band, so that
            # compose_image_withshift's random shift range is not empty.
            seg = -torch.ones((1, size, size))
            seg[..., size * 3 // 8:size * 5 // 8] = 1
            sample["seg"] = seg
            samples.append(sample)
        return samples

    # _create_data_dir would write into the checkout; the processed csv goes
    # to the temporary folder. SummaryWriter: logging only (tensorboardX).
    stack.enter_context(stand_ins.attribute(package, "_create_data_dir", lambda: data))
    stack.enter_context(stand_ins.attribute(package, "VideoData", video_data))
    stack.enter_context(stand_ins.attribute(package, "SummaryWriter", _Writer))
    model = package.Model(test=mode, device=device, batch_size=batch_size)
    return stand_ins.lasting_folder(model, lasting)
