"""dlrm: TorchBench's DLRM_Net through its own train() and eval()."""

import torch

import fill
import reference
import stand_ins

MODEL = "dlrm"
REFERENCE = "torchbenchmark/models/dlrm: Model.__init__, Model.train, Model.eval (DLRM_Net)"
MODE = "train"
BATCH_SIZE = 2
DTYPE = "float32"
TABLES = 8
ROWS = 1000000
PER_BAG = 100  # num_indices_per_lookup, fixed
NOTES = [
    "inputs filled: dense_x = 0.5 + 0.5 u (U[0, 1)), targets likewise; each table's bags hold"
    " 100 indices in [0, 1000000) (indices.<k>), offsets 0, 100, ...",
    "eval_output: Model.eval(); output, loss (MSE, as train() sets it), grad:* (the first table's"
    " sparse gradient compared dense): the first train() call; after_2_steps:*: after two (SGD lr 0.01)",
]


def inputs(batch):
    dense_x = fill.deterministic_tensor("dense_x", (batch, 512), torch.float32, 0.5, 0.5)
    offsets = torch.stack([torch.arange(batch, dtype=torch.int64) * PER_BAG] * TABLES)
    indices = [fill.deterministic_long(f"indices.{k}", (batch * PER_BAG,), 0, ROWS)
               for k in range(TABLES)]
    targets = fill.deterministic_tensor("targets", (batch, 1), torch.float32, 0.5, 0.5)
    return (dense_x, offsets, indices), targets


def compute(root):
    # dlrm_s_pytorch imports onnx (ONNX export) and sklearn.metrics (its
    # script's test metrics) at module level; neither runs here.
    package = reference.load_model_package(
        root, MODEL, absent=("onnx", "sklearn", "sklearn.metrics"))
    model = package.Model(test="train", device="cpu", batch_size=BATCH_SIZE)
    net = model.model
    fill.deterministic_fill(net)
    model.example_inputs, model.targets = inputs(BATCH_SIZE)
    results = {}
    with torch.no_grad():
        reference.add_outputs("eval_output", model.eval()[0], results)
    reference.record_two_train_steps(net, model.optimizer, model.loss_fn, model.train, results)
    return results


def prepare(root, name, mode, batch_size, device, stack):
    # onnx: export only; sklearn: metrics of the test loop, not the step.
    return stand_ins.plain(root, name, mode, batch_size, device, stack,
                           absent=("onnx", "sklearn", "sklearn.metrics"))
