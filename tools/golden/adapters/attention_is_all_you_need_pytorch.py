"""attention_is_all_you_need_pytorch: TorchBench's copy of the jadore801120
Transformer, built by its own Model.__init__ and run by its own train()/eval().

The reference reads Multi30k through a vendored torchtext-legacy that needs
the retired torchtext package, and a preprocessed pickle that is not in the
checkout. Both are replaced here: the torchtext-legacy modules by empty
stand-ins (Model.__init__ only names them), and train.prepare_dataloaders by
`synthetic_dataloaders`, which sets the opt fields the pickle would and hands
back one torchtext-style batch (sequence-major .src/.trg) built from the fill.
The reference's own _preprocess, patch_src and patch_trg then turn it into
(src_seq, trg_seq, gold) as they would a real batch.
"""

import types

import fill
import reference
import stand_ins

MODEL = "attention_is_all_you_need_pytorch"
REFERENCE = ("torchbenchmark/models/attention_is_all_you_need_pytorch: "
             "Model.__init__, Model.train, Model.eval, transformer/, train.py")
MODE = "train"
BATCH_SIZE = 2
DTYPE = "float32"
NOTES = [
    "vocabulary 9521 (shared de/en Multi30k vocabulary), pad 1, <s> 2, </s> 3",
    "batch: sentence lengths 'src_lengths'/'trg_lengths' in [4,22), words "
    "'src_words'/'trg_words' in [4,9521), framed <s> ... </s> and padded",
    "dropout p=0 for this check only (train() is otherwise random)",
    "eval_output: Model.eval() (eval mode); output, loss, grad:*: the first "
    "train() call (ScheduledOptim Adam, lr_mul 2, warmup 128)",
    "after_2_steps:*: first and last parameters after two train() calls",
]

# Figures of the reference's m30k_deen_shr.pkl (see the C++ model file).
VOCAB_SIZE = 9521
PAD, BOS, EOS = 1, 2, 3
FIRST_WORD = 4  # <unk> 0 and the three above come first.
MIN_WORDS, MAX_WORDS = 4, 21


def synthetic_sequences(prefix, batch_size):
    """(length, batch) token ids as torchtext's Field.process makes them."""
    import torch

    lengths = fill.deterministic_long(f"{prefix}_lengths", (batch_size,), MIN_WORDS,
                                      MAX_WORDS + 1)
    words = fill.deterministic_long(f"{prefix}_words", (batch_size, MAX_WORDS),
                                    FIRST_WORD, VOCAB_SIZE)
    padded = int(lengths.max()) + 2
    seq = torch.full((batch_size, padded), PAD, dtype=torch.long)
    for b in range(batch_size):
        n = int(lengths[b])
        seq[b, 0] = BOS
        seq[b, 1:n + 1] = words[b, :n]
        seq[b, n + 1] = EOS
    return seq.t().contiguous()


def synthetic_dataloaders(opt, device):
    """Stands in for prepare_dataloaders' Multi30k pickle (torchtext legacy
    Fields, not installed): the pickle's vocabulary and pad, and one train and
    one test batch (the step runs NUM_OF_BATCHES = 1) of opt.batch_size
    sentences of 4..21 words, framed and padded as BucketIterator makes
    them."""
    opt.max_token_seq_len = 100  # preprocess.py's -max_len default
    opt.src_pad_idx = opt.trg_pad_idx = PAD
    opt.src_vocab_size = opt.trg_vocab_size = VOCAB_SIZE
    batch = types.SimpleNamespace(src=synthetic_sequences("src", opt.batch_size),
                                  trg=synthetic_sequences("trg", opt.batch_size))
    return [batch], [batch]


def load(root):
    reference.stub_torchtext_legacy()
    package = reference.load_model_package(root, MODEL)
    package.prepare_dataloaders = synthetic_dataloaders
    return package


def compute(root):
    import torch

    package = load(root)
    model = package.Model(test="train", device="cpu", batch_size=BATCH_SIZE)
    net = model.model
    fill.deterministic_fill(net)
    for m in net.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    net.eval()
    with torch.no_grad():
        results = {"eval_output": model.eval()[0].detach().clone()}
    net.train()

    loss_holder = {}
    cal_performance = package.cal_performance

    def recording_cal_performance(*args, **kwargs):
        out = cal_performance(*args, **kwargs)
        loss_holder.setdefault("loss", out[0].detach().clone())
        return out

    package.cal_performance = recording_cal_performance
    recorder = reference.StepRecorder(net, model.optimizer._optimizer)
    model.train()
    model.train()
    recorder.close()
    package.cal_performance = cal_performance
    results.update(recorder.results)
    results["loss"] = loss_holder["loss"]
    reference.record_edges(net, "after_2_steps:", results)
    assert torch.isfinite(results["loss"]).all()
    return results


def counts(root):
    """The reference's element counts at TorchBench's configuration."""
    package = load(root)
    model = package.Model(test="eval", device="cpu", batch_size=32)
    net = model.model
    return (sum(p.numel() for p in net.parameters()),
            sum(b.numel() for b in net.buffers()))


def prepare(root, name, mode, batch_size, device, stack):
    reference.stub_torchtext_legacy()
    package = reference.load_model_package(root, name)
    stack.enter_context(stand_ins.attribute(package, "prepare_dataloaders",
                                            synthetic_dataloaders))
    return package.Model(test=mode, device=device, batch_size=batch_size)
