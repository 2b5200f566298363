"""pytorch_struct: TorchBench's NeuralCFG and torch-struct's SentCFG, built by
the reference's own Model.__init__ and run by its own Model.train().

The reference reads the UD-POS treebank through the vendored torchtext-legacy,
which needs the retired torchtext package and a download. Both are stood in
for: the torchtext-legacy classes by empty ones (Model.__init__ only names
them), and the four data helpers its __init__ calls (Field, UDPOS.splits,
TokenBucket, _prefetch) by ones giving a vocabulary of the treebank's size and
one batch built from the fill. torch_struct is the real package (0.5 on PyPI,
whose CKY inside algorithm and LogSemiring equal the f4e374e TorchBench
pinned). Everything else in train() is the reference's code.
"""

import sys
import types

import fill
import reference
import stand_ins

MODEL = "pytorch_struct"
REFERENCE = ("torchbenchmark/models/pytorch_struct: Model.__init__, Model.train, "
             "networks/NeuralCFG.py; torch_struct 0.5 SentCFG")
MODE = "train"
BATCH_SIZE = 15  # A token budget: three sentences of cost 5.
DTYPE = "float64"
NOTES = [
    "vocabulary 4771 (en-ud-v2 train words with min_freq 3), <pad> 1",
    "batch: 3 sentences, lengths 'lengths' in [6,10), words 'words' in "
    "[2,4771), padded with <pad> to the longest (sequence-major, transposed "
    "as _prefetch does)",
    "run in float64 (model.double() after the fill)",
    "partition: SentCFG(params, lengths).partition; loss: its mean (train() "
    "backpropagates -loss); grad:*: gradients before clip_grad_norm_(3.0); "
    "grad_norm: the total norm it returns",
    "after_step:*: parameters after the Adam step (lr 1e-3, betas 0.75/0.999)",
]

VOCAB_SIZE = 4771
PAD = 1
FIRST_WORD = 2
SENTENCES = 3
MIN_LENGTH, MAX_LENGTH = 6, 9
RECORDED = ("word_emb", "term_emb", "nonterm_emb_c", "root_emb", "s_emb",
            "mlp1.u1.weight", "mlp2.w.bias")


def golden_batch():
    """(words (b, longest) as a transposed view, lengths (b))."""
    import torch

    lengths = fill.deterministic_long("lengths", (SENTENCES,), MIN_LENGTH, MAX_LENGTH + 1)
    longest = int(lengths.max())
    words = fill.deterministic_long("words", (SENTENCES, longest), FIRST_WORD, VOCAB_SIZE)
    for b in range(SENTENCES):
        words[b, int(lengths[b]):] = PAD
    return words.t().contiguous().t(), lengths


def load(root):
    import sys

    reference.stub_torchtext_legacy()
    datasets = types.ModuleType("torchbenchmark.util.torchtext_legacy.datasets")
    datasets.UDPOS = type("UDPOS", (), {})
    sys.modules[datasets.__name__] = datasets
    pytest = types.ModuleType("pytest")
    pytest.mark = types.SimpleNamespace(parametrize=lambda *a, **k: (lambda f: f))
    sys.modules.setdefault("pytest", pytest)
    package = reference.load_model_package(root, MODEL, absent=("torchtext",))

    class Field:
        def __init__(self, **kwargs):
            self.vocab = range(VOCAB_SIZE)

        def build_vocab(self, *args, **kwargs):
            pass

    package.Field = Field
    package.UDPOS = types.SimpleNamespace(splits=lambda **kwargs: (
        types.SimpleNamespace(word=None, udtag=None), None, None))
    package.TokenBucket = lambda *args, **kwargs: None
    package._prefetch = lambda loader, device, limit=10: [golden_batch()]
    return package


def compute(root):
    import torch

    package = load(root)
    model = package.Model(test="train", device="cpu", batch_size=BATCH_SIZE)
    fill.deterministic_fill(model.model)
    model.model.double()  # In place: the optimizer keeps the parameters.

    results = {}
    SentCFG = package.SentCFG

    def recording_sentcfg(params, lengths=None):
        dist = SentCFG(params, lengths=lengths)
        # partition is a lazy property: train() reads this same tensor.
        results["partition"] = dist.partition.detach().clone()
        results["loss"] = dist.partition.mean().detach().clone()
        return dist

    named = dict(model.model.named_parameters())
    clip = torch.nn.utils.clip_grad_norm_

    def recording_clip(parameters, max_norm, *args, **kwargs):
        for name in RECORDED:
            results["grad:" + name] = named[name].grad.detach().clone()
        total = clip(parameters, max_norm, *args, **kwargs)
        results["grad_norm"] = total.detach().clone()
        return total

    package.SentCFG = recording_sentcfg
    torch.nn.utils.clip_grad_norm_ = recording_clip
    try:
        model.train()
    finally:
        package.SentCFG = SentCFG
        torch.nn.utils.clip_grad_norm_ = clip
    for name in RECORDED:
        results["after_step:" + name] = named[name].detach().clone()
    assert all(torch.isfinite(v).all() for v in results.values())
    return results


def prepare(root, name, mode, batch_size, device, stack):
    import numpy as np
    import torch


    # The UD-POS treebank (torchtext download; torchtext is not installed)
    # and pytest (the module's test class only) stand in as in the 
    load(root)
    package = sys.modules[f"torchbenchmark.models.{name}"]
    # load sets the four data helpers for good: restored after.
    for helper in ("Field", "UDPOS", "TokenBucket", "_prefetch"):
        stack.enter_context(stand_ins.attribute(package, helper, getattr(package, helper)))

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
            words = torch.full((len(lengths), lengths[0]), PAD, dtype=torch.long)
            for b, n in enumerate(lengths):
                words[b, :n] = torch.from_numpy(
                    rng.integers(FIRST_WORD, VOCAB_SIZE, n))
            # _prefetch's words are the iterator's (length, batch) tensor
            # transposed: a (batch, length) view.
            words = words.t().contiguous().t()
            batches.append((words.to(device), torch.tensor(lengths)))
        return batches

    package._prefetch = prefetch
    return package.Model(test=mode, device=device, batch_size=batch_size)
