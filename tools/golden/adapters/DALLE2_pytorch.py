"""DALLE2_pytorch: the dalle2_pytorch library (lucidrains/DALLE2-pytorch at
0d82dff9, TorchBench's pin) in the configuration TorchBench's __init__ builds.

The library is imported from its source tree, $DALLE2_PYTORCH_SRC (default
/work/ref/src/DALLE2-pytorch), with importlib (source_package.py): its
dalle2_pytorch/ becomes the package `dalle2_pytorch` without running its
__init__ (which imports the trainers), and sys.path is left as it is; nothing
of it is committed. It needs
einops, einops-exts, rotary-embedding-torch (0.1.5, the release of December
2022), resize-right, kornia (gaussian_blur2d) and clip-anytorch's clip/model.py
(tools/requirements.txt pins them). Modules it imports only for other
configurations are stand-ins: x_clip, coca_pytorch and vector_quantize_pytorch
(isinstance checks and the VQGAN VAE), and its tokenizer (strings only).
TorchBench's dalle2_pytorch.patch only removes tqdm progress bars and turns
reversed(range(T)) into range(T), the same loop for T = 1 timestep.

OpenAIClipAdapter calls clip.load('ViT-B/32'), which downloads OpenAI's
weights: here clip.load builds the same architecture (clip.model.CLIP with
ViT-B/32's hyper-parameters, as build_model derives them from the weights) and
the deterministic fill replaces every weight, as in C++.

`PYTHONPATH=tools/golden .venv/bin/python tools/golden/adapters/DALLE2_pytorch.py`
prints the element counts of DALLE2(prior, decoder) as TorchBench builds it
(379,886,339 parameters, 57 buffers).
"""

import importlib.util
import os
import pathlib
import sys
import types

import fill
import source_package
import reference

MODEL = "DALLE2_pytorch"
REFERENCE = ("dalle2_pytorch 0d82dff9: OpenAIClipAdapter (CLIP ViT-B/32), DiffusionPrior,"
             " Decoder(Unet 128, Unet 16), DALLE2; TorchBench's train() and eval() sequence")
MODE = "train"
BATCH_SIZE = 2
DTYPE = "float32"
GOLDEN_IMAGE = 240     # CLIP resizes it to 224 (resize_right, antialiased cubic).
GOLDEN_SIZES = (32, 64)  # The decoder's image_sizes here; TorchBench's are (128, 256).
GOLDEN_TEXT_LEN = 24     # clip-anytorch encodes any length <= 77.
TO_OUT_SCALE = 0.01     # see compute()
EOS_POSITION = 10        # row 0 gets CLIP's eos token there (masks what follows).
NOTES = [
    "run in float32: the library casts to float32 in several places (MLP, CLIP embeddings),"
    " so float64 weights are rejected",
    "CLIP ViT-B/32 architecture with the deterministic fill: OpenAI's weights cannot be downloaded",
    f"images {GOLDEN_IMAGE}x{GOLDEN_IMAGE} (u*0.5+0.5), text of {GOLDEN_TEXT_LEN} tokens"
    f" (integers, eos 49407 at row 0 position {EOS_POSITION}); the decoder's image_sizes"
    f" {GOLDEN_SIZES} instead of (128, 256): no parameter depends on them",
    "randomness made deterministic in both languages: every torch.randn/randn_like of the"
    " library is deterministic_tensor('randn.<k>') (k counts calls), every prob_mask_like draw"
    " is deterministic_tensor('mask.<k>')*0.5+0.5 < prob, timesteps are 0 (T = 1), and the"
    " low-resolution conditioner's random.random() < 0.5 blur test always passes",
    f"each unet's to_out.weight is the fill times {TO_OUT_SCALE} (the library zero-initializes"
    " it; the full fill overflows the learned variance's exp in float32)",
    "prior_loss, unet1_loss, unet2_loss: the three losses of train(); grad:*: gradients of edge"
    " parameters of the prior network and both unets after the three backward passes",
    "eval_images: DALLE2(text) of eval() (prior.sample with 2 samples per text, decoder.sample);"
    " eval_image_embed: the prior's chosen image embedding",
]

CLIP_VIT_B32 = dict(embed_dim=512, image_resolution=224, vision_layers=12, vision_width=768,
                    vision_patch_size=32, context_length=77, vocab_size=49408,
                    transformer_width=512, transformer_heads=8, transformer_layers=12)
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


class _Counter:
    def __init__(self):
        self.counts = {}

    def next(self, prefix):
        k = self.counts.get(prefix, 0)
        self.counts[prefix] = k + 1
        return f"{prefix}.{k}"


def _load_library(deterministic):
    """Imports dalle2_pytorch.dalle2_pytorch from the source tree; with
    `deterministic`, its randomness comes from the deterministic fill."""
    import torch
    import torchvision.transforms as T

    src = pathlib.Path(os.environ.get("DALLE2_PYTORCH_SRC", "/work/ref/src/DALLE2-pytorch"))
    for name, attrs in (("x_clip", ("CLIP",)), ("coca_pytorch", ("CoCa",)),
                        ("vector_quantize_pytorch", ("VectorQuantize",))):
        if name not in sys.modules:
            module = types.ModuleType(name)
            for attr in attrs:
                setattr(module, attr, type(attr, (), {}))
            sys.modules[name] = module

    # clip-anytorch's model.py alone: its package __init__ imports the
    # tokenizer (ftfy), which nothing here uses.
    spec = importlib.util.find_spec("clip")
    clip_dir = pathlib.Path(list(spec.submodule_search_locations)[0])
    clip_model = source_package.load_module("clip_model", clip_dir / "model.py")

    def load(name):
        assert name == "ViT-B/32"
        model = clip_model.CLIP(**CLIP_VIT_B32).float()
        return model.eval(), T.Compose([T.Normalize(CLIP_MEAN, CLIP_STD)])

    clip = types.ModuleType("clip")
    clip.load = load
    sys.modules["clip"] = clip

    if not (src / "dalle2_pytorch" / "dalle2_pytorch.py").exists():
        raise RuntimeError(f"dalle2_pytorch source not found at {src} (set DALLE2_PYTORCH_SRC)")
    source_package.import_package("dalle2_pytorch", src / "dalle2_pytorch", run_init=False)
    tokenizer = types.ModuleType("dalle2_pytorch.tokenizer")
    tokenizer.tokenizer = None
    sys.modules["dalle2_pytorch.tokenizer"] = tokenizer
    import dalle2_pytorch.dalle2_pytorch as lib

    if deterministic:
        counter = _Counter()

        class _Torch(types.ModuleType):
            def __getattr__(self, name):
                return getattr(torch, name)

            def randn(self, *shape, device=None, dtype=None, **kwargs):
                shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
                return fill.deterministic_tensor(counter.next("randn"), tuple(shape)).to(
                    device=device, dtype=dtype or torch.get_default_dtype())

            def randn_like(self, x, **kwargs):
                return fill.deterministic_tensor(counter.next("randn"), tuple(x.shape)).to(x)

            def randint(self, low, high, size, device=None, dtype=None, **kwargs):
                assert (low, high) == (0, 1), "T = 1: every timestep is 0"
                return torch.zeros(size, device=device, dtype=torch.long)

        def prob_mask_like(shape, prob, device):
            if prob == 1:
                return torch.ones(shape, device=device, dtype=torch.bool)
            if prob == 0:
                return torch.zeros(shape, device=device, dtype=torch.bool)
            u = fill.deterministic_tensor(counter.next("mask"), tuple(shape), offset=0.5, scale=0.5)
            return u.to(device) < prob

        class _Random:
            @staticmethod
            def random():
                return 0.0

        lib.torch = _Torch("torch")
        lib.golden_counter = counter
        lib.prob_mask_like = prob_mask_like
        lib.random = _Random()
    return lib


def build(lib, image_sizes=(128, 256)):
    """DALLE2 as TorchBench's Model.__init__ builds it (on the CPU)."""
    clip = lib.OpenAIClipAdapter()
    prior_network = lib.DiffusionPriorNetwork(dim=512, depth=6, dim_head=64, heads=8)
    diffusion_prior = lib.DiffusionPrior(net=prior_network, clip=clip, timesteps=1,
                                         cond_drop_prob=0.2)
    unet1 = lib.Unet(dim=128, image_embed_dim=512, cond_dim=128, channels=3,
                     dim_mults=(1, 2, 4, 8), text_embed_dim=512, cond_on_text_encodings=True)
    unet2 = lib.Unet(dim=16, image_embed_dim=512, cond_dim=128, channels=3,
                     dim_mults=(1, 2, 4, 8, 16))
    decoder = lib.Decoder(unet=(unet1, unet2), image_sizes=image_sizes, clip=clip, timesteps=1,
                          sample_timesteps=(1, 1), image_cond_drop_prob=0.1,
                          text_cond_drop_prob=0.5)
    return lib.DALLE2(prior=diffusion_prior, decoder=decoder)


def _edges(module, prefix, out):
    named = [(n, p) for n, p in module.named_parameters() if p.grad is not None]
    for name, p in (named[0], named[-1]):
        out[f"grad:{prefix}{name}"] = p.grad.detach().clone()


def compute(root):
    import torch

    del root  # The library, not TorchBench's wrapper, is what runs here.
    lib = _load_library(deterministic=True)
    model = build(lib, GOLDEN_SIZES)
    # The constructors' randn (their initial weights, overwritten below) are
    # not draws of the step.
    lib.golden_counter.counts.clear()
    # The noise schedules (T = 1) and the rotary frequencies are constants of
    # the configuration, not weights: the C++ port recomputes them after the
    # fill too.
    schedules = {k: v.clone() for k, v in model.named_buffers()}
    fill.deterministic_fill(model)
    with torch.no_grad():
        for name, buffer in model.named_buffers():
            buffer.copy_(schedules[name])
        # The library zero-initializes each Unet's to_out; the fill's weights
        # there push the first unet's learned variance out of float32's range
        # (inf, then NaN gradients through the KL branch of torch.where).
        for unet in model.decoder.unets:
            unet.to_out.weight.mul_(TO_OUT_SCALE)
    text = fill.deterministic_long("text", (BATCH_SIZE, GOLDEN_TEXT_LEN), 0, 49408)
    text[0, EOS_POSITION] = 49407
    images = fill.deterministic_tensor("images", (BATCH_SIZE, 3, GOLDEN_IMAGE, GOLDEN_IMAGE),
                                       offset=0.5, scale=0.5)
    results = {}
    # train(): prior.train(), decoder.train(); three losses, three backward.
    model.prior.train()
    model.decoder.train()
    loss = model.prior(text, images)
    loss.backward()
    results["prior_loss"] = loss.detach().clone()
    loss = model.decoder(images, text, unet_number=1)
    loss.backward()
    results["unet1_loss"] = loss.detach().clone()
    loss = model.decoder(images, text, unet_number=2)
    loss.backward()
    results["unet2_loss"] = loss.detach().clone()
    _edges(model.prior.net, "prior.net.", results)
    _edges(model.decoder.unets[0], "decoder.unets.0.", results)
    _edges(model.decoder.unets[1], "decoder.unets.1.", results)
    results["grad:decoder.unets.0.init_conv.convs.0.weight"] = (
        model.decoder.unets[0].init_conv.convs[0].weight.grad.detach().clone())
    # eval(): prior.eval(), decoder.eval(), DALLE2(text) under inference_mode.
    model.prior.eval()
    model.decoder.eval()
    embeds = []
    handle = model.decoder.register_forward_pre_hook(lambda m, a: None)
    original_sample = model.decoder.sample

    def sample(*args, **kwargs):
        embeds.append(kwargs["image_embed"].detach().clone())
        return original_sample(*args, **kwargs)

    model.decoder.sample = sample
    with torch.inference_mode():
        results["eval_images"] = model(text).detach().clone()
    handle.remove()
    results["eval_image_embed"] = embeds[0]
    return results


def _counts():
    lib = _load_library(deterministic=False)
    model = build(lib)
    parameters = sum(p.numel() for p in model.parameters())
    buffers = sum(b.numel() for b in model.buffers())
    print(f"parameters {parameters} buffers {buffers}")
    for name, module in (("clip", model.prior.clip), ("prior.net", model.prior.net),
                         ("unet1", model.decoder.unets[0]), ("unet2", model.decoder.unets[1])):
        print(name, sum(p.numel() for p in module.parameters()),
              sum(b.numel() for b in module.buffers()))
    for name, b in model.named_buffers():
        print("buffer", name, tuple(b.shape))


if __name__ == "__main__":
    _counts()


def prepare(root, name, mode, batch_size, device, stack):
    # dalle2_pytorch from its source tree, and clip.load('ViT-B/32') (a
    # download) building the same CLIP architecture with its own
    # initialisation: _load_library. TorchBench's Model raises
    # NotImplementedError on the CPU before using either.
    lib = _load_library(deterministic=False)
    # The package's __init__ (not run: it imports the trainers) re-exports
    # these from dalle2_pytorch.dalle2_pytorch; TorchBench imports them there.
    for attr in ("DALLE2", "Unet", "Decoder", "DiffusionPriorNetwork", "DiffusionPrior",
                 "OpenAIClipAdapter"):
        setattr(sys.modules["dalle2_pytorch"], attr, getattr(lib, attr))
    package = reference.load_model_package(root, "DALLE2_pytorch")
    return package.Model(test=mode, device=device, batch_size=batch_size)
