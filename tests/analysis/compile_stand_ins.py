#!/usr/bin/env python3
"""Stand-ins for tools/compile_models.py's tests, two in one file:

- run as a program, a stand-in for the torchbench program: its model list
  (--torchbench_list_models=json) of the models below, each with an Eval
  mode (train_only has none);
- passed as `tools/tb compile --stand-in THIS_FILE` (a test-only option), the
  builder of those models' modules and example inputs, as TorchBench's
  get_module() returns them (built on the CPU, then moved to the device),
  and their eval_in_nograd() as TorchBench's Model answers it:
    tiny          Linear + BatchNorm1d (a buffer) with tied weights, called
                  with keyword arguments {"x": float, "ids": int64, "scale":
                  2.0}; returns a dict {"out", "pair": (sum, None), "count": 3,
                  "ids"}: three output tensors once flat
    data_dependent  branches on a tensor's value: export fails (a
                  data-dependent guard, strict and non-strict) and
                  draft_export decides the branch on the input's value;
                  the trace records one branch too
    data_pointer  reads a tensor's address in forward: every export fails,
                  the trace records it as a constant
    needs_grad    takes an SGD step on its own loss inside forward
                  (torch.autograd.grad), as maml's eval fine-tunes: fails
                  under no_grad; eval_in_nograd() is False
    broken        its construction raises: every backend fails at build
    hangs         its construction never ends (--timeout)
    crashes       its construction aborts the process (SIGABRT)
"""
import json
import os
import sys
import time

MODELS = ("tiny", "data_dependent", "data_pointer", "needs_grad", "broken", "hangs",
          "crashes")


def eval_in_nograd(name):
    return name != "needs_grad"


def build(name, batch_size, device="cpu"):
    import torch

    module, example = build_on_cpu(name, batch_size)
    if isinstance(example, dict):
        return module.to(device), {k: v.to(device) if isinstance(v, torch.Tensor) else v
                                   for k, v in example.items()}
    return module.to(device), tuple(t.to(device) for t in example)


def build_on_cpu(name, batch_size):
    import torch

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(8, 8)
            self.bn = torch.nn.BatchNorm1d(8)
            self.head = torch.nn.Linear(8, 8, bias=False)
            self.tail = torch.nn.Linear(8, 8, bias=False)
            self.tail.weight = self.head.weight  # tied

        def forward(self, x, ids, scale=1.0):
            h = self.tail(self.head(self.bn(self.fc(x)))) * scale
            return {"out": h, "pair": (h.sum(1), None), "count": 3, "ids": ids + 1}

    class DataDependent(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(8, 8)

        def forward(self, x):
            y = self.fc(x)
            if y.sum() > 0:
                return y * 2
            return y - 1

    class DataPointer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(8, 8)

        def forward(self, x):
            # A real address: export's fake tensors have none (maml's
            # failure), dynamo cannot trace it; the trace records a constant.
            return self.fc(x) * (1 + x.data_ptr() % 1)

    class NeedsGrad(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(8, 8)

        def forward(self, x):
            loss = self.fc(x).pow(2).mean()
            params = list(self.fc.parameters())
            grads = torch.autograd.grad(loss, params)
            weight, bias = (p - 0.1 * g for p, g in zip(params, grads))
            return torch.nn.functional.linear(x, weight, bias)

    if name == "tiny":
        module = Tiny()
        with torch.no_grad():
            module.bn.running_mean.uniform_(-1, 1)
            module.bn.running_var.uniform_(0.5, 2)
        return module, {"x": torch.randn(batch_size, 8),
                        "ids": torch.arange(batch_size * 3).view(batch_size, 3), "scale": 2.0}
    if name == "data_dependent":
        return DataDependent(), (torch.randn(batch_size, 8),)
    if name == "data_pointer":
        return DataPointer(), (torch.randn(batch_size, 8),)
    if name == "needs_grad":
        return NeedsGrad(), (torch.randn(batch_size, 8),)
    if name == "hangs":
        time.sleep(3600)
    if name == "crashes":
        os.abort()
    raise RuntimeError(f"{name} cannot be built here")


def main():
    if "--torchbench_list_models=json" in sys.argv:
        print(json.dumps(
            [{"name": m, "domain": "test", "modes": ["Train", "Eval"], "train_batch_size": 4,
              "eval_batch_size": 4, "fixed_batch_size": False, "min_train_batch_size": 1,
              "min_eval_batch_size": 2 if m == "data_dependent" else 1} for m in MODELS]
            + [{"name": "train_only", "domain": "test", "modes": ["Train"],
                "train_batch_size": 4, "eval_batch_size": 0, "fixed_batch_size": False,
                "min_train_batch_size": 1, "min_eval_batch_size": 1}]))
        return 0
    print("compile_stand_ins.py: only --torchbench_list_models=json", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
