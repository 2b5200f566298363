"""moco: TorchBench's MoCo v1 through its own Model.__init__ and Model.train(), on the CPU."""

import fill
import reference
import stand_ins

MODEL = "moco"
REFERENCE = ("torchbenchmark/models/moco: MoCo(resnet50, 128, 32000, 0.999, 0.07) in DDP,"
             " CrossEntropyLoss, SGD, Model.train")
MODE = "train"
BATCH_SIZE = 2
DTYPE = "float64"
SIZE = 64
SEED = 31415
NOTES = [
    "run in float64 (torch.set_default_dtype(torch.float64) while the reference builds and"
    " trains, so weights, queue and images are filled in float64): on filled weights the"
    " ResNet-50 backward through batch-2 BatchNorms amplifies float32 rounding to 4e-3"
    " relative in the query encoder's first-layer gradient (measured against the C++ port)",
    "the reference's own __init__ and train() on the CPU, which TorchBench refuses: a"
    " world-size-1 Gloo process group stands in for its NCCL one (its init_process_group"
    " call is skipped), DDP is built without device_ids, and Tensor.cuda() returns the"
    " tensor itself",
    f"batch {BATCH_SIZE}, the four batches filled as images.<i> (u) at {SIZE}x{SIZE}"
    " instead of randn(B, 3, 224, 224); weights and the queue filled by the MoCo module's"
    " names (the key encoder's too, so it is no longer a copy of the query encoder)",
    f"torch.manual_seed({SEED}) before train(): the two batch shuffles' randperm draws",
    "output.0/1, loss, grad:*: the first batch's logits, labels, CrossEntropyLoss and the"
    " query encoder's edge gradients before its SGD step; after_step:*: both encoders' edge"
    " parameters, encoder_q.bn1.running_mean, the queue and queue_ptr after the call",
]
EDGES = ("encoder_q.conv1.weight", "encoder_q.fc.bias")
AFTER = EDGES + ("encoder_k.conv1.weight", "encoder_k.fc.bias")


def compute(root):
    import tempfile

    import torch
    import torch.distributed as dist

    package = reference.load_model_package(root, MODEL)
    with tempfile.NamedTemporaryFile() as store:
        dist.init_process_group("gloo", init_method=f"file://{store.name}", world_size=1,
                                rank=0)
        ddp = torch.nn.parallel.DistributedDataParallel
        init_process_group = dist.init_process_group
        cuda = torch.Tensor.cuda

        def cpu_ddp(module, device_ids=None, **kwargs):
            return ddp(module, **kwargs)

        torch.nn.parallel.DistributedDataParallel = cpu_ddp
        dist.init_process_group = lambda *args, **kwargs: None
        torch.Tensor.cuda = lambda self, *args, **kwargs: self
        default_dtype = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)
        try:
            # A torch.device, which is not == "cpu", passes __init__'s CPU check.
            model = package.Model(test="train", device=torch.device("cpu"),
                                  batch_size=BATCH_SIZE)
            return _run(model)
        finally:
            torch.nn.parallel.DistributedDataParallel = ddp
            dist.init_process_group = init_process_group
            torch.Tensor.cuda = cuda
            torch.set_default_dtype(default_dtype)
            dist.destroy_process_group()


def _run(model):
    import torch

    moco = model.model.module
    fill.deterministic_fill(moco)
    # The DataLoader's collate_fn reads the four batches from its closure.
    cells = [c.cell_contents for c in model.example_inputs.collate_fn.__closure__]
    batches = next(c for c in cells if isinstance(c, list))
    for i in range(len(batches)):
        batches[i] = fill.deterministic_tensor(f"images.{i}", (BATCH_SIZE, 3, SIZE, SIZE),
                                               torch.float64)

    results = {}
    outputs, losses = [], []
    params = dict(moco.named_parameters())

    def on_step(optimizer, args, kwargs):
        if "loss" not in results:
            reference.add_outputs("output", outputs[0], results)
            results["loss"] = losses[0].detach().clone()
            for name in EDGES:
                results["grad:" + name] = params[name].grad.detach().clone()

    handles = [
        model.model.register_forward_hook(lambda m, a, out: outputs.append(out)),
        model.criterion.register_forward_hook(lambda m, a, out: losses.append(out)),
        model.optimizer.register_step_pre_hook(on_step),
    ]
    torch.manual_seed(SEED)
    try:
        model.train()
    finally:
        for handle in handles:
            handle.remove()
    if len(outputs) != 2 or len(losses) != 2:
        raise RuntimeError(f"expected 2 forwards, got {len(outputs)}")
    for name in AFTER:
        results["after_step:" + name] = params[name].detach().clone()
    buffers = dict(moco.named_buffers())
    for name in ("queue", "queue_ptr", "encoder_q.bn1.running_mean"):
        results["after_step:" + name] = buffers[name].detach().clone()
    return results


def prepare(root, name, mode, batch_size, device, stack):
    if device == "cpu":
        raise NotImplementedError("TorchBench's moco raises NotImplementedError on cpu"
                                  " (DistributedDataParallel/allgather requires cuda)")
    return stand_ins.plain(root, name, mode, batch_size, device, stack)
