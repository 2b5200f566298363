"""demucs: TorchBench's Demucs through its own Model.eval() and Model.train()."""

import fill
import reference

MODEL = "demucs"
REFERENCE = ("torchbenchmark/models/demucs: DemucsWrapper(Demucs, FlipSign, FlipChannels, Shift,"
             " Remix), L1Loss, Adam, Model.eval, Model.train")
MODE = "train"
BATCH_SIZE = 4  # Remix(group_size=4) needs a multiple of 4.
DTYPE = "float32"
CHANNELS = 8
# 44100 (Shift's cut) + Demucs.valid_length(1), the shortest input it takes.
TIME = 44100 + 17748
SEED = 20240
NOTES = [
    f"the reference's __init__ with Demucs(channels={CHANNELS}) instead of 64 (every layer,"
    " GLU, the 2-layer BiLSTM and the rescale kept): at 64 one single-threaded CPU Train step"
    " of the 265.7M-parameter network takes ~60 s",
    f"batch {BATCH_SIZE}, example_inputs filled as streams (u) of shape"
    f" ({BATCH_SIZE}, 5, 2, {TIME}) instead of rand(B, 5, 2, 426888)",
    "eval_output.0/1, eval_loss: Model.eval() in eval mode (Shift only cuts 44100 samples) and"
    " its unused L1 loss, before training",
    f"output.0/1, loss, grad:*: the first Model.train() call after torch.manual_seed({SEED}):"
    " the augmentations' randint/rand draws are the C++ port's; trimmed sources, estimates,"
    " L1 loss, edge gradients before the Adam step; after_step:*: edge parameters after it",
]


def compute(root):
    import torch

    package = reference.load_model_package(root, MODEL)
    demucs = package.Demucs
    package.Demucs = lambda channels: demucs(channels=CHANNELS)
    try:
        model = package.Model(test="train", device="cpu", batch_size=BATCH_SIZE)
    finally:
        package.Demucs = demucs
    net = model.model
    fill.deterministic_fill(net)
    model.example_inputs = (fill.deterministic_tensor("streams", (BATCH_SIZE, 5, 2, TIME)),)

    results = {}
    losses = []
    handle = model.criterion.register_forward_hook(lambda m, a, out: losses.append(out))
    try:
        net.eval()
        with torch.no_grad():
            reference.add_outputs("eval_output", model.eval(), results)
        net.train()
    finally:
        handle.remove()
    results["eval_loss"] = losses[0].detach().clone()

    torch.manual_seed(SEED)
    recorder = reference.StepRecorder(net, model.optimizer, model.criterion)
    try:
        model.train()
    finally:
        recorder.close()
    results.update(recorder.results)
    reference.record_edges(net, "after_step:", results)
    return results
