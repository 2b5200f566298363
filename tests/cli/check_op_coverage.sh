#!/usr/bin/env bash
# check_op_coverage.sh <torchbench> <python>: --torchbench_op_coverage writes
# the registry line and one line per instance; a second run, with each
# instance in its own process this time, gives the same lines (coverage does
# not depend on timing or on the process); an unwritable file is one line and
# exit 2.
set -euo pipefail
tb=$1
py=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
run() {
  "$tb" --torchbench_device=cpu --torchbench_batch_sizes=1 --torchbench_warmup_steps=1 \
    --benchmark_min_time=0.000001 '--benchmark_filter=^phlippe_resnet/' \
    --torchbench_op_coverage="$1" "${@:2}" >"$dir/out.txt" 2>&1 ||
    { cat "$dir/out.txt"; exit 1; }
}
run "$dir/a.jsonl"
run "$dir/b.jsonl" --torchbench_isolate=process
grep -q 'ops_distinct=' "$dir/out.txt" || { echo "no ops_distinct counter"; exit 1; }
"$py" - "$dir/a.jsonl" "$dir/b.jsonl" <<'PY'
import json, sys
a, b = ([json.loads(l) for l in open(p)] for p in sys.argv[1:])
for lines in (a, b):
    assert "registry" in lines[0], "the first line is not the registry"
    assert sum("registry" in l for l in lines) == 1, "more than one registry line"
    aten = [o for o in lines[0]["registry"]["ops"] if o.startswith("aten::")]
    assert len(aten) > 1000, len(aten)
inst = lambda lines: {l["instance"]: l["ops"] for l in lines[1:]}
assert sorted(inst(a)) == ["phlippe_resnet/Eval/batch_size:1",
                           "phlippe_resnet/Train/batch_size:1"], sorted(inst(a))
assert inst(a) == inst(b), "two runs differ"
phases = {o["phase"] for o in inst(a)["phlippe_resnet/Train/batch_size:1"]}
assert phases == {"forward", "backward", "optimizer"}, phases
print("op coverage: 2 instances, identical across runs")
PY
if "$tb" --torchbench_device=cpu --torchbench_op_coverage=/nonexistent/dir/c.jsonl \
    '--benchmark_filter=^phlippe_resnet/Eval/' >"$dir/bad.txt" 2>&1; then
  echo "an unwritable coverage file did not fail"; exit 1
fi
[ "$(grep -c 'torchbench_op_coverage' "$dir/bad.txt")" = 1 ] || { cat "$dir/bad.txt"; exit 1; }
