"""hf_Bert: TorchBench's HuggingFaceModel("hf_Bert") (AutoModelForMaskedLM
.from_config(BertConfig()), transformers 5.24.0) and its own eval() and
train(); see tools/golden/hf_common.py."""

import hf_common

MODEL = "hf_Bert"
REFERENCE = "torchbenchmark/models/hf_Bert: HuggingFaceModel.__init__, .eval, .train (transformers 5.24.0 BertForMaskedLM)"
MODE = "train"
BATCH_SIZE = hf_common.BATCH_SIZE
DTYPE = "float32"
NOTES = hf_common.NOTES
PARAMETERS = [
    "bert.embeddings.word_embeddings.weight",
    "bert.encoder.layer.0.attention.self.query.weight",
    "cls.predictions.transform.dense.weight",
    "cls.predictions.bias",
]


def compute(root):
    return hf_common.compute(root, MODEL, PARAMETERS)
