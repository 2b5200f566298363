"""hf_Reformer: TorchBench's HuggingFaceModel("hf_Reformer")
(AutoModelForMaskedLM.from_config(ReformerConfig()) with num_buckets 128,
transformers 5.24.0) and its own eval() and train(); see
tools/golden/hf_common.py.

The written-out ReformerConfig differs from the benchmarked one in:
  * axial_pos_shape (16, 16): training needs prod(axial_pos_shape) equal to
    the sequence length, and 4096 tokens cost ~30 s per step on one core;
    256 tokens still run chunked local and LSH attention (4 chunks of 64).
  * hidden_dropout_prob and local_attention_probs_dropout_prob 0 (LSH's is
    already 0): Reformer reads these rates itself, it has no nn.Dropout.
  * hash_seed set: LSH draws its rotations after torch.manual_seed(hash_seed)
    instead of from the generator as it stands, which the Train forward
    reseeds with torch.seed() (nondeterministic) before every layer half.
The fill overwrites the attention's mask-value buffers; they are reset to
the constants ReformerPreTrainedModel._init_weights gives them. float64:
an LSH bucket is an argmax, float32 rounding could flip one.
"""

import fill
import hf_common

MODEL = "hf_Reformer"
REFERENCE = ("torchbenchmark/models/hf_Reformer: HuggingFaceModel.__init__, .eval, .train "
             "(transformers 5.24.0 ReformerForMaskedLM)")
MODE = "train"
BATCH_SIZE = hf_common.BATCH_SIZE
DTYPE = "float64"
LENGTH = 256
AXIAL_POS_SHAPE = (16, 16)
HASH_SEED = 1234
PADDED_LENGTH = 200
NOTES = [n for n in hf_common.NOTES if not n.startswith("input_ids")] + [
    f"input_ids, labels: fill integers in [0, vocab) of shape {BATCH_SIZE}x{LENGTH}",
    f"ReformerConfig: axial_pos_shape {AXIAL_POS_SHAPE} (training needs prod == length), dropout rates 0,"
    f" hash_seed {HASH_SEED} (same rotations in both languages); mask-value buffers reset after the fill",
    "float64 (filled float32 values converted): LSH buckets are argmaxes",
    f"eval_output_padded: HuggingFaceModel.eval() after the step on the first {PADDED_LENGTH} ids of"
    " input_ids (padded to a multiple of the chunk length, the padding masked in both attentions)",
]
PARAMETERS = [
    "reformer.embeddings.word_embeddings.weight",
    "reformer.embeddings.position_embeddings.weights.0",
    "reformer.encoder.layers.0.attention.self_attention.query.weight",
    "reformer.encoder.layers.1.attention.self_attention.query_key.weight",
    "reformer.encoder.layers.1.attention.self_attention.value.weight",
    "reformer.encoder.layers.4.feed_forward.dense.dense.weight",
    "lm_head.decoder.weight",
]


def golden_config(**kwargs):
    from transformers import ReformerConfig

    assert not kwargs, kwargs
    return ReformerConfig(axial_pos_shape=AXIAL_POS_SHAPE, hidden_dropout_prob=0.0,
                          local_attention_probs_dropout_prob=0.0,
                          lsh_attention_probs_dropout_prob=0.0, hash_seed=HASH_SEED)


def reset_mask_values(net):
    import torch

    values = {"self_mask_value_float16": -1e3, "self_mask_value_float32": -1e5,
              "mask_value_float16": -1e4, "mask_value_float32": -1e9}
    with torch.no_grad():
        for name, buffer in net.named_buffers():
            buffer.fill_(values[name.rsplit(".", 1)[-1]])


def padded_eval(model, net, results):
    ids = fill.deterministic_long("input_ids", (BATCH_SIZE, LENGTH), 0, net.config.vocab_size)
    net.eval()
    model.example_inputs = {"input_ids": ids[:, :PADDED_LENGTH]}
    results["eval_output_padded"] = model.eval()[0].detach().clone()


def compute(root):
    import torch

    return hf_common.compute(root, MODEL, PARAMETERS, config_override={"ReformerConfig": golden_config},
                             length=LENGTH, attn_implementation="eager", after_fill=reset_mask_values,
                             dtype=torch.float64, extra=padded_eval)
