#!/usr/bin/env bash
# run.sh <install-prefix> <build-dir> <c++ compiler>: configures, builds and
# runs the downstream project against an installed TorchBench.
set -euo pipefail
prefix=$1; build=$2; cxx=$3
src=$(cd "$(dirname "$0")" && pwd)
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$src" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix"
cmake --build "$build" -j 2
"$build/embed_test"
