#!/usr/bin/env bash
# The LibTorch version gate (cmake/TorchBenchTorchVersion.cmake): 2.11 to
# 2.15 are accepted quietly, an older release is refused with one message
# and a non-zero status, a newer one is accepted with a warning.
#
#   torch_version_gate.sh <cmake>
set -uo pipefail
cmake=$1
gate="$(cd "$(dirname "$0")/../.." && pwd)/cmake/TorchBenchTorchVersion.cmake"
fail() { echo "FAIL: $*" >&2; exit 1; }
check() {  # version, wanted status (0/1), pattern the output must hold
  local out status
  out=$("$cmake" -DTORCH_VERSION_TO_CHECK="$1" -P "$gate" 2>&1)
  status=$?
  { [ "$2" -eq 0 ] && [ "$status" -eq 0 ]; } || { [ "$2" -ne 0 ] && [ "$status" -ne 0 ]; } ||
    fail "$1: exit $status, wanted $([ "$2" -eq 0 ] && echo 0 || echo non-zero): $out"
  grep -q -- "$3" <<<"$out" || fail "$1: no '$3' in: $out"
}
for v in 2.11.0 2.11.0+cu130 2.12.1 2.13.0 2.14.1 2.15.0; do
  check "$v" 0 "LibTorch $v: accepted"
done
check 2.10.0 1 "builds with LibTorch 2.11 to 2.15, found 2.10.0"
check 2.9.1 1 "found 2.9.1"
check 2.16.0 0 "untested"
echo "the LibTorch version gate holds"
