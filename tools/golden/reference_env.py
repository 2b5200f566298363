"""What TorchBench's own Model classes need from their environment here.

reference.build_step constructs each TorchBench-referenced model through
construct(): TorchBench's code runs unchanged, and where its __init__ reaches
for something this machine lacks, a stand-in takes its place for the
construction only:
  - a module the model imports but its step never runs (export, logging,
    data-set download code): an empty stand-in module;
  - a data folder install.py would have downloaded: synthetic files in the
    format and at the sizes the model reads, in a temporary DATA_PATH;
  - downloaded weights: the model's own initialisation (timing does not
    depend on the values, only on the shapes).
A model that cannot be built here says why in UNAVAILABLE.

PREPARE maps a model to prepare(root, name, mode, batch_size, device,
stack) -> Model: it builds TorchBench's Model with its stand-ins, entering
each patch into `stack` (a contextlib.ExitStack closed once the Model is
built, which restores what was patched).
"""

import collections.abc
import contextlib
import os
import pathlib
import sys
import tempfile

import reference

# model -> why TorchBench's Model cannot be built on this machine.
UNAVAILABLE = {
    "soft_actor_critic": "its train() and eval() step a gym environment (gym.make of"
                         " args.env_id) and gym is not installed: a stand-in environment would"
                         " not be TorchBench's step",
}


@contextlib.contextmanager
def _attribute(owner, attr, value):
    """owner.attr = value (owner[attr] for a mapping: sys.modules,
    os.environ) until the context exits; removed again if it was absent."""
    mapping = isinstance(owner, collections.abc.MutableMapping)
    missing = object()
    saved = owner.get(attr, missing) if mapping else getattr(owner, attr, missing)
    if mapping:
        owner[attr] = value
    else:
        setattr(owner, attr, value)
    try:
        yield value
    finally:
        if saved is missing:
            if mapping:
                owner.pop(attr, None)
            else:
                delattr(owner, attr)
        elif mapping:
            owner[attr] = saved
        else:
            setattr(owner, attr, saved)


def _data_path(stack, folder, *modules):
    """DATA_PATH = folder on the stand-in torchbenchmark package and on
    `modules` (which imported the name) while the Model is built; returns
    it as a pathlib.Path."""
    for module in (sys.modules["torchbenchmark"],) + modules:
        stack.enter_context(_attribute(module, "DATA_PATH", str(folder)))
    return pathlib.Path(folder)


def _temporary_data_path(stack, *modules):
    """_data_path on a temporary folder removed once the Model is built."""
    folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="tb_data_"))
    return _data_path(stack, folder, *modules)


def _lasting_folder(model, folder):
    """Keeps a tempfile.TemporaryDirectory as long as the Model: for a
    folder its step writes into."""
    model._reference_env_folder = folder
    return model


def _own_initialisation(stack, builder):
    """torchvision.models.<builder> built with weights=None: the
    pretrained weights are downloaded; the model's own initialisation has
    the same shapes (timing does not depend on the values)."""
    import torchvision

    build = getattr(torchvision.models, builder)
    stack.enter_context(_attribute(torchvision.models, builder,
                                   lambda *args, weights=None, **kwargs: build(*args, weights=None,
                                                                               **kwargs)))


def _unsafe_torch_load(stack):
    """torch.load with weights_only=False by default: files TorchBench
    pickled before torch 2.6 made weights_only=True the default."""
    import torch

    load = torch.load

    def torch_load(*args, **kwargs):
        kwargs.setdefault("weights_only", False)
        return load(*args, **kwargs)

    stack.enter_context(_attribute(torch, "load", torch_load))


def _plain(root, name, mode, batch_size, device, stack, absent=(), **extra):
    """The Model built as is, after `absent` stand-in modules."""
    package = reference.load_model_package(root, name, absent=absent)
    return package.Model(test=mode, device=device, batch_size=batch_size, **extra)


# ---------------------------------------------------------------- models

def _background_matting(root, name, mode, batch_size, device, stack):
    import torch

    from adapters import Background_Matting as adapter

    package = reference.load_model_package(root, name, absent=adapter.ABSENT)
    # train() saves its checkpoints into the data folder (model_dir): a
    # folder that lasts as long as the Model.
    lasting = tempfile.TemporaryDirectory(prefix="tb_data_")
    data = _data_path(stack, lasting.name, package)
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
    stack.enter_context(_attribute(package, "_create_data_dir", lambda: data))
    stack.enter_context(_attribute(package, "VideoData", video_data))
    stack.enter_context(_attribute(package, "SummaryWriter", adapter._Writer))
    model = package.Model(test=mode, device=device, batch_size=batch_size)
    return _lasting_folder(model, lasting)


def _super_slomo(root, name, mode, batch_size, device, stack):
    import numpy as np
    from PIL import Image

    package = reference.load_model_package(root, name)
    data = _temporary_data_path(stack, package)
    train = data / "Super_SloMo_inputs" / "dataset" / "train"
    # The Adobe240fps training clips: 12 frames of 640x360 each (SuperSloMo's
    # dim), from which the loader crops 352x352; one clip per sample.
    rng = np.random.default_rng(0)
    for clip in range(batch_size):
        folder = train / f"clip{clip:03d}"
        folder.mkdir(parents=True)
        for frame in range(12):
            pixels = rng.integers(0, 256, (360, 640, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(folder / f"{frame:02d}.png")
    # vgg16's ImageNet weights (frozen, for the perceptual loss).
    _own_initialisation(stack, "vgg16")
    return package.Model(test=mode, device=device, batch_size=batch_size)


def _attention_is_all_you_need(root, name, mode, batch_size, device, stack):
    import types

    from adapters import attention_is_all_you_need_pytorch as adapter

    reference.stub_torchtext_legacy()
    package = reference.load_model_package(root, name)

    def dataloaders(opt, device):
        # Stands in for prepare_dataloaders' Multi30k pickle (torchtext
        # legacy Fields, not installed): the pickle's vocabulary and pad, and
        # one train and one test batch (the step runs NUM_OF_BATCHES = 1) of
        # opt.batch_size sentences of 4..21 words, framed and padded as
        # BucketIterator makes them.
        opt.max_token_seq_len = 100  # preprocess.py's -max_len default
        opt.src_pad_idx = opt.trg_pad_idx = adapter.PAD
        opt.src_vocab_size = opt.trg_vocab_size = adapter.VOCAB_SIZE
        batch = types.SimpleNamespace(src=adapter.synthetic_sequences("src", opt.batch_size),
                                      trg=adapter.synthetic_sequences("trg", opt.batch_size))
        return [batch], [batch]

    stack.enter_context(_attribute(package, "prepare_dataloaders", dataloaders))
    return package.Model(test=mode, device=device, batch_size=batch_size)


# CelebA's list_attr_celeba.txt attribute names, in its order.
CELEBA_ATTRIBUTES = (
    "5_o_Clock_Shadow Arched_Eyebrows Attractive Bags_Under_Eyes Bald Bangs Big_Lips Big_Nose"
    " Black_Hair Blond_Hair Blurry Brown_Hair Bushy_Eyebrows Chubby Double_Chin Eyeglasses Goatee"
    " Gray_Hair Heavy_Makeup High_Cheekbones Male Mouth_Slightly_Open Mustache Narrow_Eyes"
    " No_Beard Oval_Face Pale_Skin Pointy_Nose Receding_Hairline Rosy_Cheeks Sideburns Smiling"
    " Straight_Hair Wavy_Hair Wearing_Earrings Wearing_Hat Wearing_Lipstick Wearing_Necklace"
    " Wearing_Necktie Young").split()


def _pytorch_stargan(root, name, mode, batch_size, device, stack):
    import numpy as np
    from PIL import Image

    package = reference.load_model_package(root, name)
    data = _temporary_data_path(stack, package)
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

    stack.enter_context(_attribute(package, "parse_config", config_in_temporary_folder))
    model = package.Model(test=mode, device=device, batch_size=batch_size)
    return _lasting_folder(model, lasting)


def _squeezenet1_1(root, name, mode, batch_size, device, stack):
    import types

    # SqueezeNet1_1_Weights.IMAGENET1K_V1.
    _own_initialisation(stack, "squeezenet1_1")
    model = _plain(root, name, mode, batch_size, device, stack)
    # TorchVisionModel.eval reads dynamo and opt_args.cudagraph, which
    # TorchBench's BenchmarkModel.__init__ sets (False, False without extra
    # arguments) and reference's stand-in base class does not.
    if not hasattr(model, "dynamo"):
        model.dynamo = False
    if not hasattr(model.opt_args, "cudagraph"):
        model.opt_args = types.SimpleNamespace(**vars(model.opt_args), cudagraph=False)
    return model


def _pytorch_cyclegan(root, name, mode, batch_size, device, stack):
    import numpy as np
    from PIL import Image

    # dominate: the visualizer's HTML pages, which the step never writes.
    package = reference.load_model_package(root, name, absent=("dominate", "dominate.tags"))
    # The training loop's data loader reads the images in the step, and it
    # saves its networks into checkpoints/ (save_epoch_freq 5), which
    # _create_data_dir would make in the checkout: a folder that lasts as
    # long as the Model holds both.
    lasting = tempfile.TemporaryDirectory(prefix="tb_cyclegan_")
    data = _data_path(stack, lasting.name, package)
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

    stack.enter_context(_attribute(package, "_create_data_dir", create_data_dir))
    _unsafe_torch_load(stack)  # example_input.pt: a pickled dict
    model = package.Model(test=mode, device=device, batch_size=batch_size)
    return _lasting_folder(model, lasting)


def _fastnlp_bert(root, name, mode, batch_size, device, stack):
    from adapters import fastNLP_Bert as adapter

    # pkg_resources (fastNLP 0.6.0's parse_version; setuptools >= 81 has no
    # pkg_resources): packaging's parse.
    adapter._install_stand_ins()
    import fastNLP.embeddings.bert_embedding as bert_embedding

    package = reference.load_model_package(root, name)
    # TorchBench's own CMRC2018 simulator writes its files into a temporary
    # folder instead of the checkout.
    adapter._redirect_simulator(package)
    # TorchBench's install applies fastnlp.patch (BertModel built from the
    # simulator's bert_config.json, no download): the same substitution.
    stack.enter_context(_attribute(bert_embedding, "BertModel", bert_embedding.BertModel))
    adapter._apply_fastnlp_patch()
    return package.Model(test=mode, device=device, batch_size=batch_size)


def _fambench_xlmr(root, name, mode, batch_size, device, stack):
    from adapters import fambench_xlmr as adapter

    # fairseq does not install on Python 3.11 and the FAMBench submodule is
    # absent: XLMRModel.from_pretrained("xlmr.large") gives transformers'
    # XLM-R large encoder (the same post-norm layers; dropout 0.1 as
    # xlmr.large's), FAMBench's generate_dataset / init_argparse their rules.
    adapter._install_stand_ins(dropout=0.1)
    return _plain(root, name, mode, batch_size, device, stack)


def _pytorch_struct(root, name, mode, batch_size, device, stack):
    import numpy as np
    import torch

    from adapters import pytorch_struct as adapter

    # The UD-POS treebank (torchtext download; torchtext is not installed)
    # and pytest (the module's test class only) stand in as in the adapter.
    adapter.load(root)
    package = sys.modules[f"torchbenchmark.models.{name}"]
    # adapter.load sets the four data helpers for good: restored after.
    for helper in ("Field", "UDPOS", "TokenBucket", "_prefetch"):
        stack.enter_context(_attribute(package, helper, getattr(package, helper)))

    def prefetch(loader, device, limit=10):
        # TokenBucket's batches: sentences of 6..29 words (the filter_pred)
        # until batch_size tokens (max(len, 5) each), sorted within the
        # batch, padded; words from the 4771-word vocabulary.
        rng = np.random.default_rng(0)
        batches = []
        for _ in range(limit):
            lengths = []
            while sum(max(n, 5) for n in lengths) < batch_size:
                lengths.append(int(rng.integers(6, 30)))
            lengths.sort(reverse=True)
            words = torch.full((len(lengths), lengths[0]), adapter.PAD, dtype=torch.long)
            for b, n in enumerate(lengths):
                words[b, :n] = torch.from_numpy(
                    rng.integers(adapter.FIRST_WORD, adapter.VOCAB_SIZE, n))
            # _prefetch's words are the iterator's (length, batch) tensor
            # transposed: a (batch, length) view.
            words = words.t().contiguous().t()
            batches.append((words.to(device), torch.tensor(lengths)))
        return batches

    package._prefetch = prefetch
    return package.Model(test=mode, device=device, batch_size=batch_size)


# speech_transformer_inputs (three AISHELL-1 speakers), as pytorch/benchmark
# committed them at 6c1f7247 (models/speech/speech_transformer.cpp): the
# train set's (fbank frames, characters), 1014 characters, and the first
# test utterance's 290 frames. The dev set is read but never iterated.
SPEECH_TRAIN = ((612, 17), (598, 15), (587, 21), (539, 18), (439, 9), (411, 12), (385, 11),
                (337, 10), (315, 9), (256, 9))
SPEECH_TEST = ((290, 9),)
SPEECH_VOCAB = 1014


def _speech_transformer(root, name, mode, batch_size, device, stack):
    import json

    import kaldi_io
    import numpy as np

    package = reference.load_model_package(root, name)
    config = sys.modules[f"torchbenchmark.models.{name}.config"]
    data = _temporary_data_path(stack, config)
    inputs = data / "speech_transformer_inputs" / "input_data"
    rng = np.random.default_rng(0)
    for split, utterances in (("train", SPEECH_TRAIN), ("dev", SPEECH_TEST), ("test", SPEECH_TEST)):
        (inputs / split).mkdir(parents=True)
        utts = {}
        for i, (frames, chars) in enumerate(utterances):
            # CMVN-normalised 80-dim fbank, one Kaldi binary matrix a file.
            feat = f"input_data/{split}/utt{i:02d}.ark"
            with open(inputs.parent / feat, "wb") as f:
                kaldi_io.write_mat(f, rng.standard_normal((frames, 80)).astype(np.float32))
            tokens = " ".join(str(t) for t in rng.integers(3, SPEECH_VOCAB, chars))
            utts[f"{split}{i:02d}"] = {
                "input": [{"feat": feat, "name": "input1", "shape": [frames, 80]}],
                "output": [{"name": "target1", "shape": [chars, SPEECH_VOCAB],
                            "tokenid": tokens}]}
        (inputs / split / "data.json").write_text(json.dumps({"utts": utts}))
    (inputs / "lang_1char").mkdir()
    chars = ["<unk>", "<sos>", "<eos>"] + [chr(0x4e00 + i) for i in range(SPEECH_VOCAB - 3)]
    (inputs / "lang_1char" / "train_chars.txt").write_text(
        "".join(f"{c} {i}\n" for i, c in enumerate(chars)), encoding="utf-8")
    return package.Model(test=mode, device=device, batch_size=batch_size)


def _gym_stand_in():
    """What drq uses of gym: spaces.Box (shape, dtype, low, high, seed,
    sample as gym's: uniform over a bounded float box, integers in
    [low, high] otherwise) and Wrapper (the wrapped env's attributes)."""
    import types

    import numpy as np

    class Box:
        def __init__(self, low, high, shape=None, dtype=np.float32):
            self.dtype = np.dtype(dtype)
            self.shape = tuple(shape)
            self.low = np.full(self.shape, low, dtype=self.dtype)
            self.high = np.full(self.shape, high, dtype=self.dtype)
            self.np_random = np.random.default_rng()

        def seed(self, seed=None):
            self.np_random = np.random.default_rng(seed)

        def sample(self):
            if self.dtype.kind == "f":
                return self.np_random.uniform(self.low, self.high, self.shape).astype(self.dtype)
            return self.np_random.integers(self.low, self.high.astype(np.int64) + 1,
                                           self.shape).astype(self.dtype)

    class Wrapper:
        def __init__(self, env):
            self.env = env

        def __getattr__(self, name):
            if name.startswith("_"):
                raise AttributeError(name)
            return getattr(self.env, name)

    spaces = types.ModuleType("gym.spaces")
    spaces.Box = Box
    gym = types.ModuleType("gym")
    gym.spaces, gym.Wrapper = spaces, Wrapper
    return gym


def _drq(root, name, mode, batch_size, device, stack):
    import pickle

    import numpy as np

    gym = _gym_stand_in()
    # gym (MockEnv's spaces and FrameStack's Wrapper, which the step uses:
    # stand-ins with gym's behaviour) and skimage (view_as_windows, for a
    # random crop the step does not run; kornia's crop is used).
    stack.enter_context(_attribute(sys.modules, "gym", gym))
    stack.enter_context(_attribute(sys.modules, "gym.spaces", gym.spaces))
    package = reference.load_model_package(root, name, absent=("skimage", "skimage.util",
                                                               "skimage.util.shape"))
    # obs.pkl (Git LFS, absent): make_env reads only its shape, one
    # 9x84x84 uint8 observation (MockEnv's observation space), and draws
    # the observation itself.
    stack.enter_context(_attribute(pickle, "load",
                                   lambda f: np.zeros((9, 84, 84), dtype=np.uint8)))
    return package.Model(test=mode, device=device, batch_size=batch_size)


def _dlrm(root, name, mode, batch_size, device, stack):
    # onnx: export only; sklearn: metrics of the test loop, not the step.
    return _plain(root, name, mode, batch_size, device, stack,
                  absent=("onnx", "sklearn", "sklearn.metrics"))


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


def _maml_omniglot(root, name, mode, batch_size, device, stack):
    import torch

    package = reference.load_model_package(root, name)
    # torch.load of the absent batch.pt (maml_omniglot's, which
    # functorch_maml_omniglot reads too): its 32 tasks.
    stack.enter_context(_attribute(torch, "load", lambda *args, **kwargs: _meta_inputs(32)))
    return package.Model(test=mode, device=device, jit=False, batch_size=batch_size)


def _maml(root, name, mode, batch_size, device, stack):
    # maml's Model takes jit positionally (TorchBench passes it).
    return _plain(root, name, mode, batch_size, device, stack, jit=False)


def _opacus_cifar10(root, name, mode, batch_size, device, stack):
    # opacus 1.3's ModuleValidator.fix clones the net through torch.save /
    # torch.load (a whole module: weights_only=False).
    _unsafe_torch_load(stack)
    return _plain(root, name, mode, batch_size, device, stack)


def _moco(root, name, mode, batch_size, device, stack):
    if device == "cpu":
        raise NotImplementedError("TorchBench's moco raises NotImplementedError on cpu"
                                  " (DistributedDataParallel/allgather requires cuda)")
    return _plain(root, name, mode, batch_size, device, stack)


def _tacotron2(root, name, mode, batch_size, device, stack):
    if device == "cpu":
        raise NotImplementedError("TorchBench's tacotron2 raises NotImplementedError on cpu"
                                  " (load_model assumes CUDA)")
    raise RuntimeError("tacotron2-minimal (LJSpeech wavs, Git LFS) is absent and librosa, which"
                       " its loader's mel spectrogram needs, is not installed")


def _nvidia_deeprecommender(root, name, mode, batch_size, device, stack):
    reference.stub_torchtext_legacy()
    return _plain(root, name, mode, batch_size, device, stack)


# ------------------------------------------------------------ huggingface

def _hf_configs():
    """The checkpoints' config.json values (AutoConfig.from_pretrained needs
    the hub), with their own dropouts and full depth."""
    import transformers

    from adapters import hf_Albert, hf_Bart, hf_DistilBert, hf_GPT2, hf_T5

    gpt2_dropouts = dict(resid_pdrop=0.1, embd_pdrop=0.1, attn_pdrop=0.1)

    def t5(**sizes):
        values = dict(hf_T5.T5_SMALL)
        values.update(sizes)
        return transformers.T5Config(**values)

    return {
        "albert-base-v2": hf_Albert.config,
        "facebook/bart-base": lambda: hf_Bart.config(dropout=0.1),
        "distilbert-base-uncased": hf_DistilBert.config,
        "gpt2": lambda: hf_GPT2.config(**gpt2_dropouts),
        "gpt2-large": lambda: hf_GPT2.config(n_embd=1280, n_layer=36, n_head=20, **gpt2_dropouts),
        "t5-small": t5,
        "t5-base": lambda: t5(d_model=768, d_ff=3072, num_layers=12, num_heads=12),
        "t5-large": lambda: t5(d_model=1024, d_ff=4096, num_layers=24, num_heads=16),
    }


def _huggingface(root, name, mode, batch_size, device, stack):
    import types

    import hf_common

    package = reference.load_model_package(root, name)
    factory = sys.modules[hf_common.FACTORY]
    configs = _hf_configs()

    def from_pretrained(checkpoint, *args, **kwargs):
        return configs[checkpoint]()

    # model_factory evaluates 'AutoConfig.from_pretrained("<checkpoint>")' in
    # its globals: answered from the checkpoint's config values (no hub).
    stack.enter_context(_attribute(factory, "AutoConfig",
                                   types.SimpleNamespace(from_pretrained=from_pretrained)))
    return package.Model(test=mode, device=device, batch_size=batch_size)


PREPARE = {
    "Background_Matting": _background_matting,
    "Super_SloMo": _super_slomo,
    "attention_is_all_you_need_pytorch": _attention_is_all_you_need,
    "dlrm": _dlrm,
    "functorch_maml_omniglot": _maml_omniglot,
    "maml": _maml,
    "maml_omniglot": _maml_omniglot,
    "moco": _moco,
    "nvidia_deeprecommender": _nvidia_deeprecommender,
    "opacus_cifar10": _opacus_cifar10,
    "pytorch_stargan": _pytorch_stargan,
    "pytorch_CycleGAN_and_pix2pix": _pytorch_cyclegan,
    "squeezenet1_1": _squeezenet1_1,
    "fastNLP_Bert": _fastnlp_bert,
    "fambench_xlmr": _fambench_xlmr,
    "pytorch_struct": _pytorch_struct,
    "tacotron2": _tacotron2,
    "speech_transformer": _speech_transformer,
    "drq": _drq,
}
for _name in ("hf_Albert", "hf_Bart", "hf_DistilBert", "hf_GPT2_large", "hf_T5", "hf_T5_base",
              "hf_T5_large"):
    PREPARE[_name] = _huggingface


def construct(root, name, mode, batch_size, device="cpu"):
    """TorchBench's torchbenchmark.models.<name>.Model(test=mode, device,
    batch_size), with the stand-ins the model needs here."""
    import reference_env_detection

    if name in UNAVAILABLE:
        raise RuntimeError(UNAVAILABLE[name])
    if name in reference_env_detection.CONSTRUCT:
        return reference_env_detection.CONSTRUCT[name](root, mode, batch_size, device)
    if name in PREPARE:
        with contextlib.ExitStack() as stack:
            return PREPARE[name](root, name, mode, batch_size, device, stack)
    package = reference.load_model_package(root, name)
    return package.Model(test=mode, device=device, batch_size=batch_size)
