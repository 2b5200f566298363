"""hf_GPT2_large: TorchBench's HuggingFaceModel("hf_GPT2_large") through its
own eval() and train(), GPT2LMHeadModel from transformers 5.24.0
(tools/golden/hf_common.py), with 2 of gpt2-large's 36 blocks."""

import hf_common
from adapters import hf_GPT2

MODEL = "hf_GPT2_large"
REFERENCE = ("torchbenchmark/models/hf_GPT2_large + util/framework/huggingface/model_factory.py:"
             " HuggingFaceModel.eval, HuggingFaceModel.train (transformers 5.24.0 GPT2LMHeadModel)")
MODE = "train"
BATCH_SIZE = 2
DTYPE = "float32"
LENGTH = 16
LAYERS = 2
NOTES = [
    "AutoConfig.from_pretrained(\"gpt2-large\") answered with GPT2Config(vocab_size=50257,"
    " n_positions=1024, n_embd=1280, n_layer=2, n_head=20): the public gpt2-large config.json"
    " but 2 of its 36 blocks (every block runs the same code; the C++ port runs its first 2),"
    " dropouts set to 0",
    f"batch {BATCH_SIZE}, length {LENGTH}: filled input_ids and labels replace the random"
    " example_inputs",
    "eval_output: Model.eval(); loss, output, grad:*: the first Model.train() call, gradients before"
    " its Adam step (lr 1e-3); after_1_step:*: the parameters after it",
]
PARAMETERS = [
    "transformer.wte.weight",
    "transformer.wpe.weight",
    "transformer.h.0.attn.c_attn.weight",
    "transformer.h.1.mlp.c_proj.weight",
    "transformer.ln_f.weight",
]


def compute(root):
    config = hf_GPT2.config(n_embd=1280, n_layer=LAYERS, n_head=20)
    return hf_common.compute(root, MODEL, PARAMETERS, pretrained={"gpt2-large": config},
                             batch_size=BATCH_SIZE, length=LENGTH)


def prepare(root, name, mode, batch_size, device, stack):
    """TorchBench's Model with gpt2-large's config."""
    return hf_common.prepare(root, name, mode, batch_size, device, stack,
                             {"gpt2-large": lambda: hf_GPT2.config(
        n_embd=1280, n_layer=36, n_head=20, **hf_GPT2.GPT2_DROPOUTS)})
