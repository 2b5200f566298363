"""fastNLP_Bert: TorchBench's Model (fastNLP 0.6.0 BertForQuestionAnswering)
and its own eval() and train().

What stands in for what the reference reads from outside its code:
  * fastnlp.patch: TorchBench patches fastNLP's _BertWordModel to build
    BertModel from bert_config.json instead of loading weights; the same
    substitution is made here by replacing the BertModel name that
    fastNLP.embeddings.bert_embedding uses (the installed fastNLP is left
    unpatched).
  * pkg_resources (which fastNLP 0.6.0 imports for parse_version and
    setuptools >= 81 no longer ships) is given packaging's parse.
  * The simulator writes its CMRC2018 files into a temporary folder instead
    of the checkout.
  * After the reference's __init__ has built the model, its data-dependent
    vocabulary is replaced by the port's fixed one (models/nlp/
    fastnlp_bert.cpp explains it): 2869 words, each one word piece, pieces
    [PAD] 0 [UNK] 1 [CLS] 2 [SEP] 3, word w >= 3 -> piece w + 2.
"""

import os
import sys
import tempfile
import types

import numpy as np

import fill
import reference
import stand_ins

MODEL = "fastNLP_Bert"
REFERENCE = "torchbenchmark/models/fastNLP_Bert: Model.__init__, Model.eval, Model.train (fastNLP 0.6.0)"
MODE = "train"
BATCH_SIZE = 1
DTYPE = "float32"
NOTES = [
    "every nn.Dropout set to p=0 and BertEmbedding.word_dropout to 0 (random masks cannot be shared)",
    "eval_pred_*: Model.eval() over the first train batch only",
    "output_pred_*, loss: the last batch of one Model.train() call over two batches (TorchBench's has 5;"
    " cut to keep the CPU check short); grad:*: the gradients that call accumulated",
    "after_train:*: the edge parameters after train(): unchanged, as update_every=10 is never reached",
]

GRADIENTS = [
    "bert.model.encoder.embeddings.word_embeddings.weight",
    "bert.model.encoder.encoder.layer.0.attention.self.query.weight",
    "qa_outputs.weight",
]
WORD_VOCAB = 2869
CONTEXT = 457
QUESTION = 16
QUESTIONS_PER_ITEM = 5
FIRST_CHAR_WORD = 3


def _install_stand_ins():
    try:
        import pkg_resources  # noqa: F401
    except ImportError:
        from packaging.version import parse

        module = types.ModuleType("pkg_resources")
        module.parse_version = parse
        sys.modules["pkg_resources"] = module


def _redirect_simulator(package):
    sim = sys.modules[package.__name__ + ".cmrc2018_simulator"]
    out = tempfile.mkdtemp(prefix="cmrc2018-sim-")
    config = os.path.join(out, "config")
    sim.CMRC2018_DIR = out
    sim.CMRC2018_CONFIG_DIR = config
    sim.CMRC2018_TRAIN_SIM = os.path.join(out, "train.json")
    sim.CMRC2018_DEV_SIM = os.path.join(out, "dev.json")
    sim.CMRC2018_VOCAB_SIM = os.path.join(config, "vocab.txt")
    sim.CMRC2018_BERT_CONFIG = os.path.join(config, "bert_config.json")
    package.CMRC2018_DIR = out
    package.CMRC2018_CONFIG_DIR = config


def _apply_fastnlp_patch():
    import fastNLP.embeddings.bert_embedding as bert_embedding
    from fastNLP.modules.encoder.bert import BertConfig, BertModel

    def from_config(*args, **kwargs):
        path = os.environ["TORCHBENCH_FASTNLP_CONFIG_PATH"]
        return BertModel(config=BertConfig.from_json_file(path))

    bert_embedding.BertModel = types.SimpleNamespace(from_pretrained=from_config)


def build_model(root, test, batch_size):
    """The reference's Model, as TorchBench builds it (seed 1337)."""
    _install_stand_ins()
    package = reference.load_model_package(root, "fastNLP_Bert")
    _redirect_simulator(package)
    _apply_fastnlp_patch()
    reference._set_random_seed()
    return package.Model(test=test, device="cpu", batch_size=batch_size)


def _fixed_vocabulary(embed):
    import torch

    pieces = np.arange(WORD_VOCAB) + 2
    pieces[0], pieces[1], pieces[2] = 0, 1, 3
    word_model = embed.model
    word_model.word_to_wordpieces = np.array([[p] for p in pieces])
    word_model.word_pieces_lengths = torch.ones(WORD_VOCAB, dtype=torch.long)
    word_model._cls_index, word_model._sep_index, word_model._wordpiece_pad_index = 2, 3, 0
    word_model._word_pad_index = 0
    word_model._has_sep_in_vocab = True
    embed._word_sep_index, embed._word_unk_index, embed._word_pad_index = 2, 1, 0


def _batches(num_batches):
    import torch

    contexts = fill.deterministic_long("contexts", (BATCH_SIZE, CONTEXT), FIRST_CHAR_WORD, WORD_VOCAB)
    questions = fill.deterministic_long(
        "questions", (BATCH_SIZE * QUESTIONS_PER_ITEM, QUESTION), FIRST_CHAR_WORD, WORD_VOCAB)
    n = questions.shape[0]
    item = torch.arange(n) // QUESTIONS_PER_ITEM
    words = torch.cat([contexts[item], torch.full((n, 1), 2, dtype=torch.long), questions], 1)
    out = []
    for b in range(num_batches):
        w = words[b * BATCH_SIZE:(b + 1) * BATCH_SIZE]
        k = w.shape[0]
        out.append(({"words": w}, {
            "target_start": torch.zeros(k, dtype=torch.long),
            "target_end": torch.full((k,), 7, dtype=torch.long),
            "context_len": torch.full((k,), CONTEXT, dtype=torch.long),
        }))
    return out


def compute(root):
    import torch

    model = build_model(root, "train", BATCH_SIZE)
    net = model.model
    for m in net.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    model.embed.word_dropout = 0
    _fixed_vocabulary(model.embed)
    fill.deterministic_fill(net)
    batches = _batches(2)

    results = {}
    model.example_inputs = batches[:1]
    start, end = model.eval()
    results["eval_pred_start"] = start.detach().clone()
    results["eval_pred_end"] = end.detach().clone()

    compute_loss = model._compute_loss

    def recording_loss(predict, truth):
        loss = compute_loss(predict, truth)
        results["output_pred_start"] = predict["pred_start"].detach().clone()
        results["output_pred_end"] = predict["pred_end"].detach().clone()
        results["loss"] = loss.detach().clone()
        return loss

    model._compute_loss = recording_loss
    model.example_inputs = batches
    model.train()
    # qa_outputs.bias (the last edge) is left out: its gradient is zero in
    # exact arithmetic (softmax minus one-hot sums to zero), rounding noise
    # in practice.
    for name in GRADIENTS:
        results["grad:" + name] = net.get_parameter(name).grad.detach().clone()
    reference.record_edges(net, "after_train:", results)
    assert torch.isfinite(results["loss"]).all()
    return results


def prepare(root, name, mode, batch_size, device, stack):
    # pkg_resources (fastNLP 0.6.0's parse_version; setuptools >= 81 has no
    # pkg_resources): packaging's parse.
    _install_stand_ins()
    import fastNLP.embeddings.bert_embedding as bert_embedding

    package = reference.load_model_package(root, name)
    # TorchBench's own CMRC2018 simulator writes its files into a temporary
    # folder instead of the checkout.
    _redirect_simulator(package)
    # TorchBench's install applies fastnlp.patch (BertModel built from the
    # simulator's bert_config.json, no download): the same substitution.
    stack.enter_context(stand_ins.attribute(bert_embedding, "BertModel", bert_embedding.BertModel))
    _apply_fastnlp_patch()
    return package.Model(test=mode, device=device, batch_size=batch_size)
