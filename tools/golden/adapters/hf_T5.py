"""hf_T5: TorchBench's HuggingFaceModel("hf_T5") (torchbenchmark/util/
framework/huggingface/model_factory.py) through its own eval() and train(),
T5ForConditionalGeneration from transformers 5.24.0.

AutoConfig.from_pretrained("t5-small") needs the hub, so it is answered with
T5Config built from t5-small's public config.json values (below), dropout 0
for the check. HuggingFaceModel builds the network with from_config, Adam
(lr 1e-3) and its random example_inputs; the weights are then overwritten by
the deterministic fill (by name: the tied shared/embed_tokens/lm_head weight
is filled once, as "shared.weight") and the inputs replaced by filled ids.

compute_t5 is shared with hf_T5_base and hf_T5_large, which build their
sizes with fewer blocks per stack (the C++ golden check runs the first
blocks of its full-size network; the filled names agree).

Keys (models/nlp/common/hf_t5.h, T5LanguageModel::GoldenOutputs):
  eval_logits       Model.eval() on eval_input_ids (decoder_input_ids =
                    input_ids, as HuggingFaceModel passes), length 136:
                    past the 128 max distance, so every bucket kind is used
  loss              the first Model.train() call (input_ids, labels; length
                    40), whose labels give decoder_input_ids (_shift_right)
  grad:<p>          gradients before its Adam step
  after_1_step:<p>  the parameters after it
"""

import fill
import hf_common
import reference

MODEL = "hf_T5"
REFERENCE = ("torchbenchmark/models/hf_T5 + util/framework/huggingface/model_factory.py:"
             " HuggingFaceModel.eval, HuggingFaceModel.train (transformers 5.24.0"
             " T5ForConditionalGeneration)")
MODE = "train"
BATCH_SIZE = 2
# float64: on filled weights T5's unscaled attention saturates its softmax,
# and in float32 the logits moved 2.6e-4 between AVX2 and AVX-512 kernels.
DTYPE = "float64"
EVAL_LENGTH = 136
TRAIN_LENGTH = 40

# t5-small's config.json (the fields T5Config reads).
T5_SMALL = dict(vocab_size=32128, d_model=512, d_kv=64, d_ff=2048, num_layers=6, num_heads=8,
                relative_attention_num_buckets=32, dropout_rate=0.1, layer_norm_epsilon=1e-6,
                initializer_factor=1.0, feed_forward_proj="relu", is_encoder_decoder=True,
                pad_token_id=0, eos_token_id=1, decoder_start_token_id=0, n_positions=512)


def notes(checkpoint, sizes):
    return [
        f"AutoConfig.from_pretrained(\"{checkpoint}\") answered with T5Config({sizes}) (the public"
        f" {checkpoint} config.json values), dropout_rate set to 0",
        "float64: the network converted after the fill (the optimizer keeps its parameters)",
        f"batch {BATCH_SIZE}: filled ids replace the random example_inputs",
        f"eval_logits: Model.eval() at length {EVAL_LENGTH} (decoder_input_ids = input_ids);"
        f" loss, grad:*: the first Model.train() call at length {TRAIN_LENGTH}, gradients before"
        " its Adam step (lr 1e-3); after_1_step:*: the parameters after it",
    ]


NOTES = notes("t5-small", "d_model=512, d_ff=2048, num_layers=6, num_heads=8, vocab_size=32128")


def parameters(layers):
    last = layers - 1
    return [
        "shared.weight",
        "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
        "encoder.block.0.layer.0.SelfAttention.q.weight",
        "encoder.final_layer_norm.weight",
        "decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
        f"decoder.block.{last}.layer.1.EncDecAttention.k.weight",
        f"decoder.block.{last}.layer.2.DenseReluDense.wo.weight",
    ]


def compute_t5(root, name, checkpoint, sizes):
    import torch
    import transformers

    values = dict(T5_SMALL)
    values.update(sizes)
    values["dropout_rate"] = 0.0
    config = transformers.T5Config(**values)

    def from_pretrained(requested, *args, **kwargs):
        if requested != checkpoint:
            raise ValueError(f"{name} asked for {requested}, the adapter has {checkpoint}")
        return config

    transformers.AutoConfig.from_pretrained = staticmethod(from_pretrained)
    package = reference.load_model_package(root, name)
    model = package.Model(test="train", device="cpu", batch_size=BATCH_SIZE)
    net = model.model
    assert type(net).__name__ == "T5ForConditionalGeneration"
    fill.deterministic_fill(net)
    net.double()

    def ids(key, length):
        return fill.deterministic_long(key, (BATCH_SIZE, length), 0, config.vocab_size)

    results = {}
    eval_ids = ids("eval_input_ids", EVAL_LENGTH)
    model.example_inputs = {"input_ids": eval_ids, "decoder_input_ids": eval_ids}
    net.eval()
    results["eval_logits"] = model.eval()[0].detach().clone()

    net.train()
    model.example_inputs = {"input_ids": ids("input_ids", TRAIN_LENGTH),
                            "labels": ids("labels", TRAIN_LENGTH)}
    named = dict(net.named_parameters())
    names = parameters(config.num_decoder_layers)

    def on_forward(module, args, kwargs, out):
        results["loss"] = out.loss.detach().clone()

    def on_step(optimizer, args, kwargs):
        for p in names:
            results["grad:" + p] = named[p].grad.detach().clone()

    handles = [net.register_forward_hook(on_forward, with_kwargs=True),
               model.optimizer.register_step_pre_hook(on_step)]
    model.train()
    for h in handles:
        h.remove()
    for p in names:
        results["after_1_step:" + p] = named[p].detach().clone()
    assert torch.isfinite(results["loss"]).all()
    return results


def compute(root):
    return compute_t5(root, MODEL, "t5-small", {})


def checkpoint_config(**sizes):
    """A t5-* checkpoint's config.json: t5-small's values with `sizes`."""
    import transformers

    values = dict(T5_SMALL)
    values.update(sizes)
    return transformers.T5Config(**values)


def prepare(root, name, mode, batch_size, device, stack):
    """TorchBench's Model with t5-small's config."""
    return hf_common.prepare(root, name, mode, batch_size, device, stack,
                             {"t5-small": checkpoint_config})
