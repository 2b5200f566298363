"""The golden check every hf_* adapter shares: TorchBench's own
HuggingFaceModel (torchbenchmark/util/framework/huggingface/model_factory.py)
built for test="train", its network filled by name, and its own eval() and
train() run on filled ids (the C++ twin: hf::GoldenLmOutputs in
models/nlp/common/hf_language_model.h).

Stand-ins for what the reference reads from outside its code:
  * AutoConfig.from_pretrained(<checkpoint>) needs the hub: model_factory's
    AutoConfig is replaced by one answering from `pretrained`, the
    checkpoint's configuration written out in the adapter.
  * `config_override` replaces a config class name model_factory evaluates
    (hf_Bert_large's shorter stack).
Every nn.Dropout's p is set to 0 (random masks cannot be shared); the
attention modules read that p, or the adapters' configs set their dropout
rates to 0. input_ids and labels are fill.deterministic_long("input_ids" /
"labels", (batch, length), 0, vocab_size), replacing the Model's randint
inputs. Keys:
  eval_output       Model.eval() on input_ids (and decoder_input_ids =
                    input_ids for seq2seq models), network in eval mode
  output, loss      the network's logits and loss in the first
                    Model.train() call (input_ids and labels)
  grad:<p>          gradients just before its Adam step
  after_1_step:<p>  the parameters after it
"""

import sys
import types

import fill
import reference

BATCH_SIZE = 2
LENGTH = 16
FACTORY = "torchbenchmark.util.framework.huggingface.model_factory"

NOTES = [
    "every nn.Dropout's p set to 0 (random masks cannot be shared); attention dropouts read it or are 0"
    " in the written-out config",
    f"input_ids, labels: fill integers in [0, vocab) of shape {BATCH_SIZE}x{LENGTH} (the reference's"
    " code path at length 16, to keep the CPU check short)",
    "eval_output: HuggingFaceModel.eval() (logits under no_grad, model in eval mode)",
    "output, loss, grad:*: the first HuggingFaceModel.train() call (model(input_ids, labels),"
    " loss.backward(), Adam(lr=1e-3).step()); gradients taken just before the step",
    "after_1_step:*: the same parameters after that step",
]


def compute(root, name, parameters, pretrained=None, config_override=None, seq2seq=False,
            batch_size=BATCH_SIZE, length=LENGTH, attn_implementation="sdpa", after_fill=None,
            dtype=None, extra=None):
    """Runs TorchBench's Model for `name` and returns the golden tensors.

    pretrained: {checkpoint name: config} for AutoConfig.from_pretrained.
    config_override: {name in model_factory: callable} (e.g. BertConfig).
    attn_implementation: what the network must run (its config's).
    after_fill: called with the network after the fill (e.g. to restore
    constants the fill overwrote). dtype: the network converted to it after
    the fill (the optimizer keeps its parameters). extra: called last with
    the Model, the network and the results, to add keys."""
    import torch

    reference.load_model_package(root, name)
    factory = sys.modules[FACTORY]
    if pretrained is not None:
        def from_pretrained(checkpoint, *args, **kwargs):
            if checkpoint not in pretrained:
                raise ValueError(f"{name} asked for {checkpoint}, the adapter has {list(pretrained)}")
            return pretrained[checkpoint]

        factory.AutoConfig = types.SimpleNamespace(from_pretrained=from_pretrained)
    for attr, value in (config_override or {}).items():
        setattr(factory, attr, value)
    package = sys.modules[f"torchbenchmark.models.{name}"]
    model = package.Model(test="train", device="cpu", batch_size=batch_size)
    net = model.model
    assert net.config._attn_implementation == attn_implementation, net.config._attn_implementation
    fill.deterministic_fill(net)
    if after_fill is not None:
        after_fill(net)
    if dtype is not None:
        net.to(dtype)
    for m in net.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    vocab = net.config.vocab_size
    ids = fill.deterministic_long("input_ids", (batch_size, length), 0, vocab)
    labels = fill.deterministic_long("labels", (batch_size, length), 0, vocab)

    results = {}
    net.eval()
    model.example_inputs = {"input_ids": ids}
    if seq2seq:
        model.example_inputs["decoder_input_ids"] = ids
    results["eval_output"] = model.eval()[0].detach().clone()

    net.train()
    model.example_inputs = {"input_ids": ids, "labels": labels}
    named = dict(net.named_parameters())

    def on_forward(module, args, kwargs, out):
        if "loss" not in results:
            results["output"] = out.logits.detach().clone()
            results["loss"] = out.loss.detach().clone()

    def on_step(optimizer, args, kwargs):
        for p in parameters:
            results.setdefault("grad:" + p, named[p].grad.detach().clone())

    handles = [net.register_forward_hook(on_forward, with_kwargs=True),
               model.optimizer.register_step_pre_hook(on_step)]
    try:
        model.train()
    finally:
        for handle in handles:
            handle.remove()
    for p in parameters:
        results["after_1_step:" + p] = named[p].detach().clone()
    assert torch.isfinite(results["loss"]).all()
    if extra is not None:
        extra(model, net, results)
    return results


def prepare(root, name, mode, batch_size, device, stack, configs):
    """TorchBench's Model of an hf_* model whose model_factory reads its
    checkpoint's config from the hub: `configs` maps the checkpoint to a
    function making its config.json values (their own dropouts, full
    depth), which AutoConfig.from_pretrained answers with (no hub)."""
    import stand_ins

    package = reference.load_model_package(root, name)
    factory = sys.modules[FACTORY]

    def from_pretrained(checkpoint, *args, **kwargs):
        return configs[checkpoint]()

    # model_factory evaluates 'AutoConfig.from_pretrained("<checkpoint>")' in
    # its globals: answered from the checkpoint's config values (no hub).
    stack.enter_context(stand_ins.attribute(factory, "AutoConfig",
                                            types.SimpleNamespace(from_pretrained=from_pretrained)))
    return package.Model(test=mode, device=device, batch_size=batch_size)
