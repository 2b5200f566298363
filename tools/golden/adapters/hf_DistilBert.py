"""hf_DistilBert: TorchBench's HuggingFaceModel("hf_DistilBert")
(AutoModelForMaskedLM.from_config(AutoConfig.from_pretrained(
"distilbert-base-uncased")), transformers 5.24.0) and its own eval() and
train(); the checkpoint's config.json values are written out below (no hub
access); see tools/golden/hf_common.py."""

import hf_common

MODEL = "hf_DistilBert"
REFERENCE = "torchbenchmark/models/hf_DistilBert: HuggingFaceModel.__init__, .eval, .train (transformers 5.24.0 DistilBertForMaskedLM)"
MODE = "train"
BATCH_SIZE = hf_common.BATCH_SIZE
DTYPE = "float32"
NOTES = hf_common.NOTES + [
    "AutoConfig.from_pretrained('distilbert-base-uncased') stands in as the checkpoint's config.json values",
]
PARAMETERS = [
    "distilbert.embeddings.word_embeddings.weight",
    "distilbert.transformer.layer.0.attention.q_lin.weight",
    "vocab_transform.weight",
    "vocab_projector.bias",
]


def config():
    from transformers import DistilBertConfig

    return DistilBertConfig(
        vocab_size=30522, max_position_embeddings=512, sinusoidal_pos_embds=False, n_layers=6,
        n_heads=12, dim=768, hidden_dim=3072, dropout=0.1, attention_dropout=0.1,
        activation="gelu", initializer_range=0.02, qa_dropout=0.1, seq_classif_dropout=0.2,
        pad_token_id=0, tie_word_embeddings=True)


def compute(root):
    return hf_common.compute(root, MODEL, PARAMETERS,
                                pretrained={"distilbert-base-uncased": config()})


def prepare(root, name, mode, batch_size, device, stack):
    """TorchBench's Model with distilbert-base-uncased's config."""
    return hf_common.prepare(root, name, mode, batch_size, device, stack,
                             {"distilbert-base-uncased": config})
