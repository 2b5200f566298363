#!/usr/bin/env bash
# run_and_compare.sh <torchbench> <python> <compare.py> <workdir>
# Runs the program twice on the CPU with a tiny time budget over one model
# of each foundation domain (every model's steps are covered by the smoke
# test), checks the JSON (instances present, none errored, counters there),
# then runs Google Benchmark's compare.py on the two files, as a user would.
set -euo pipefail
tb=$1; py=$2; compare=$3; work=$4
mkdir -p "$work"
for run in 1 2; do
  "$tb" --torchbench_device=cpu --torchbench_batch_sizes=2 --torchbench_warmup_steps=1 \
        --benchmark_min_time=0.01 \
        --benchmark_filter='^(BERT_pytorch|dlrm|pyhpc_equation_of_state|resnet50|soft_actor_critic)/' \
        --benchmark_out="$work/run$run.json" --benchmark_out_format=json
done
"$py" - "$work/run1.json" "$work/run2.json" <<'PY'
import json, sys
for path in sys.argv[1:]:
    with open(path) as f:
        doc = json.load(f)
    runs = doc["benchmarks"]
    assert runs, f"{path}: no benchmarks"
    for r in runs:
        assert not r.get("error_occurred"), f"{path}: {r['name']}: {r.get('error_message')}"
        for key in ("items_per_second", "peak_mem", "params", "wall_time"):
            assert key in r, f"{path}: {r['name']} lacks counter {key}"
        model, mode, bs = r["name"].split("/")
        assert mode in ("Train", "Eval") and bs.startswith("batch_size:"), r["name"]
    ctx = doc["context"]
    for key in ("libtorch_version", "torchbench_device", "precision", "torchbench_git_commit"):
        assert key in ctx, f"{path}: context lacks {key}"
    print(f"{path}: {len(runs)} instances, all measured")
PY
if [ -z "$compare" ] || [ ! -f "$compare" ]; then
  echo "compare.py not found (install libbenchmark-tools)"; exit 1
fi
"$py" "$compare" benchmarks "$work/run1.json" "$work/run2.json" | tee "$work/compare.txt"
grep -q "OVERALL_GEOMEAN\|batch_size:" "$work/compare.txt"
