"""hf_T5_base: TorchBench's HuggingFaceModel("hf_T5_base") through its own
eval() and train() (adapters/hf_T5.py), T5ForConditionalGeneration with
t5-base's sizes but 2 of its 12 blocks per stack: every block past the first
runs the same code, and the C++ check runs the first 2 blocks of its full
network (the counts test checks all 12 + 12)."""

import hf_common
from adapters import hf_T5

MODEL = "hf_T5_base"
REFERENCE = hf_T5.REFERENCE.replace("models/hf_T5 ", "models/hf_T5_base ")
MODE = hf_T5.MODE
BATCH_SIZE = hf_T5.BATCH_SIZE
DTYPE = hf_T5.DTYPE
SIZES = dict(d_model=768, d_ff=3072, num_layers=2, num_heads=12)
NOTES = hf_T5.notes("t5-base", "d_model=768, d_ff=3072, num_layers=2 (of 12), num_heads=12,"
                    " vocab_size=32128")


def compute(root):
    return hf_T5.compute_t5(root, MODEL, "t5-base", SIZES)


def prepare(root, name, mode, batch_size, device, stack):
    """TorchBench's Model with t5-base's config."""
    return hf_common.prepare(root, name, mode, batch_size, device, stack,
                             {"t5-base": lambda: hf_T5.checkpoint_config(
        d_model=768, d_ff=3072, num_layers=12, num_heads=12)})
