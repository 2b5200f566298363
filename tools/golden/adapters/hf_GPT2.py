"""hf_GPT2: TorchBench's HuggingFaceModel("hf_GPT2") through its own eval()
and train(), GPT2LMHeadModel from transformers 5.24.0 (tools/golden/
hf_common.py)."""

import hf_common

MODEL = "hf_GPT2"
REFERENCE = ("torchbenchmark/models/hf_GPT2 + util/framework/huggingface/model_factory.py:"
             " HuggingFaceModel.eval, HuggingFaceModel.train (transformers 5.24.0 GPT2LMHeadModel)")
MODE = "train"
BATCH_SIZE = 2
DTYPE = "float32"
LENGTH = 16
NOTES = [
    "AutoConfig.from_pretrained(\"gpt2\") answered with GPT2Config(vocab_size=50257, n_positions=1024,"
    " n_embd=768, n_layer=12, n_head=12) (the public gpt2 config.json), dropouts set to 0",
    f"batch {BATCH_SIZE}, length {LENGTH}: filled input_ids and labels replace the random"
    " example_inputs",
    "eval_output: Model.eval(); loss, output, grad:*: the first Model.train() call, gradients before"
    " its Adam step (lr 1e-3); after_1_step:*: the parameters after it",
]
PARAMETERS = [
    "transformer.wte.weight",
    "transformer.wpe.weight",
    "transformer.h.0.attn.c_attn.weight",
    "transformer.h.11.mlp.c_proj.weight",
    "transformer.ln_f.weight",
]


def config(**overrides):
    from transformers import GPT2Config

    values = dict(vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12,
                  resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    values.update(overrides)
    return GPT2Config(**values)


def compute(root):
    return hf_common.compute(root, MODEL, PARAMETERS, pretrained={"gpt2": config()},
                             batch_size=BATCH_SIZE, length=LENGTH)


# GPT-2's own dropouts, as its checkpoints' config.json.
GPT2_DROPOUTS = dict(resid_pdrop=0.1, embd_pdrop=0.1, attn_pdrop=0.1)


def prepare(root, name, mode, batch_size, device, stack):
    """TorchBench's Model with gpt2's config."""
    return hf_common.prepare(root, name, mode, batch_size, device, stack,
                             {"gpt2": lambda: config(**GPT2_DROPOUTS)})
