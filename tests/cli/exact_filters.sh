#!/usr/bin/env bash
# exact_filters.sh <torchbench> <python>: for one benchmark of every model
# (its cheapest: Eval, else Train, at the CPU default set's batch), the
# filter '^<name>$' selects exactly that benchmark (--benchmark_list_tests
# goes through the same filter as a run, without building the model). Two
# cheap instances are then run under an alternation of exact names and must
# report exactly those names; a negative exact filter drops exactly its name.
# Running every model here cost 11 minutes of CI on 2 cores and proved
# nothing the listing does not: the smoke test already steps every model.
set -euo pipefail
tb=$1; py=$2
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
base=(--torchbench_device=cpu --torchbench_batch_sizes=1)
run=("${base[@]}" --torchbench_warmup_steps=0 --benchmark_min_time=0.000001)
"$tb" "${base[@]}" --benchmark_list_tests 2>/dev/null > "$work/all.txt"
# The Eval name of each model where it has one, else its Train name.
picked=$(awk -F/ '{ if (!($1 in pick) || $2 == "Eval") pick[$1] = $0 }
                  END { for (m in pick) print pick[m] }' "$work/all.txt" | sort)
check() {  # check <json> <expected names, one per line>
  "$py" - "$1" "$2" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
got = sorted(r["name"] for r in doc["benchmarks"])
want = sorted(n for n in sys.argv[2].splitlines() if n)
errors = [f'{r["name"]}: {r["error_message"]}' for r in doc["benchmarks"] if r.get("error_occurred")]
assert got == want, f"ran {got}, wanted {want}"
assert not errors, errors
PY
}
count=0
while read -r name; do
  "$tb" "${base[@]}" --benchmark_list_tests --benchmark_filter="^$name\$" \
        > "$work/one.txt" 2>"$work/one.err" \
    || { cat "$work/one.err"; echo "exact_filters: ^$name\$ failed"; exit 1; }
  [ "$(cat "$work/one.txt")" = "$name" ] \
    || { echo "exact_filters: ^$name\$ selected:"; cat "$work/one.txt"; exit 1; }
  count=$((count + 1))
done <<< "$picked"
# An alternation of the exact names of the two cheapest models (any two when
# those are gone), run; and a negative exact filter (listing only).
two=$(printf '%s\n' "$picked" | grep -E '^(pyhpc_equation_of_state|soft_actor_critic)/' | head -2)
[ "$(printf '%s\n' "$two" | grep -c .)" -eq 2 ] || two=$(printf '%s\n' "$picked" | head -2)
first=$(printf '%s\n' "$two" | head -1)
"$tb" "${run[@]}" --benchmark_filter="^$(printf '%s\n' "$two" | paste -sd'|' | sed 's/|/$|^/g')\$" \
      --benchmark_format=json > "$work/two.json" 2>/dev/null
check "$work/two.json" "$two"
"$tb" "${base[@]}" --benchmark_list_tests --benchmark_filter="-^$first\$" > "$work/neg.txt" 2>/dev/null
grep -vxF "$first" "$work/all.txt" | diff - "$work/neg.txt"
echo "exact_filters: $count models, each selected exactly by ^name\$"
