#!/usr/bin/env bash
# check_cpu_default_set.sh <torchbench>: every instance tools/cpu_default_set.txt
# names (the CPU default set of `tools/tb bench`) is one the program runs at
# batch size 1, so a renamed model or a changed fixed batch fails here rather
# than silently shrinking the set.
set -euo pipefail
tb=$1
list=$(dirname "$0")/../../tools/cpu_default_set.txt
known=$("$tb" --torchbench_device=cpu --torchbench_batch_sizes=1 --benchmark_list_tests 2>/dev/null)
missing=$(grep -Ev '^(#|$)' "$list" | grep -vxF -f <(printf '%s\n' "$known") || true)
if [ -n "$missing" ]; then
  echo "tools/cpu_default_set.txt names instances the program does not run at batch 1:"
  echo "$missing"
  exit 1
fi
echo "$(grep -cEv '^(#|$)' "$list") instances, all known"
