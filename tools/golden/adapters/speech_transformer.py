"""speech_transformer: TorchBench's copy of kaituoxu/Speech-Transformer, run by
its own SpeechTransformerTrainConfig.train() and Transformer.recognize().

The configs' __init__ read Kaldi features and json lists from TorchBench's
data tarball (speech_transformer_inputs), which is not in the checkout. The
configs are therefore made without __init__ and given, field by field, what
their __init__ builds: the Encoder, Decoder, Transformer and
TransformerOptimizer from the config's own class attributes, the eval config's
second Transformer over the same encoder and decoder, and one batch made from
the fill (in place of the data loader). Everything they then run is the
reference's own code.
"""

import json
import math
import sys

import fill
import reference
import stand_ins

MODEL = "speech_transformer"
REFERENCE = ("torchbenchmark/models/speech_transformer: config.py "
             "SpeechTransformerTrainConfig.train, SpeechTransformerEvalConfig.eval, "
             "speech_transformer/transformer/")
MODE = "train"
BATCH_SIZE = 2
DTYPE = "float32"
DECODE_MAX_LEN = 8
NOTES = [
    "vocabulary 1014 (<unk> 0, <sos> 1, <eos> 2), LFR m=4 n=3 over 80-dim fbank",
    "train batch: 2 utterances of 337 and 256 fbank frames ('train_fbank', "
    "N(0,1)-scaled fill), 10 and 9 characters ('train_chars' in [3,1014))",
    "dropout p=0 for this check only (train() is otherwise random)",
    "output, loss, grad:*: the first train() call's training pass (TransformerOptimizer "
    "Adam, k 0.2, warmup 1; label smoothing 0.1); cv_loss: its eval-mode pass, which "
    "also steps the optimizer (cross_valid is False)",
    "after_train_call:*: first and last parameters after that train() call (its two "
    "steps); later steps are left out: Adam's eps 1e-9 lets 1e-10 gradient noise move "
    "them by 1e-3 in the reference itself",
    f"eval_yseq, eval_score: recognize() on the filled weights, beam 5, nbest 1, decode_max_len "
    f"{DECODE_MAX_LEN} (100 in TorchBench; shortened to keep the check cheap) on "
    "one utterance of 290 fbank frames ('eval_fbank')",
    "get_subsequent_mask's uint8 mask is given as bool during recognize(): "
    "torch 2.14 masked_fill rejects uint8 masks; the values are unchanged",
]

VOCAB_SIZE = 1014
FIRST_CHAR = 3
GOLDEN_UTTERANCES = [(337, 10), (256, 9)]  # (fbank frames, characters)
EVAL_FRAMES = 290


def load(root):
    try:
        return reference.load_model_package(root, MODEL)
    except ImportError:
        # config.py imports DATA_PATH, which the stand-in package lacks;
        # it is only read by the data loading this adapter replaces.
        sys.modules["torchbenchmark"].DATA_PATH = "/nonexistent"
        for name in [n for n in sys.modules if n.startswith(f"torchbenchmark.models.{MODEL}")]:
            del sys.modules[name]
        return reference.load_model_package(root, MODEL)


def fbank(name, frames):
    """CMVN-normalised 80-dim fbank stand-in: the fill scaled to unit variance."""
    return fill.deterministic_array(name, (frames, 80), scale=math.sqrt(3.0))


def build_configs(root):
    import torch

    package = load(root)
    config = sys.modules[f"torchbenchmark.models.{MODEL}.config"]
    train_cls, eval_cls = config.SpeechTransformerTrainConfig, config.SpeechTransformerEvalConfig
    cfg = train_cls.__new__(train_cls)
    cfg.device = "cpu"
    cfg.sos_id, cfg.eos_id, cfg.vocab_size = 1, 2, VOCAB_SIZE
    cfg.encoder = config.Encoder(cfg.d_input * cfg.LFR_m, cfg.n_layers_enc, cfg.n_head,
                                 cfg.d_k, cfg.d_v, cfg.d_model, cfg.d_inner,
                                 dropout=cfg.dropout, pe_maxlen=cfg.pe_maxlen)
    cfg.decoder = config.Decoder(cfg.sos_id, cfg.eos_id, cfg.vocab_size, cfg.d_word_vec,
                                 cfg.n_layers_dec, cfg.n_head, cfg.d_k, cfg.d_v,
                                 cfg.d_model, cfg.d_inner, dropout=cfg.dropout,
                                 tgt_emb_prj_weight_sharing=cfg.tgt_emb_prj_weight_sharing,
                                 pe_maxlen=cfg.pe_maxlen)
    cfg.tr_loss = torch.Tensor(cfg.epochs)
    cfg.cv_loss = torch.Tensor(cfg.epochs)
    cfg.model = config.Transformer(cfg.encoder, cfg.decoder)
    cfg.optimizer = config.TransformerOptimizer(
        torch.optim.Adam(cfg.model.parameters(), betas=(0.9, 0.98), eps=1e-09),
        cfg.k, cfg.d_model, cfg.warmup_steps)
    cfg._reset()
    evalcfg = eval_cls.__new__(eval_cls)
    evalcfg.device = "cpu"
    evalcfg.model = config.Transformer(cfg.encoder, cfg.decoder)
    evalcfg.LFR_m, evalcfg.LFR_n = cfg.LFR_m, cfg.LFR_n
    evalcfg.char_list = [str(i) for i in range(VOCAB_SIZE)]
    evalcfg.sos_id, evalcfg.eos_id = cfg.sos_id, cfg.eos_id
    return package, config, cfg, evalcfg


def compute(root):
    import torch

    package, config, cfg, evalcfg = build_configs(root)
    net = cfg.model
    fill.deterministic_fill(net)
    for m in net.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0

    # One batch as AudioDataLoader's collate makes it.
    utils = sys.modules[f"torchbenchmark.models.{MODEL}.speech_transformer.utils"]
    feats, targets = [], []
    for i, (frames, chars) in enumerate(GOLDEN_UTTERANCES):
        lfr = config.build_LFR_features(fbank(f"train_fbank_{i}", frames), cfg.LFR_m, cfg.LFR_n)
        feats.append(torch.from_numpy(lfr).float())
        targets.append(fill.deterministic_long(f"train_chars_{i}", (chars,), FIRST_CHAR,
                                               VOCAB_SIZE))
    padded_input = utils.pad_list(feats, 0)
    input_lengths = torch.tensor([f.size(0) for f in feats])
    padded_target = utils.pad_list(targets, utils.IGNORE_ID)
    cfg.data_loader = [(padded_input, input_lengths, padded_target)]

    results = {}
    losses = []
    cal_performance = config.cal_performance

    def recording_cal_performance(*args, **kwargs):
        out = cal_performance(*args, **kwargs)
        losses.append(out[0].detach().clone())
        return out

    outputs = []
    hook = net.register_forward_hook(lambda m, a, out: outputs.append(out[0].detach().clone()))

    def on_step(optimizer, args, kwargs):
        if "output" in results:
            return
        results["output"] = outputs[-1]
        reference.record_edges(net, "grad:", results, gradients=True)

    # Model.eval(): beam search on the filled weights (TorchBench builds a
    # fresh model for eval; it is never trained).
    raw = fbank("eval_fbank", EVAL_FRAMES)
    lfr = torch.from_numpy(config.build_LFR_features(raw, cfg.LFR_m, cfg.LFR_n)).float()
    evalcfg.example_inputs = [(lfr, torch.tensor([lfr.size(0)], dtype=torch.int))]
    evalcfg.decode_max_len = DECODE_MAX_LEN
    decoder_module = sys.modules[
        f"torchbenchmark.models.{MODEL}.speech_transformer.transformer.decoder"]
    subsequent_mask = decoder_module.get_subsequent_mask
    decoder_module.get_subsequent_mask = lambda seq: subsequent_mask(seq).bool()
    evalcfg.model.eval()
    try:
        hyps = evalcfg.eval()
    finally:
        decoder_module.get_subsequent_mask = subsequent_mask
    results["eval_yseq"] = torch.tensor(hyps[0]["yseq"], dtype=torch.float32)
    results["eval_score"] = hyps[0]["score"].detach().reshape(1).float()

    step_hook = cfg.optimizer.optimizer.register_step_pre_hook(on_step)
    config.cal_performance = recording_cal_performance
    cfg.train(epoch=1)
    config.cal_performance = cal_performance
    hook.remove()
    step_hook.remove()
    results["loss"] = losses[0]
    results["cv_loss"] = losses[1]
    reference.record_edges(net, "after_train_call:", results)

    assert torch.isfinite(results["loss"]).all()
    return results


def counts(root):
    """The reference's element counts at TorchBench's configuration."""
    _, _, cfg, _ = build_configs(root)
    net = cfg.model
    return (sum(p.numel() for p in net.parameters()),
            sum(b.numel() for b in net.buffers()))


# speech_transformer_inputs (three AISHELL-1 speakers), as pytorch/benchmark
# committed them at 6c1f7247 (models/speech/speech_transformer.cpp): the
# train set's (fbank frames, characters), 1014 characters, and the first
# test utterance's 290 frames. The dev set is read but never iterated.
SPEECH_TRAIN = ((612, 17), (598, 15), (587, 21), (539, 18), (439, 9), (411, 12), (385, 11),
                (337, 10), (315, 9), (256, 9))


SPEECH_TEST = ((290, 9),)


SPEECH_VOCAB = 1014


def prepare(root, name, mode, batch_size, device, stack):
    import json

    import kaldi_io
    import numpy as np

    package = reference.load_model_package(root, name)
    config = sys.modules[f"torchbenchmark.models.{name}.config"]
    data = stand_ins.temporary_data_path(stack, config)
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
