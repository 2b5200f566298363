"""nvidia_deeprecommender: TorchBench's toy-mode AutoEncoder through its own eval() and train()."""

import fill
import reference
import stand_ins

MODEL = "nvidia_deeprecommender"
REFERENCE = ("torchbenchmark/models/nvidia_deeprecommender: Model(test=eval).eval,"
             " Model(test=train).train (DeepRecommender*Benchmark, toy mode)")
MODE = "train"
BATCH_SIZE = 2
DTYPE = "float32"
NOTES = [
    "weights filled under the AutoEncoder's own names; toyinputs filled (u) instead of randn",
    "eval_output: Model(test='eval').eval(), the inference benchmark (rencoder in eval mode)",
    "train: the code layer's Dropout(0.8) in eval mode (its masks cannot be shared with C++);"
    " loss: MSEloss / num_ratings of one train() call; grad:*: edge gradients before its SGD"
    " step (lr 0.005, momentum 0.9); after_step:*: edge parameters after it",
]


def compute(root):
    import torch

    # Its __init__ imports attention_is_all_you_need_pytorch's train().
    reference.stub_torchtext_legacy()
    package = reference.load_model_package(root, MODEL)
    inputs = fill.deterministic_tensor("inputs", (BATCH_SIZE, 197951))
    results = {}

    evaluator = package.Model(test="eval", device="cpu", batch_size=BATCH_SIZE)
    fill.deterministic_fill(evaluator.model.rencoder)
    evaluator.model.toyinputs = inputs
    with torch.no_grad():
        results["eval_output"] = evaluator.eval()[0].detach().clone()
    del evaluator

    trainer = package.Model(test="train", device="cpu", batch_size=BATCH_SIZE)
    bench = trainer.model
    fill.deterministic_fill(bench.rencoder)
    bench.toyinputs = inputs
    losses = []
    mse = package.nvtrain.model.MSEloss

    def recorded_mse(outputs, targets, *args):
        loss, num_ratings = mse(outputs, targets, *args)
        losses.append((loss, num_ratings))
        return loss, num_ratings

    package.nvtrain.model.MSEloss = recorded_mse
    train = bench.rencoder.train

    def train_without_dropout(mode=True):
        train(mode)
        reference.turn_off_dropout(bench.rencoder)
        return bench.rencoder

    bench.rencoder.train = train_without_dropout
    handle = bench.optimizer.register_step_pre_hook(
        lambda optimizer, args, kwargs: reference.record_edges(
            bench.rencoder, "grad:", results, gradients=True))
    try:
        trainer.train()
    finally:
        package.nvtrain.model.MSEloss = mse
        handle.remove()
    loss, num_ratings = losses[0]
    results["loss"] = (loss / num_ratings).detach().clone()
    reference.record_edges(bench.rencoder, "after_step:", results)
    return results


def prepare(root, name, mode, batch_size, device, stack):
    reference.stub_torchtext_legacy()
    return stand_ins.plain(root, name, mode, batch_size, device, stack)
