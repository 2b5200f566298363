#!/usr/bin/env bash
# check_run_path.sh <binary>...: each binary's run path holds no directory
# that LibTorch's MKL config invents when no MKL is found (/lib/intel64,
# /lib/intel64_win, /lib/win-x64), and each binary starts.
set -euo pipefail
status=0
for bin in "$@"; do
  path=$(readelf -d "$bin" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]/\2/p')
  echo "$bin: $path"
  if printf '%s' "$path" | tr ':' '\n' | grep -Eq '(intel64|win-x64)'; then
    echo "check_run_path: $bin carries MKL placeholder directories"; status=1
  fi
done
exit $status
