"""hf_Albert: TorchBench's HuggingFaceModel("hf_Albert")
(AutoModelForMaskedLM.from_config(AutoConfig.from_pretrained(
"albert-base-v2")), transformers 5.24.0) and its own eval() and train(); the
checkpoint's config.json values are written out below (no hub access); see
tools/golden/hf_common.py."""

import hf_common

MODEL = "hf_Albert"
REFERENCE = "torchbenchmark/models/hf_Albert: HuggingFaceModel.__init__, .eval, .train (transformers 5.24.0 AlbertForMaskedLM)"
MODE = "train"
BATCH_SIZE = hf_common.BATCH_SIZE
DTYPE = "float32"
NOTES = hf_common.NOTES + [
    "AutoConfig.from_pretrained('albert-base-v2') stands in as the checkpoint's config.json values"
    " (its dropouts are 0 already)",
]
PARAMETERS = [
    "albert.embeddings.word_embeddings.weight",
    "albert.encoder.embedding_hidden_mapping_in.weight",
    "albert.encoder.albert_layer_groups.0.albert_layers.0.attention.query.weight",
    "predictions.dense.weight",
    "predictions.bias",
]


def config():
    from transformers import AlbertConfig

    return AlbertConfig(
        vocab_size=30000, embedding_size=128, hidden_size=768, num_hidden_layers=12,
        num_hidden_groups=1, num_attention_heads=12, intermediate_size=3072, inner_group_num=1,
        hidden_act="gelu_new", hidden_dropout_prob=0, attention_probs_dropout_prob=0,
        max_position_embeddings=512, type_vocab_size=2, initializer_range=0.02,
        layer_norm_eps=1e-12, classifier_dropout_prob=0.1, pad_token_id=0, bos_token_id=2,
        eos_token_id=3)


def compute(root):
    return hf_common.compute(root, MODEL, PARAMETERS, pretrained={"albert-base-v2": config()})


def prepare(root, name, mode, batch_size, device, stack):
    """TorchBench's Model with albert-base-v2's config."""
    return hf_common.prepare(root, name, mode, batch_size, device, stack,
                             {"albert-base-v2": config})
