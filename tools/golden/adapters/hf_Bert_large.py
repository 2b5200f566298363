"""hf_Bert_large: TorchBench's HuggingFaceModel("hf_Bert_large")
(AutoModelForMaskedLM.from_config(BertConfig(hidden_size=1024,
num_hidden_layers=24, num_attention_heads=16)), transformers 5.24.0) and its
own eval() and train(), with num_hidden_layers cut to 2 (model_factory's
BertConfig name replaced by one that sets it); see
tools/golden/hf_common.py. The counts test covers the 24-layer network."""

import hf_common

MODEL = "hf_Bert_large"
REFERENCE = "torchbenchmark/models/hf_Bert_large: HuggingFaceModel.__init__, .eval, .train (transformers 5.24.0 BertForMaskedLM)"
MODE = "train"
BATCH_SIZE = hf_common.BATCH_SIZE
DTYPE = "float32"
GOLDEN_LAYERS = 2
NOTES = hf_common.NOTES + [
    f"num_hidden_layers {GOLDEN_LAYERS} instead of 24 (every layer runs the same code; keeps the CPU check short)",
]
PARAMETERS = [
    "bert.embeddings.word_embeddings.weight",
    "bert.encoder.layer.0.attention.self.query.weight",
    "cls.predictions.transform.dense.weight",
    "cls.predictions.bias",
]


def compute(root):
    from transformers import BertConfig

    def shorter(**kwargs):
        assert kwargs["num_hidden_layers"] == 24, kwargs
        return BertConfig(**{**kwargs, "num_hidden_layers": GOLDEN_LAYERS})

    return hf_common.compute(root, MODEL, PARAMETERS, config_override={"BertConfig": shorter})
