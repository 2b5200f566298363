#!/usr/bin/env python3
"""C++ step time beside the same reference model's step in Python eager.

Runs, in one invocation on one machine, the torchbench program and the
Python reference of each model (torchvision / timm / transformers, with
TorchBench's step)
on the CPU with the same thread count, the same warm-up (3 steps) and the
same statistic (median of the timed steps, each step timed alone after the
previous one finished), then prints both and their ratio.

    .venv/bin/python tools/compare_eager.py --batch-size 8 \\
        --models resnet18 mobilenet_v2 timm_vision_transformer

The Python side mirrors TorchBench 43ca0857: TorchVisionModel (Adam lr 1e-3,
CrossEntropy against rand_like soft targets, inputs rand_like(randn)) and
TimmModel (timm SGD nesterov lr 1e-4 momentum 0.9 weight decay 1e-4 without
decay on biases/norms, CrossEntropy on fresh random labels each step) and
HuggingFaceModel (from_config, randint ids of its train/eval length, the eval
length divided by cpu_input_slice; Train: model(input_ids, labels).loss,
backward, Adam lr 1e-3 with no zero_grad, as at 43ca0857); eval is the
forward under no_grad.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

# TorchBench model name -> (package, builder name)
REFERENCES = {
    "alexnet": ("torchvision", "alexnet"),
    "densenet121": ("torchvision", "densenet121"),
    "mnasnet1_0": ("torchvision", "mnasnet1_0"),
    "mobilenet_v2": ("torchvision", "mobilenet_v2"),
    "mobilenet_v3_large": ("torchvision", "mobilenet_v3_large"),
    "resnet18": ("torchvision", "resnet18"),
    "resnet50": ("torchvision", "resnet50"),
    "resnet152": ("torchvision", "resnet152"),
    "resnext50_32x4d": ("torchvision", "resnext50_32x4d"),
    "shufflenet_v2_x1_0": ("torchvision", "shufflenet_v2_x1_0"),
    "vgg16": ("torchvision", "vgg16"),
    "timm_efficientnet": ("timm", "efficientnet_b0"),
    "timm_nfnet": ("timm", "dm_nfnet_f0"),
    "timm_regnet": ("timm", "regnety_120"),
    "timm_resnest": ("timm", "resnest14d"),
    "timm_vision_transformer": ("timm", "vit_small_patch16_224"),
    "timm_vovnet": ("timm", "vovnet39a"),
    # (config class or (class, its arguments), auto class, train length,
    # CPU eval length)
    "hf_Bert": ("transformers", ("BertConfig", "AutoModelForMaskedLM", 512, 512)),
    "hf_GPT2": ("transformers", ("GPT2Config", "AutoModelForCausalLM", 512, 1024 // 4)),
    # allenai/longformer-base-4096's config.json (no hub here).
    "hf_Longformer": ("transformers", (
        ("LongformerConfig", dict(vocab_size=50265, max_position_embeddings=4098,
                                  type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=1,
                                  attention_window=[512] * 12)),
        "AutoModelForMaskedLM", 1024, 4096 // 8)),
}


def python_step_times(name, mode, batch_size, warmup, steps, seed):
    import torch

    torch.manual_seed(seed)
    package, builder = REFERENCES[name]
    if package == "torchvision":
        import torchvision

        model = getattr(torchvision.models, builder)(weights=None)
        x = torch.randn(batch_size, 3, 224, 224)
        if mode == "Train":
            model.train()
            with torch.no_grad():
                out = model(x)
            real_input = torch.rand_like(x)
            target = torch.rand_like(out)
            opt = torch.optim.Adam(model.parameters(), lr=1e-3)
            loss_fn = torch.nn.CrossEntropyLoss()

            def step():
                opt.zero_grad()
                loss_fn(model(real_input), target).backward()
                opt.step()
        else:
            model.eval()

            def step():
                with torch.no_grad():
                    model(x)
    elif package == "transformers":
        import transformers

        config_name, auto_name, train_length, eval_length = builder
        config_name, config_args = (
            config_name if isinstance(config_name, tuple) else (config_name, {}))
        config = getattr(transformers, config_name)(**config_args)
        model = getattr(transformers, auto_name).from_config(config)
        length = train_length if mode == "Train" else eval_length
        ids = torch.randint(0, config.vocab_size, (batch_size, length))
        if mode == "Train":
            labels = torch.randint(0, config.vocab_size, (batch_size, length))
            model.train()
            opt = torch.optim.Adam(model.parameters(), lr=1e-3)

            def step():
                model(input_ids=ids, labels=labels).loss.backward()
                opt.step()
        else:
            model.eval()

            def step():
                with torch.no_grad():
                    model(input_ids=ids).logits
    else:
        import timm
        from timm.optim import create_optimizer_v2

        model = timm.create_model(builder, pretrained=False)
        x = torch.randn((batch_size,) + tuple(model.default_cfg["input_size"]))
        if mode == "Train":
            model.train()
            opt = create_optimizer_v2(model, opt="sgd", lr=1e-4,
                                      weight_decay=1e-4, momentum=0.9)
            loss_fn = torch.nn.CrossEntropyLoss()

            def step():
                opt.zero_grad()
                out = model(x)
                target = torch.empty(out.shape[0], dtype=torch.long).random_(
                    model.num_classes)
                loss_fn(out, target).backward()
                opt.step()
        else:
            model.eval()

            def step():
                with torch.no_grad():
                    model(x)
    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return times


def cpp_step_times(binary, names, batch_size, warmup, steps, seed):
    """Returns {benchmark name: [seconds per step, ...]} from torchbench."""
    pattern = "^(" + "|".join(names) + ")/"
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cpp.json")
        proc = subprocess.run(
            [binary, "--torchbench_device=cpu",
             f"--torchbench_batch_sizes={batch_size}",
             f"--torchbench_warmup_steps={warmup}", f"--torchbench_seed={seed}",
             f"--benchmark_filter={pattern}",
             # One step per repetition: each repetition's time is one step.
             f"--benchmark_repetitions={steps}", "--benchmark_min_time=1e-9",
             "--benchmark_report_aggregates_only=false",
             f"--benchmark_out={out}", "--benchmark_out_format=json"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if proc.returncode != 0:
            sys.exit(f"compare_eager.py: torchbench failed:\n{proc.stderr}")
        with open(out) as f:
            doc = json.load(f)
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    times = {}
    for run in doc["benchmarks"]:
        if run.get("run_type") != "iteration" or run.get("error_occurred"):
            continue
        times.setdefault(run["name"], []).append(
            run["real_time"] * scale[run["time_unit"]])
    return times, doc["context"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+",
                        default=["resnet18", "mobilenet_v2",
                                 "timm_vision_transformer"])
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--binary", default=os.path.join(
        os.path.dirname(__file__), "..", "build", "benchmarks", "torchbench"))
    args = parser.parse_args()
    unknown = [m for m in args.models if m not in REFERENCES]
    if unknown:
        sys.exit(f"compare_eager.py: no Python reference for {unknown}")

    import torch

    cpp, context = cpp_step_times(args.binary, args.models, args.batch_size,
                                  args.warmup, args.steps, args.seed)
    threads = int(context.get("intra_op_threads", torch.get_num_threads()))
    torch.set_num_threads(threads)
    print(f"CPU, batch {args.batch_size}, {threads} threads, warm-up "
          f"{args.warmup}, median of {args.steps} steps; LibTorch "
          f"{context.get('libtorch_version')} vs torch {torch.__version__}")
    print(f"{'benchmark':45s} {'C++ ms':>10s} {'Python ms':>10s} {'C++/Py':>8s}")
    for name in args.models:
        for mode in ("Train", "Eval"):
            key = f"{name}/{mode}/batch_size:{args.batch_size}"
            py = statistics.median(python_step_times(
                name, mode, args.batch_size, args.warmup, args.steps,
                args.seed))
            c = statistics.median(cpp[key]) if key in cpp else float("nan")
            print(f"{key:45s} {c * 1e3:10.1f} {py * 1e3:10.1f} {c / py:8.3f}")


if __name__ == "__main__":
    main()
