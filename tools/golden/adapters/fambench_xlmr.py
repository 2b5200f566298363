"""fambench_xlmr: TorchBench's Model (fairseq XLM-R large through FAMBench's
data) and its own eval() and train(), with transformers' XLMRobertaModel as
the encoder.

fairseq 0.12.2 does not install on Python 3.11 and the FAMBench submodule is
not in the checkout, so the names TorchBench's __init__.py imports from them
are given stand-ins:
  fairseq.models.roberta.XLMRModel.from_pretrained("xlmr.large")
      a hub object whose extract_features(tokens) runs transformers'
      XLMRobertaModel (no pooler) built with fairseq's xlmr.large
      configuration (below), with dropout 0 for the check.
  xlmr.generate_dataset, xlmr_parser.init_argparse
      FAMBench 4f815ecc's data rule (x = (rand(B, T) * vocab).int(),
      y = rand(B, T, 1024)) and the arguments __init__.py passes; the
      pin_memory() calls are dropped (no accelerator here). The Model's
      inputs are then replaced by filled ones anyway.
Model.__init__ (SGD lr 0.01), Model.train() and Model.eval() run unchanged.

Why transformers' XLMRobertaModel computes fairseq's extract_features: both
are post-norm RoBERTa encoders (fairseq: layernorm_embedding on, encoder
normalize_before off, no final layer_norm; transformers was converted from
these very checkpoints). Parameter names map one to one (FAIRSEQ_NAME), and:
  * positions: both compute padding_idx + cumsum(token != pad) (fairseq
    make_positions, transformers create_position_ids_from_input_ids), from
    a 514-row table;
  * transformers adds token_type_embeddings[0] (type_vocab_size 1), which
    fairseq lacks: it is set to zero here;
  * padding: fairseq zeroes the embeddings of pad tokens and masks them as
    keys; transformers only masks them (attention_mask). The filled tokens
    hold no pad (checked);
  * attention: fairseq's MultiheadAttention hands q, k, v to
    F.multi_head_attention_forward, which (need_weights False) calls
    scaled_dot_product_attention; transformers' "sdpa" attention makes the
    same call;
  * the LM head and hub buffers of fairseq are not built: extract_features
    never runs the head, so it has no output or gradient to compare.
"""

import sys
import types

import numpy as np

import fill
import reference
import stand_ins

MODEL = "fambench_xlmr"
REFERENCE = "torchbenchmark/models/fambench_xlmr: Model.__init__, Model.eval, Model.train (encoder: transformers XLMRobertaModel)"
MODE = "train"
BATCH_SIZE = 1
DTYPE = "float64"
NOTES = [
    "dropout and attention dropout set to 0 (random masks cannot be shared)",
    "run in float64 (the float32 fill converted): with filled weights the 24 layers make the features nearly"
    " equal across the 64 positions, so the loss gradient, whose sum over positions is zero, is a difference"
    " of near-equal terms and float32 rounding alone moves the gradients by up to 5e-3 relative",
    "eval_output: Model.eval() (hub.extract_features under no_grad)",
    "output, loss, grad:*: the first Model.train() call (F.cross_entropy of the B x 64 x 1024 features"
    " against rand(B, 64, 1024) probabilities, SGD lr 0.01), gradients before the step",
    "after_1_step:*: the same parameters after that step",
]

SEQ_LENGTH = 64
DATA_VOCAB = 250000
PREFIX = "model.encoder.sentence_encoder."
GOLDEN_PARAMETERS = [
    "embed_tokens.weight",
    "layernorm_embedding.weight",
    "layers.23.fc2.weight",
    "layers.23.final_layer_norm.weight",
]
_LAYER_PARTS = {
    "attention.self.query": "self_attn.q_proj",
    "attention.self.key": "self_attn.k_proj",
    "attention.self.value": "self_attn.v_proj",
    "attention.output.dense": "self_attn.out_proj",
    "attention.output.LayerNorm": "self_attn_layer_norm",
    "intermediate.dense": "fc1",
    "output.dense": "fc2",
    "output.LayerNorm": "final_layer_norm",
}
_EMBEDDING_PARTS = {
    "embeddings.word_embeddings": "embed_tokens",
    "embeddings.position_embeddings": "embed_positions",
    "embeddings.LayerNorm": "layernorm_embedding",
}


def fairseq_name(hf_name):
    """The fairseq state_dict name (under the hub) of a transformers
    XLMRobertaModel parameter, or None for token_type_embeddings."""
    module, leaf = hf_name.rsplit(".", 1)
    if module == "embeddings.token_type_embeddings":
        return None
    if module in _EMBEDDING_PARTS:
        return PREFIX + _EMBEDDING_PARTS[module] + "." + leaf
    _, _, index, part = module.split(".", 3)  # encoder.layer.<i>.<part>
    return f"{PREFIX}layers.{index}.{_LAYER_PARTS[part]}.{leaf}"


def _filled(name, shape, chunk=1 << 23):
    """fill.deterministic_tensor(name, shape, *fill_rule) computed in chunks,
    so the 256M-element embedding does not need ~10 GB of temporaries."""
    import torch

    offset, scale = fill.fill_rule(name, shape)
    numel = int(np.prod(shape))
    h = np.uint64(fill._fnv1a64(name))
    out = np.empty(numel, dtype=np.float32)
    for start in range(0, numel, chunk):
        end = min(numel, start + chunk)
        with np.errstate(over="ignore"):
            z = h + np.arange(start + 1, end + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            z ^= z >> np.uint64(31)
        u = (z >> np.uint64(40)).astype(np.float64) / 8388608.0 - 1.0
        out[start:end] = (offset + scale * u).astype(np.float32)
    return torch.from_numpy(out.reshape(shape))


def _check_chunked_fill():
    shape = (37, 11)
    name = "chunk.check.weight"
    expected = fill.deterministic_array(name, shape, np.float32, *fill.fill_rule(name, shape))
    assert np.array_equal(_filled(name, shape, chunk=50).numpy(), expected)


def build_encoder(dropout):
    from transformers import XLMRobertaConfig, XLMRobertaModel

    config = XLMRobertaConfig(
        vocab_size=250002, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
        intermediate_size=4096, hidden_act="gelu", hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout, max_position_embeddings=514, type_vocab_size=1,
        layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=0, eos_token_id=2)
    config._attn_implementation = "sdpa"
    return XLMRobertaModel(config, add_pooling_layer=False)


def _hub_class(dropout=0.0):
    import torch

    class Hub(torch.nn.Module):
        """What TorchBench uses of fairseq's RobertaHubInterface."""

        def __init__(self):
            super().__init__()
            self.model = build_encoder(dropout=dropout)

        def forward(self, tokens):
            tokens = tokens.long()
            # fairseq passes a key padding mask only when a row has padding.
            mask = tokens.ne(1).long() if tokens.eq(1).any() else None
            return self.model(input_ids=tokens, attention_mask=mask).last_hidden_state

        def extract_features(self, tokens):
            if tokens.dim() == 1:
                tokens = tokens.unsqueeze(0)
            if tokens.size(-1) > 512:
                raise ValueError("tokens exceeds maximum length")
            return self(tokens)

    return Hub


def _install_stand_ins(dropout=0.0):
    import argparse

    import torch

    hub = _hub_class(dropout)
    fairseq = types.ModuleType("fairseq")
    fairseq.models = types.SimpleNamespace(roberta=types.SimpleNamespace(
        XLMRModel=types.SimpleNamespace(from_pretrained=lambda name: hub())))
    sys.modules["fairseq"] = fairseq

    def generate_dataset(num_batches, batch_size, vocab_size, inference_only, seqlen_dist=None,
                         uniform_seqlen=None, seq_len_dist_max=256):
        xs, ys = [], []
        for _ in range(num_batches):
            xs.append((torch.rand((batch_size, uniform_seqlen)) * vocab_size).int())
            if not inference_only:
                ys.append(torch.rand((batch_size, uniform_seqlen, 1024)))
        return xs, ys

    def init_argparse():
        parser = argparse.ArgumentParser()
        parser.add_argument("--inference-only", action="store_true", default=False)
        parser.add_argument("--famconfig", type=str, default="tiny")
        parser.add_argument("--use-gpu", action="store_true", default=False)
        parser.add_argument("--num-batches", type=int, default=10)
        parser.add_argument("--batch-size", type=int, default=64)
        parser.add_argument("--sequence-length", type=int, default=64)
        parser.add_argument("--vocab-size", type=int, default=250000)
        parser.add_argument("--seqlen-dist", type=str, default=None)
        parser.add_argument("--seqlen-dist-max", type=int, default=256)
        return parser

    sys.modules["xlmr"] = types.SimpleNamespace(generate_dataset=generate_dataset)
    sys.modules["xlmr_parser"] = types.SimpleNamespace(init_argparse=init_argparse)


def compute(root):
    import torch

    _check_chunked_fill()
    _install_stand_ins()
    package = reference.load_model_package(root, "fambench_xlmr")
    model = package.Model(test="train", device="cpu", batch_size=BATCH_SIZE)
    hub = model.xlmr
    encoder = hub.model
    by_fairseq = {}
    with torch.no_grad():
        for hf_name, p in encoder.named_parameters():
            name = fairseq_name(hf_name)
            if name is None:
                p.zero_()
                continue
            p.copy_(_filled(name, tuple(p.shape)))
            by_fairseq[name[len(PREFIX):]] = p
    # The encoder's parameters, fairseq's count less its LM head (1301650).
    assert sum(p.numel() for n, p in encoder.named_parameters()
               if "token_type" not in n) == 558839808

    hub.double()  # In place: the reference's SGD keeps its parameters.
    tokens = fill.deterministic_long("tokens", (BATCH_SIZE, SEQ_LENGTH), 0, DATA_VOCAB).int()
    assert not tokens.eq(1).any(), "a pad token in the filled input"
    targets = fill.deterministic_tensor(
        "targets", (BATCH_SIZE, SEQ_LENGTH, 1024), offset=0.5, scale=0.5).double()
    model.x_l, model.y_true_l = [tokens], [targets]

    results = {"eval_output": model.eval()[0].detach().clone()}

    cross_entropy = torch.nn.functional.cross_entropy

    def recording_cross_entropy(input, target, *args, **kwargs):
        loss = cross_entropy(input, target, *args, **kwargs)
        if "loss" not in results:
            results["output"] = input.detach().clone()
            results["loss"] = loss.detach().clone()
        return loss

    package.F = types.SimpleNamespace(cross_entropy=recording_cross_entropy)

    def on_step(optimizer, args, kwargs):
        for name in GOLDEN_PARAMETERS:
            key = "grad:" + PREFIX + name
            if key not in results:
                # No copy: zero_grad() sets .grad to None, it does not
                # overwrite it (2 GB for embed_tokens in float64).
                results[key] = by_fairseq[name].grad.detach()

    handle = model.optimizer.register_step_pre_hook(on_step)
    model.train()
    handle.remove()
    for name in GOLDEN_PARAMETERS:
        results["after_1_step:" + PREFIX + name] = by_fairseq[name].detach().clone()
    assert torch.isfinite(results["loss"]).all()
    return results


def prepare(root, name, mode, batch_size, device, stack):
    # fairseq does not install on Python 3.11 and the FAMBench submodule is
    # absent: XLMRModel.from_pretrained("xlmr.large") gives transformers'
    # XLM-R large encoder (the same post-norm layers; dropout 0.1 as
    # xlmr.large's), FAMBench's generate_dataset / init_argparse their rules.
    _install_stand_ins(dropout=0.1)
    return stand_ins.plain(root, name, mode, batch_size, device, stack)
