"""hf_Longformer: TorchBench's HuggingFaceModel("hf_Longformer")
(AutoModelForMaskedLM.from_config(AutoConfig.from_pretrained(
"allenai/longformer-base-4096")), transformers 5.24.0 LongformerForMaskedLM)
and its own eval() and train() (tools/golden/hf_common.py), with the
checkpoint's configuration written out and cut to 2 layers of attention
windows 16 and 8, so that a short sequence still runs the banded attention
over several overlapping chunks (length 40 is padded to 48: 5 chunks in
layer 0, 11 in layer 1). Then the global-attention path, which TorchBench's
inputs never take: the stepped network (train mode, dropout off) on the
same ids and labels with a global_attention_mask. Last, TorchBench's own
window (512) through a freshly filled 1-layer network in eval mode. The
counts test covers the 12-layer, window-512 network."""

import hf_common

MODEL = "hf_Longformer"
REFERENCE = ("torchbenchmark/models/hf_Longformer: HuggingFaceModel.__init__, .eval, .train"
             " (transformers 5.24.0 LongformerForMaskedLM)")
MODE = "train"
BATCH_SIZE = hf_common.BATCH_SIZE
DTYPE = "float32"
LENGTH = 40
GOLDEN_LAYERS = 2
GOLDEN_WINDOWS = [16, 8]
GLOBAL_TOKENS = [(0, 2), (0, 17), (1, 30)]  # (sequence, token)
PARAMETERS = [
    "longformer.embeddings.word_embeddings.weight",
    "longformer.embeddings.position_embeddings.weight",
    "longformer.encoder.layer.0.attention.self.query.weight",
    "longformer.encoder.layer.1.attention.self.value.weight",
    "lm_head.dense.weight",
    "lm_head.bias",
]
GLOBAL_PARAMETERS = [
    "longformer.encoder.layer.0.attention.self.query.weight",
    "longformer.encoder.layer.0.attention.self.query_global.weight",
    "longformer.encoder.layer.0.attention.self.key_global.weight",
    "longformer.encoder.layer.1.attention.self.value_global.weight",
]
NOTES = [
    "AutoConfig.from_pretrained(\"allenai/longformer-base-4096\") answered with its config.json's values"
    " (vocab 50265, hidden 768, 12 heads, intermediate 3072, gelu, max positions 4098, type vocab 1,"
    " layer_norm_eps 1e-5, pad 1) with num_hidden_layers 2 and attention_window [16, 8] instead of"
    " 12 and [512] * 12 (the banded path over several chunks at a short length),"
    " attention_probs_dropout_prob 0 (a float the attention reads, not an nn.Dropout)",
    "every nn.Dropout's p set to 0 (random masks cannot be shared)",
    f"input_ids, labels: fill integers in [0, vocab) of shape {BATCH_SIZE}x{LENGTH}; Longformer pads them"
    " to 48 (a multiple of the largest window) and masks the padding",
    "eval_output: HuggingFaceModel.eval() (logits under no_grad, model in eval mode)",
    "output, loss, grad:*: the first HuggingFaceModel.train() call (model(input_ids, labels),"
    " loss.backward(), Adam(lr=1e-3).step()); gradients taken just before the step",
    "after_1_step:*: the same parameters after that step",
    f"global:*: then model(input_ids, labels, global_attention_mask) with global tokens {GLOBAL_TOKENS}"
    " (sequence, position), train mode, dropout off: logits, loss and torch.autograd.grad of the loss",
    "window512:eval_output: TorchBench's own window (512, one-sided 256; the ids padded to 512) on a"
    " freshly filled 1-layer AutoModelForMaskedLM.from_config of the same configuration, eval mode,"
    " no_grad logits of input_ids",
]


def config(layers=GOLDEN_LAYERS, windows=GOLDEN_WINDOWS):
    from transformers import LongformerConfig

    return LongformerConfig(
        vocab_size=50265, hidden_size=768, num_hidden_layers=layers, num_attention_heads=12,
        intermediate_size=3072, hidden_act="gelu", hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.0, max_position_embeddings=4098, type_vocab_size=1,
        initializer_range=0.02, layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=0, eos_token_id=2,
        sep_token_id=2, attention_window=list(windows))


def compute(root):
    import torch
    import transformers

    import fill

    def add_global_keys(model, net, results):
        assert net.config.attention_window == GOLDEN_WINDOWS, net.config.attention_window
        vocab = net.config.vocab_size
        ids = fill.deterministic_long("input_ids", (BATCH_SIZE, LENGTH), 0, vocab)
        labels = fill.deterministic_long("labels", (BATCH_SIZE, LENGTH), 0, vocab)
        global_mask = torch.zeros(BATCH_SIZE, LENGTH, dtype=torch.long)
        for sequence, token in GLOBAL_TOKENS:
            global_mask[sequence, token] = 1
        assert net.training
        out = net(input_ids=ids, labels=labels, global_attention_mask=global_mask)
        results["global:output"] = out.logits.detach().clone()
        results["global:loss"] = out.loss.detach().clone()
        named = dict(net.named_parameters())
        grads = torch.autograd.grad(out.loss, [named[p] for p in GLOBAL_PARAMETERS])
        for p, g in zip(GLOBAL_PARAMETERS, grads):
            results["global:grad:" + p] = g.detach().clone()

    results = hf_common.compute(root, MODEL, PARAMETERS,
                                pretrained={"allenai/longformer-base-4096": config()},
                                length=LENGTH, attn_implementation="eager",
                                extra=add_global_keys)
    vocab = results["eval_output"].shape[-1]
    ids = fill.deterministic_long("input_ids", (BATCH_SIZE, LENGTH), 0, vocab)
    wide = transformers.AutoModelForMaskedLM.from_config(config(layers=1, windows=[512]))
    fill.deterministic_fill(wide)
    wide.eval()  # Dropout off.
    with torch.no_grad():
        results["window512:eval_output"] = wide(input_ids=ids).logits.detach().clone()
    return results
