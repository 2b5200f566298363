"""hf_Bart: TorchBench's HuggingFaceModel("hf_Bart") through its own eval()
and train(), BartForConditionalGeneration from transformers 5.24.0
(tools/golden/hf_common.py)."""

import hf_common

MODEL = "hf_Bart"
REFERENCE = ("torchbenchmark/models/hf_Bart + util/framework/huggingface/model_factory.py:"
             " HuggingFaceModel.eval, HuggingFaceModel.train"
             " (transformers 5.24.0 BartForConditionalGeneration)")
MODE = "train"
BATCH_SIZE = 2
DTYPE = "float32"
LENGTH = 16
NOTES = [
    "AutoConfig.from_pretrained(\"facebook/bart-base\") answered with the public config.json's"
    " values (vocab 50265, d_model 768, 6+6 layers, 12 heads, FFN 3072, 1024 positions, gelu,"
    " no embedding scale, pad 1 / bos 0 / eos 2 / decoder start 2), dropouts set to 0",
    f"batch {BATCH_SIZE}, length {LENGTH}: filled input_ids and labels replace the random"
    " example_inputs (eval: decoder_input_ids = input_ids; train: shift_tokens_right(labels))",
    "eval_output: Model.eval(); loss, output, grad:*: the first Model.train() call, gradients before"
    " its Adam step (lr 1e-3); after_1_step:*: the parameters after it",
]
PARAMETERS = [
    "model.shared.weight",
    "model.encoder.embed_positions.weight",
    "model.encoder.layers.0.self_attn.q_proj.weight",
    "model.decoder.layers.5.encoder_attn.k_proj.weight",
    "model.decoder.layers.5.fc2.weight",
    "model.decoder.layernorm_embedding.weight",
]


def config(dropout=0.0):
    from transformers import BartConfig

    return BartConfig(
        vocab_size=50265, d_model=768, encoder_layers=6, decoder_layers=6,
        encoder_attention_heads=12, decoder_attention_heads=12, encoder_ffn_dim=3072,
        decoder_ffn_dim=3072, max_position_embeddings=1024, activation_function="gelu",
        dropout=dropout, attention_dropout=dropout, activation_dropout=dropout,
        scale_embedding=False, pad_token_id=1, bos_token_id=0, eos_token_id=2,
        forced_eos_token_id=2, decoder_start_token_id=2, init_std=0.02)


def compute(root):
    return hf_common.compute(root, MODEL, PARAMETERS, pretrained={"facebook/bart-base": config()},
                             seq2seq=True, batch_size=BATCH_SIZE, length=LENGTH)


def prepare(root, name, mode, batch_size, device, stack):
    """TorchBench's Model with facebook/bart-base's config (dropout 0.1)."""
    return hf_common.prepare(root, name, mode, batch_size, device, stack,
                             {"facebook/bart-base": lambda: config(dropout=0.1)})
