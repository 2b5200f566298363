#!/usr/bin/env bash
# tools/versus_python.py eager's CUDA-only options (the eager comparison that
# was tools/compare_eager.py) on a machine without a GPU: each is one line
# and exit 2 (no program run, no model built).
#
#   check_compare_eager_args.sh <python> <source-dir>
set -uo pipefail
py=$1
tool="$2/tools/versus_python.py"
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() {  # PATTERN ARGS...: exit 2 and one line matching PATTERN
  local pattern=$1 said rc
  shift
  said=$("$py" "$tool" eager "$@" 2>&1)
  rc=$?
  echo "$* -> exit $rc: $said"
  [ "$rc" -eq 2 ] || fail "$* exited $rc, not 2"
  [ "$(printf '%s\n' "$said" | wc -l)" -eq 1 ] || fail "$* printed more than one line"
  printf '%s' "$said" | grep -Eq -- "$pattern" || fail "$* does not say /$pattern/"
}
expect '--kernels needs --device cuda' --kernels
expect '--precision, --json need --device cuda' --precision fp16 --json x.json
expect 'invalid choice' --device cuda --precision fp64
expect '--steps must be a positive integer' --device cuda --steps 0
if "$py" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
  echo "a GPU is usable here: --device cuda is not refused (not checked)"
else
  expect 'no CUDA device is usable' --device cuda --models resnet50
fi
