"""The golden check shared by the hf_* masked-LM adapters (hf_Bert,
hf_Bert_large, hf_DistilBert, hf_Albert): TorchBench's own HuggingFaceModel
(torchbenchmark/util/framework/huggingface/model_factory.py) built for
test="train" at batch 2, its network filled by name, and its own eval() and
train() run on filled ids of length 16 (the C++ twin: MaskedLmModel in
models/nlp/common/hf_bert_blocks.h).

Stand-ins for what the reference reads from outside its code:
  * AutoConfig.from_pretrained(<checkpoint>) needs the hub; model_factory's
    AutoConfig name is replaced by one returning the checkpoint's
    configuration written out in the adapter.
  * `config_override`, when given, replaces a config class name model_factory
    evaluates (hf_Bert_large's shorter stack).
Every nn.Dropout's p is set to 0 (random masks cannot be shared): the
attention modules read that p for SDPA's dropout_p, so this turns off the
attention-probability dropout as well. The input ids and labels are
fill.deterministic_long("input_ids" / "labels", (2, 16), 0, vocab_size),
replacing the Model's randint inputs of length 512.
"""

import sys
import types

import fill
import reference

BATCH_SIZE = 2
LENGTH = 16
FACTORY = "torchbenchmark.util.framework.huggingface.model_factory"

NOTES = [
    "every nn.Dropout's p set to 0, which the attention modules also pass to SDPA (random masks cannot be shared)",
    f"input_ids, labels: fill integers in [0, vocab) of shape {BATCH_SIZE}x{LENGTH} (the reference's code path at"
    " length 16 instead of 512, to keep the CPU check short)",
    "eval_output: HuggingFaceModel.eval() (logits under no_grad, model in eval mode)",
    "output, loss, grad:*: the first HuggingFaceModel.train() call (model(input_ids, labels), loss.backward(),"
    " Adam(lr=1e-3).step()); gradients taken just before the step",
    "after_1_step:*: the same parameters after that step",
]


def compute(root, name, parameters, pretrained=None, config_override=None):
    """Runs TorchBench's Model for `name` and returns the golden tensors.

    pretrained: {checkpoint name: config} for AutoConfig.from_pretrained.
    config_override: {name in model_factory: callable} (e.g. BertConfig)."""
    import torch

    reference.load_model_package(root, name)
    factory = sys.modules[FACTORY]
    if pretrained is not None:
        def from_pretrained(checkpoint, *args, **kwargs):
            return pretrained[checkpoint]

        factory.AutoConfig = types.SimpleNamespace(from_pretrained=from_pretrained)
    for attr, value in (config_override or {}).items():
        setattr(factory, attr, value)
    package = sys.modules[f"torchbenchmark.models.{name}"]
    model = package.Model(test="train", device="cpu", batch_size=BATCH_SIZE)
    net = model.model
    assert net.config._attn_implementation == "sdpa", net.config._attn_implementation
    fill.deterministic_fill(net)
    for m in net.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    vocab = net.config.vocab_size
    ids = fill.deterministic_long("input_ids", (BATCH_SIZE, LENGTH), 0, vocab)
    labels = fill.deterministic_long("labels", (BATCH_SIZE, LENGTH), 0, vocab)

    results = {}
    net.eval()
    model.example_inputs = {"input_ids": ids}
    results["eval_output"] = model.eval()[0].detach().clone()

    net.train()
    model.example_inputs = {"input_ids": ids, "labels": labels}
    named = dict(net.named_parameters())
    original = net.forward

    def forward(*args, **kwargs):
        out = original(*args, **kwargs)
        if "loss" not in results:
            results["output"] = out.logits.detach().clone()
            results["loss"] = out.loss.detach().clone()
        return out

    def on_step(optimizer, args, kwargs):
        for p in parameters:
            results.setdefault("grad:" + p, named[p].grad.detach().clone())

    net.forward = forward
    handle = model.optimizer.register_step_pre_hook(on_step)
    try:
        model.train()
    finally:
        handle.remove()
        del net.forward
    for p in parameters:
        results["after_1_step:" + p] = named[p].detach().clone()
    assert torch.isfinite(results["loss"]).all()
    return results
