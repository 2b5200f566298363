"""What the hf_* adapters share: TorchBench's own HuggingFaceModel
(torchbenchmark/util/framework/huggingface/model_factory.py) built from a
configuration written out in the adapter, since the checkout's
AutoConfig.from_pretrained("<checkpoint>") needs the hub, and its own eval()
and train() run on filled weights and ids.

The keys match HfLanguageModel::GoldenLmOutputs in
models/nlp/common/hf_language_model.h:
  eval_output       Model.eval() on input_ids (and decoder_input_ids =
                    input_ids for seq2seq models), network in eval mode
  loss, output      the network's output in the first Model.train() call
                    (input_ids and labels)
  grad:<p>          gradients before its Adam step
  after_1_step:<p>  the parameters after it
"""

import fill
import reference


def compute(root, name, checkpoint, config, batch_size, length, parameters, seq2seq=False):
    import torch
    import transformers

    def from_pretrained(requested, *args, **kwargs):
        if requested != checkpoint:
            raise ValueError(f"{name} asked for {requested}, the adapter has {checkpoint}")
        return config

    transformers.AutoConfig.from_pretrained = staticmethod(from_pretrained)
    package = reference.load_model_package(root, name)
    model = package.Model(test="train", device="cpu", batch_size=batch_size)
    net = model.model
    fill.deterministic_fill(net)
    ids = fill.deterministic_long("input_ids", (batch_size, length), 0, config.vocab_size)
    labels = fill.deterministic_long("labels", (batch_size, length), 0, config.vocab_size)

    results = {}
    model.example_inputs = {"input_ids": ids}
    if seq2seq:
        model.example_inputs["decoder_input_ids"] = ids
    net.eval()
    results["eval_output"] = model.eval()[0].detach().clone()

    net.train()
    model.example_inputs = {"input_ids": ids, "labels": labels}
    named = dict(net.named_parameters())

    def on_forward(module, args, kwargs, out):
        results["loss"] = out.loss.detach().clone()
        results["output"] = out.logits.detach().clone()

    def on_step(optimizer, args, kwargs):
        for p in parameters:
            results["grad:" + p] = named[p].grad.detach().clone()

    handles = [net.register_forward_hook(on_forward, with_kwargs=True),
               model.optimizer.register_step_pre_hook(on_step)]
    model.train()
    for h in handles:
        h.remove()
    for p in parameters:
        results["after_1_step:" + p] = named[p].detach().clone()
    assert torch.isfinite(results["loss"]).all()
    return results
