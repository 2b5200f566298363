#!/usr/bin/env bash
# run.sh <install-prefix> <build-dir> <c++ compiler> <python>: configures,
# builds and runs the downstream project against an installed TorchBench,
# then checks that the installed torchbench program and the downstream
# benchmark binary (TorchBench's models beside the user's own benchmark)
# report the same names and counters.
set -euo pipefail
prefix=$1; build=$2; cxx=$3; py=$4
src=$(cd "$(dirname "$0")" && pwd)
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$src" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix"
cmake --build "$build" -j 2
"$build/embed_test"

name='mobilenet_v3_large/Eval/batch_size:1'
common=(--torchbench_device=cpu --torchbench_batch_sizes=1 --torchbench_warmup_steps=1 --benchmark_min_time=0.01
        --benchmark_out_format=json)
# The installed program, started as a user would (its run path finds LibTorch).
env -u LD_LIBRARY_PATH "$prefix/bin/torchbench" "${common[@]}" \
  --benchmark_filter="^$name\$" --benchmark_out="$build/program.json"
env -u LD_LIBRARY_PATH "$build/embed_bench" "${common[@]}" \
  --benchmark_filter="^$name\$|^BM_UsersOwnSum\$" --benchmark_out="$build/embedded.json"
"$py" - "$build/program.json" "$build/embedded.json" "$name" <<'PY'
import json, sys
program, embedded, name = sys.argv[1:]
runs = {p: {r["name"]: r for r in json.load(open(p))["benchmarks"]} for p in (program, embedded)}
assert set(runs[program]) == {name}, runs[program].keys()
assert set(runs[embedded]) == {name, "BM_UsersOwnSum"}, runs[embedded].keys()
ours, theirs = runs[program][name], runs[embedded][name]
for key in ("items_per_second", "peak_mem", "peak_host_rss", "wall_time", "params", "batch_size"):
    assert key in ours, f"torchbench program lacks {key}"
    assert key in theirs, f"embedded {name} lacks {key}"
assert ours["params"] == theirs["params"]
ctx = json.load(open(embedded))["context"]
assert "torchbench_device" in ctx and "libtorch_version" in ctx, ctx
print(f"installed program and embedded binary agree on {name}; BM_UsersOwnSum kept its name")
PY
# Exit codes as the program's: 2 for a filter that matches nothing.
set +e
"$build/embed_bench" --torchbench_device=cpu --benchmark_filter='^no_such_benchmark$' 2>/dev/null
rc=$?
set -e
[ "$rc" -eq 2 ] || { echo "embed_bench: exit $rc for an unmatched filter, wanted 2"; exit 1; }
echo "downstream: all checks passed"
