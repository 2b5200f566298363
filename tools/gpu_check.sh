#!/usr/bin/env bash
# tools/gpu_check.sh: one prepared check of the CUDA path, one command of at
# most 8 minutes on a bare GPU machine (its own PyTorch, CMake, nvcc and gcc;
# no Debian -dev packages, no network). It builds only the torchbench program
# against that machine's PyTorch, runs with --torchbench_device=cuda
# --torchbench_profile resnet50 and hf_Bert Train and Eval at fp32 and at
# `default`, pytorch_unet Train at amp_fp16, moco Train (an NCCL world of one)
# and vision_maskrcnn Eval, each model's default batch, one step per
# repetition; the same resnet50 and hf_Bert in PyTorch eager on the same GPU
# (tools/versus_python.py eager --device cuda --kernels); resnet50's Eval
# compiled for that GPU by AOTInductor (tools/compile_models.py --device cuda)
# and run by the program (--torchbench_backend=aoti); then resnet50 and
# hf_Bert again in rounds (tools/versus_python.py --device cuda); and writes
# one summary (tools/gpu_check_summary.py): C++ and Python median step, peak
# memory, kernels per step, GPU busy/idle, syncs per step, labels, verdicts,
# and the AOTI package's step beside eager's.
#
#   tools/gpu_check.sh --prepare   here (apt works): the .deb files the build
#                                  needs (Google Benchmark, abseil,
#                                  nlohmann-json, Gloo's headers) into .gpu_deps/
#   tools/gpu_check.sh [--out DIR] there: unpack them (dpkg -x, into the build
#                                  folder, never /), configure, build, run,
#                                  summarise into DIR (default gpu_check_out/):
#                                  summary.txt and raw.tar.gz (JSON, logs)
#   tools/gpu_check.sh --dry-run   the plan: every command and the summary's
#                                  columns; runs nothing, needs no GPU or deps
#   tools/gpu_check.sh --rehearse [--python VENV/bin/python]
#                                  on a machine without a GPU: all of the
#                                  above as far as it goes there (configure,
#                                  build, each run stopping at its first need
#                                  of a GPU with one line), and the summary;
#                                  exit 0 when the build succeeded
#
# Options: --out DIR, --deps DIR (default .gpu_deps), --build-dir DIR (default
# build-gpu), --repetitions N (default 20), --budget SECONDS (default 480: the
# whole run; each step has a timeout within it), --jobs N (default: every
# core), --python PY (default python3: the one with torch).
# Exit status: 0 every step ran (a rehearsal: the build succeeded); 1 the
# build failed, or a run failed, timed out or was skipped for time (the
# summary names it); 2 a bad argument, or no usable GPU (without --rehearse).
# The summary (summary.txt) and raw.tar.gz are written in --out whatever
# happens after the arguments are read.
set -euo pipefail
caller=$PWD
root=$(cd "$(dirname "$0")/.." && pwd)

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; }
bad() { echo "gpu_check.sh: $*" >&2; exit 2; }

action=run dry=0 rehearse=0
out=$root/gpu_check_out deps=$root/.gpu_deps build=$root/build-gpu
repetitions=20 budget=480 jobs=$(nproc 2>/dev/null || echo 4) python=python3
while [ $# -gt 0 ]; do
  arg=$1 value=
  case "$arg" in
    --*=*) value=${arg#*=}; arg=${arg%%=*} ;;
  esac
  case "$arg" in
    --prepare|--dry-run|--rehearse|-h|--help)
      [ "$1" = "$arg" ] || bad "$arg takes no value" ;;
    --out|--deps|--build-dir|--repetitions|--budget|--jobs|--python)
      if [ "$1" = "$arg" ]; then
        [ $# -ge 2 ] || bad "$arg needs a value"
        value=$2; shift
      fi
      [ -n "$value" ] || bad "$arg needs a value" ;;
  esac
  case "$arg" in
    --prepare) action=prepare ;;
    --dry-run) dry=1 ;;
    --rehearse) rehearse=1 ;;
    -h|--help) usage; exit 0 ;;
    --out) out=$value ;;
    --deps) deps=$value ;;
    --build-dir) build=$value ;;
    --python) python=$value ;;
    --repetitions|--budget|--jobs)
      [[ $value =~ ^[1-9][0-9]{0,5}$ ]] || bad "$arg must be a positive integer, not '$value'"
      case "$arg" in
        --repetitions) repetitions=$value ;;
        --budget) budget=$value ;;
        --jobs) jobs=$value ;;
      esac ;;
    *) bad "unknown argument '$1' (tools/gpu_check.sh --help)" ;;
  esac
  shift
done
[ "$action" = prepare ] && [ "$dry" = 1 ] && bad "--prepare and --dry-run exclude each other"
[ "$action" = prepare ] && [ "$rehearse" = 1 ] && bad "--prepare and --rehearse exclude each other"
[ "$dry" = 1 ] && [ "$rehearse" = 1 ] && bad "--dry-run and --rehearse exclude each other"
absolute() { case "$1" in /*) printf '%s' "$1" ;; *) printf '%s/%s' "$caller" "$1" ;; esac; }
out=$(absolute "$out") deps=$(absolute "$deps") build=$(absolute "$build")

# What the build needs that a bare GPU machine lacks (the top CMakeLists.txt's
# find_package(benchmark), find_package(absl), nlohmann/json.hpp; lib/'s
# gloo/algorithm.h), and what configure finds in the unpacked prefix.
DEV_DEBS=(libbenchmark-dev libabsl-dev nlohmann-json3-dev libgloo-dev)
MULTIARCH=usr/lib/x86_64-linux-gnu
PREFIX_FILES=("$MULTIARCH/cmake/benchmark/benchmarkConfig.cmake"
              "$MULTIARCH/cmake/absl/abslConfig.cmake"
              usr/include/nlohmann/json.hpp usr/include/gloo/algorithm.h)
DEPS_LIMIT_MIB=16   # the working tree that travels is at most 64 MiB

missing_in_prefix() {  # PREFIX: prints what configure would not find there
  local f
  for f in "${PREFIX_FILES[@]}"; do [ -e "$1/$f" ] || echo "$f"; done
}

prepare() {
  if [ "$(dpkg --print-architecture 2>/dev/null || true)" != amd64 ]; then
    echo "gpu_check.sh --prepare: needs an amd64 Debian or Ubuntu machine with apt (the GPU machine is x86-64)" >&2
    exit 1
  fi
  # The shared libraries the -dev packages' CMake files name
  # (libbenchmark1debian, libabsl20220623 on Debian 12).
  local libs=()
  mapfile -t libs < <(apt-cache depends libbenchmark-dev libabsl-dev 2>/dev/null |
                      awk '$1 == "Depends:" && $2 !~ /^</ { print $2 }' | sort -u)
  mkdir -p "$deps"
  rm -f "$deps"/*.deb "$deps/MANIFEST"
  echo "gpu_check.sh --prepare: apt-get download ${DEV_DEBS[*]} ${libs[*]} into $deps"
  local said
  if ! said=$(cd "$deps" && apt-get download -q "${DEV_DEBS[@]}" "${libs[@]}" 2>&1); then
    printf '%s\n' "$said" | tail -5 >&2
    echo "gpu_check.sh --prepare: apt-get download failed (apt-get update first?)" >&2
    exit 1
  fi
  local tmp
  tmp=$(mktemp -d)
  # shellcheck disable=SC2064  # expand now: tmp is local
  trap "rm -rf '$tmp'" EXIT
  local f
  for f in "$deps"/*.deb; do dpkg -x "$f" "$tmp"; done
  local missing
  missing=$(missing_in_prefix "$tmp")
  if [ -n "$missing" ]; then
    echo "gpu_check.sh --prepare: the packages lack $(echo "$missing" | paste -sd' ')" >&2
    exit 1
  fi
  local kib glibc glibcxx
  kib=$(du -ck "$deps"/*.deb | tail -1 | cut -f1)
  glibc=$(objdump -T "$tmp/$MULTIARCH"/*.so.* 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -Vu | tail -1 || true)
  glibcxx=$(objdump -T "$tmp/$MULTIARCH"/*.so.* 2>/dev/null | grep -o 'GLIBCXX_[0-9.]*' | sort -Vu | tail -1 || true)
  {
    echo "# tools/gpu_check.sh --prepare, $(date -u +%Y-%m-%dT%H:%M:%SZ), on $(sed -n 's/^PRETTY_NAME=//p' /etc/os-release | tr -d '"')"
    # shellcheck disable=SC2016  # dpkg-deb's own ${field} syntax
    for f in "$deps"/*.deb; do dpkg-deb --showformat='${Package} ${Version}\n' -W "$f"; done
    echo "# the shared libraries need ${glibc:-?} and ${glibcxx:-?} (the GPU machine's must be as new)"
  } > "$deps/MANIFEST"
  cat "$deps/MANIFEST"
  local count
  count=$(find "$deps" -maxdepth 1 -name '*.deb' | wc -l)
  echo "gpu_check.sh --prepare: $count .deb files, $((kib / 1024)).$(( (kib % 1024) * 10 / 1024 )) MiB in $deps"
  if [ $((kib / 1024)) -ge "$DEPS_LIMIT_MIB" ]; then
    echo "gpu_check.sh --prepare: over $DEPS_LIMIT_MIB MiB: too much to carry" >&2
    exit 1
  fi
}

if [ "$action" = prepare ]; then
  prepare
  exit 0
fi

# ---- The plan ----
# C++ runs: NAME PRECISION CAP_SECONDS MODEL/MODE...
CPP_RUNS=(
  "fp32 fp32 150 resnet50/Train resnet50/Eval hf_Bert/Train hf_Bert/Eval"
  "default default 150 resnet50/Train resnet50/Eval hf_Bert/Train hf_Bert/Eval"
  "unet_amp amp_fp16 60 pytorch_unet/Train"
  "moco default 60 moco/Train"
  "maskrcnn default 90 vision_maskrcnn/Eval"
)
# Python runs: NAME (the C++ run it pairs with) CAP_SECONDS MODEL...
PY_RUNS=("fp32 150 resnet50 hf_Bert" "default 150 resnet50 hf_Bert")
# The order they run in: a Python run after the C++ run it pairs with; the
# paths that never ran on a GPU (amp with its scaler, NCCL, torchvision's
# CUDA operators) before the second precision, should time run short.
# Last, should time remain: tools/versus_python.py on the same GPU (CUDA events
# on both sides, GPU busy share beside each time), its pip-referenced models
# (a TorchBench checkout is not on that machine).
VERSUS_RUN="versus 120 resnet50 hf_Bert"
# The compiled run, before it (a path no other step covers): NAME CAP_SECONDS
# MODEL... Each model's Eval at its default batch compiled for this GPU by
# tools/compile_models.py (AOTInductor; the machine's python, which may lack
# torchvision or safetensors: then the compile fails and the summary says
# why), then the program on the packages, beside cpp_fp32's eager rows. The
# program's run keeps COMPILED_RUN_SHARE seconds of the cap; the compile has
# the rest, and its worker a --timeout 10 s within that.
COMPILED_RUN="compiled 150 resnet50"
COMPILED_RUN_SHARE=40
ORDER=(cpp:fp32 py:fp32 cpp:unet_amp cpp:moco cpp:maskrcnn cpp:default py:default
       aoti:compiled vs:versus)
RUNS_RESERVE=150    # seconds the build leaves for the runs
SUMMARY_RESERVE=15  # seconds every step leaves for the summary

raw=$out/raw
prefix=$build/deps-prefix
tb=$build/benchmarks/torchbench
t_start=$SECONDS
deadline=$((t_start + budget))
failures=0

log() { printf '[gpu_check %3d s] %s\n' "$((SECONDS - t_start))" "$*"; }
note() { log "$*"; [ "$dry" = 1 ] || echo "$*" >> "$raw/notes.txt"; }
quoted() {  # the command as one could paste it
  local a s="" safe='^[A-Za-z0-9_./:=,@%+-]+$'
  for a in "$@"; do
    if [[ $a =~ $safe ]]; then s+="$a "; else s+="'${a//\'/\'\\\'\'}' "; fi
  done
  printf '%s' "${s% }"
}

# run_step NAME CAP RESERVE -- COMMAND...: COMMAND under a timeout of CAP
# seconds, or less so that RESERVE seconds of the budget stay; its output in
# raw/NAME.log. A dry run prints it. Status: COMMAND's, 124 timed out, 125
# skipped (the budget is spent).
run_step() {
  local name=$1 cap=$2 reserve=$3
  shift 4
  if [ "$dry" = 1 ]; then
    printf '    %s\n' "$(quoted "$@")"
    return 0
  fi
  local limit=$cap left=$((deadline - SECONDS - reserve))
  [ "$left" -lt "$limit" ] && limit=$left
  if [ "$limit" -lt 15 ]; then
    note "$name: skipped: the ${budget} s budget is spent"
    return 125
  fi
  local t0=$SECONDS rc=0
  printf '$ %s\n' "$(quoted "$@")" > "$raw/$name.log"
  timeout --kill-after=10 "$limit" "$@" >> "$raw/$name.log" 2>&1 || rc=$?
  case $rc in
    0) log "$name: ok in $((SECONDS - t0)) s" ;;
    124|137) note "$name: timed out after $limit s (raw/$name.log)"; rc=124 ;;
    1) note "$name: exit 1 after $((SECONDS - t0)) s (raw/$name.log)$([[ $name == cpp_* ]] && echo ': an instance errored, its row says how' || echo ": $(said "$name")")" ;;
    *) note "$name: exit $rc after $((SECONDS - t0)) s (raw/$name.log): $(said "$name")" ;;
  esac
  return "$rc"
}
# said NAME: the last thing raw/NAME.log said, in one line (a program's
# one-line refusal, a traceback's exception), for the failure's note.
said() {
  local line
  line=$(grep -v '^[[:space:]]*$' "$raw/$1.log" 2>/dev/null | grep -v '^\$ ' | tail -n 1 | cut -c1-240)
  printf '%s' "${line:-nothing}"
}

# ---- Preflight ----
needed=(CMakeLists.txt benchmarks/main.cpp tools/gpu_check_summary.py tools/versus_python.py
        tools/tbench/__init__.py)
for f in "${needed[@]}"; do
  [ -e "$root/$f" ] || { echo "gpu_check.sh: $root/$f is missing" >&2; exit 1; }
done
debs=()
if [ -d "$deps" ]; then
  for f in "$deps"/*.deb; do [ -e "$f" ] && debs+=("$f"); done
fi

torch_prefix='<torch.utils.cmake_prefix_path>'
tv_library=
if [ "$dry" = 0 ]; then
  rm -rf "$raw" "$out/summary.txt" "$out/raw.tar.gz"
  mkdir -p "$raw"
  : > "$raw/notes.txt"
  # The machine, its PyTorch, and whether a GPU is usable (exit 3 if not).
  rc=0
  timeout 120 "$python" - > "$raw/context.txt" 2> "$raw/context.log" <<'PY' || rc=$?
import importlib.metadata as md
import os
import sys

import torch

def version(name):
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return "not installed"

print(f"python={sys.executable} {sys.version.split()[0]}")
print(f"torch={torch.__version__} (CUDA {torch.version.cuda}, cuDNN "
      f"{torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else 'none'})")
print("python_packages=" + ", ".join(
    f"{p} {version(p)}" for p in ("torchvision", "transformers", "timm")))
print(f"torch_backends_defaults=matmul.allow_tf32={torch.backends.cuda.matmul.allow_tf32} "
      f"cudnn.allow_tf32={torch.backends.cudnn.allow_tf32}")
print(f"torch_cmake_prefix={torch.utils.cmake_prefix_path}")
print(f"site_packages={os.path.dirname(os.path.dirname(torch.__file__))}")
print(f"python_bin={os.path.dirname(sys.executable)}")
if not torch.cuda.is_available():
    sys.exit(3)
p = torch.cuda.get_device_properties(0)
print(f"gpu={p.name}, {p.total_memory >> 20} MiB, {p.multi_processor_count} SMs, "
      f"capability {p.major}.{p.minor}")
PY
  if [ "$rc" = 3 ] && [ "$rehearse" = 1 ]; then
    echo "rehearsal=no GPU: torch.cuda.is_available() is False in $python; configure and build, then each run as far as it goes without a GPU" >> "$raw/context.txt"
    rc=0
  fi
  [ "$rc" = 0 ] || rm -rf "$raw"
  if [ "$rc" = 3 ]; then
    echo "gpu_check.sh: no usable CUDA device ($python: torch.cuda.is_available() is False); --dry-run shows the plan, --rehearse goes as far as a machine without a GPU can" >&2
    exit 2
  elif [ "$rc" != 0 ]; then
    echo "gpu_check.sh: $python cannot report its torch (exit $rc; is torch installed there? --python PY)" >&2
    exit 2
  fi
  torch_prefix=$(sed -n 's/^torch_cmake_prefix=//p' "$raw/context.txt")
  site=$(sed -n 's/^site_packages=//p' "$raw/context.txt")
  # The cmake and ninja that pip installed beside that Python, if not on PATH.
  PATH=$PATH:$(sed -n 's/^python_bin=//p' "$raw/context.txt")
  # torchvision's operators (vision_maskrcnn): the wheel's _C_stable.so, or
  # _C.so in wheels that have no stable-ABI library.
  if [ ! -e "$site/torchvision/_C_stable.so" ] && [ -e "$site/torchvision/_C.so" ]; then
    tv_library=$site/torchvision/_C.so
  fi
  {
    echo "driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1 || echo '?')"
    echo "host=$(uname -srm), $(nproc) cores, $(ldd --version 2>/dev/null | head -1)"
    echo "tools=$(gcc --version 2>/dev/null | head -1); $(cmake --version | head -1);" \
         "ninja $(ninja --version 2>/dev/null || echo none); nvcc $( (nvcc --version 2>/dev/null || /usr/local/cuda/bin/nvcc --version 2>/dev/null) | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
    echo "commit=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
    if [ ${#debs[@]} -gt 0 ] && [ -e "$deps/MANIFEST" ]; then
      echo "debs=$(grep -v '^#' "$deps/MANIFEST" | paste -sd',' | sed 's/,/, /g')"
    fi
    echo "program_flags=--torchbench_device=cuda --torchbench_profile --torchbench_flops --benchmark_repetitions=$repetitions --benchmark_min_time=1e-9 (one step per repetition), default warm-up (3)"
    echo "python_flags=versus_python.py eager --device cuda --kernels --warmup 3 --steps $repetitions"
    [ -z "$tv_library" ] || echo "torchvision_library=$tv_library"
  } >> "$raw/context.txt"
  grep -v '^torch_cmake_prefix=\|^site_packages=\|^python_bin=' "$raw/context.txt" | sed 's/^/  /'
fi

# ---- Commands ----
cuda_root=
if [ -e /usr/local/cuda/include/cuda.h ]; then
  cuda_root=/usr/local/cuda
elif command -v nvcc >/dev/null; then
  cuda_root=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
  [ -e "$cuda_root/include/cuda.h" ] || cuda_root=
fi
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
configure=(cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release
           -DTORCHBENCH_ENABLE_TESTING=OFF -DTORCHBENCH_CCACHE=OFF)
run_env=(env)
if [ ${#debs[@]} -gt 0 ] || [ "$dry" = 1 ]; then
  configure+=("-DCMAKE_PREFIX_PATH=$torch_prefix;$prefix/usr"
              "-Dbenchmark_DIR=$prefix/$MULTIARCH/cmake/benchmark"
              "-Dabsl_DIR=$prefix/$MULTIARCH/cmake/absl"
              "-DTORCHBENCH_NLOHMANN_JSON_INCLUDE_DIR=$prefix/usr/include"
              "-DTORCHBENCH_GLOO_INCLUDE_DIR=$prefix/usr/include")
  run_env+=("LD_LIBRARY_PATH=$prefix/$MULTIARCH")
else
  configure+=("-DCMAKE_PREFIX_PATH=$torch_prefix")
fi
[ -z "$cuda_root" ] || configure+=("-DCUDAToolkit_ROOT=$cuda_root")
[ -z "$tv_library" ] || run_env+=("TORCHBENCH_TORCHVISION_LIBRARY=$tv_library")
compile=(env CCACHE_DISABLE=1 cmake --build "$build" --target torchbench -j "$jobs")

cpp_command() {  # NAME PRECISION MODEL/MODE...: sets cmd
  local name=$1 precision=$2
  shift 2
  local filter
  filter="^($(IFS='|'; echo "$*"))/batch_size:[0-9]+\$"
  cmd=("${run_env[@]}" "$tb" --torchbench_device=cuda "--torchbench_precision=$precision"
       --torchbench_profile --torchbench_flops "--benchmark_filter=$filter"
       "--benchmark_repetitions=$repetitions" --benchmark_min_time=1e-9
       --benchmark_display_aggregates_only=true
       "--benchmark_out=$raw/cpp_$name.json" --benchmark_out_format=json)
}
py_command() {  # NAME MODEL...: sets cmd
  local name=$1
  shift
  cmd=("${run_env[@]}" PYTHONUNBUFFERED=1 "$python" "$root/tools/versus_python.py" eager --device cuda
       "--precision=$name" --models "$@" --warmup 3 --steps "$repetitions" --kernels
       --binary "$tb" --json "$raw/py_$name.json")
  if [ "$dry" = 1 ] || [ -s "$raw/cpp_$name.json" ]; then
    cmd+=(--cpp-json "$raw/cpp_$name.json")
  else
    cmd+=(--python-only)  # the C++ run left nothing to pair with
  fi
}
read -r compiled_name compiled_cap compiled_models <<< "$COMPILED_RUN"
compiled_plan=()
for m in $compiled_models; do compiled_plan+=("$m/Eval"); done
plan=() cpp_files=() py_files=()
for entry in "${CPP_RUNS[@]}"; do
  read -r name precision _ instances <<< "$entry"
  for i in $instances; do plan+=("$precision:$i"); done
  cpp_files+=("$raw/cpp_$name.json")
done
for entry in "${PY_RUNS[@]}"; do
  read -r name _ <<< "$entry"
  py_files+=("$raw/py_$name.json")
done
summary=("$python" "$root/tools/gpu_check_summary.py" --context "$raw/context.txt"
         --notes "$raw/notes.txt" --cpp "${cpp_files[@]}" --py "${py_files[@]}"
         --plan "${plan[@]}" --compiled "$raw/$compiled_name"
         --cpp-compiled "$raw/cpp_$compiled_name.json" --compiled-plan "${compiled_plan[@]}"
         -o "$out/summary.txt")

if [ "$dry" = 1 ]; then
  echo "gpu_check.sh --dry-run: the plan; nothing is run"
  echo "  out: $out (summary.txt, raw.tar.gz)   build: $build   budget: $budget s   repetitions: $repetitions   jobs: $jobs"
  if [ ${#debs[@]} -gt 0 ]; then
    echo "  deps: ${#debs[@]} .deb files in $deps ($(du -ck "${debs[@]}" | tail -1 | cut -f1) KiB)"
  else
    echo "  deps: none in $deps yet (tools/gpu_check.sh --prepare makes them; without them the machine's own packages are used)"
  fi
  echo "  files needed: ${needed[*]}: present"
  echo "planned instances (C++ --torchbench_profile; Python eager where versus_python.py eager has the model):"
  for entry in "${CPP_RUNS[@]}"; do
    read -r name precision _ instances <<< "$entry"
    for i in $instances; do
      side="C++"
      for p in "${PY_RUNS[@]}"; do
        read -r pname _ pmodels <<< "$p"
        [ "$pname" = "$name" ] && [[ " $pmodels " == *" ${i%%/*} "* ]] && side="C++ and Python"
      done
      printf '  %-22s %-9s %s\n' "$i" "$precision" "$side"
    done
  done
  for i in "${compiled_plan[@]}"; do
    printf '  %-22s %-9s %s\n' "$i" fp32 "C++ on its AOTInductor package (compiled there)"
  done
  echo "1. check the GPU and read the machine's torch: $python - (torch.cuda.is_available(), versions, torch.utils.cmake_prefix_path)"
  echo "2. unpack the .deb files: for f in $deps/*.deb; do dpkg -x \"\$f\" $prefix; done"
  echo "3. configure (cap 120 s):"
fi

# ---- Unpack, configure, build ----
build_failed() {  # STEP: the one summary line, the log's errors, exit 1
  local line="BUILD FAILED: $1 (log: raw/$2.log in raw.tar.gz)"
  echo "$line" > "$out/summary.txt"
  echo "$line"
  local errors
  errors=$(grep -m 15 -E 'error|Error|FATAL' "$raw/$2.log" 2>/dev/null | cut -c1-300 || true)
  [ -z "$errors" ] || printf 'its first errors:\n%s\n' "$errors"
  echo "its last lines:"
  tail -n 15 "$raw/$2.log" 2>/dev/null | cut -c1-300 || true
  tar -czf "$out/raw.tar.gz" -C "$out" raw && rm -rf "$raw"
  exit 1
}
if [ "$dry" = 0 ]; then
  if [ ${#debs[@]} -gt 0 ]; then
    mkdir -p "$prefix"
    for f in "${debs[@]}"; do
      dpkg -x "$f" "$prefix" >> "$raw/unpack.log" 2>&1 || build_failed "dpkg -x $f failed" unpack
    done
    missing=$(missing_in_prefix "$prefix")
    [ -z "$missing" ] || build_failed "the .deb files lack $(echo "$missing" | paste -sd' ')" unpack
    log "unpacked ${#debs[@]} .deb files into $prefix"
  else
    log "no .deb files in $deps: the machine's own Google Benchmark, abseil, nlohmann-json and Gloo headers"
  fi
fi
rc=0
run_step configure 120 $((RUNS_RESERVE + SUMMARY_RESERVE)) -- "${configure[@]}" || rc=$?
[ "$rc" = 0 ] || build_failed "configure exited $rc" configure
[ "$dry" = 0 ] || echo "4. build only the program, ccache off, ${jobs} jobs (cap: the budget less ${RUNS_RESERVE} s for the runs):"
t_build=$SECONDS
run_step build "$budget" $((RUNS_RESERVE + SUMMARY_RESERVE)) -- "${compile[@]}" || rc=$?
case $rc in
  0) ;;
  124) build_failed "the build did not finish in $((SECONDS - t_build)) s ($jobs jobs; a second run on the same machine goes on where it stopped)" build ;;
  *) build_failed "the build exited $rc after $((SECONDS - t_build)) s ($jobs jobs)" build ;;
esac
if [ "$dry" = 0 ]; then
  {
    echo "build=$((SECONDS - t_build)) s, $jobs jobs, ccache off; $(grep -h 'TorchBench: \(LibTorch\|CUDA code\)' "$raw/configure.log" | sed 's/^-- //' | paste -sd';')"
    echo "nccl_include=$(sed -n 's/^TORCHBENCH_NCCL_INCLUDE_DIR:PATH=//p' "$build/CMakeCache.txt") (moco's world of one runs NCCL when found, else Gloo)"
  } >> "$raw/context.txt"
fi

# ---- Runs ----
[ "$dry" = 0 ] || echo "5. runs, in this order, each under its timeout (cap), all within the budget:"
for step in "${ORDER[@]}"; do
  kind=${step%%:*} want=${step#*:}
  if [ "$kind" = cpp ]; then
    for entry in "${CPP_RUNS[@]}"; do
      read -r name precision cap instances <<< "$entry"
      [ "$name" = "$want" ] || continue
      # shellcheck disable=SC2086  # instances: one word each
      cpp_command "$name" "$precision" $instances
      [ "$dry" = 0 ] || echo "  cpp_$name: $instances at $precision (cap $cap s)"
      rc=0
      run_step "cpp_$name" "$cap" "$SUMMARY_RESERVE" -- "${cmd[@]}" || rc=$?
      [ "$rc" = 0 ] || failures=$((failures + 1))
    done
  elif [ "$kind" = aoti ]; then
    # shellcheck disable=SC2086  # models: one word each
    cmd=("${run_env[@]}" PYTHONUNBUFFERED=1 "$python" "$root/tools/compile_models.py"
         $compiled_models --device cuda --backend aoti --batch-size default
         --timeout $((compiled_cap - COMPILED_RUN_SHARE - 10)) --binary "$tb"
         -o "$raw/$compiled_name")
    filter="^($(IFS='|'; echo "${compiled_plan[*]%/Eval}"))/Eval/batch_size:[0-9]+\$"
    run=("${run_env[@]}" "$tb" --torchbench_device=cuda --torchbench_backend=aoti
         "--torchbench_compiled=$raw/$compiled_name" "--benchmark_filter=$filter"
         "--benchmark_repetitions=$repetitions" --benchmark_min_time=1e-9
         --benchmark_display_aggregates_only=true
         "--benchmark_out=$raw/cpp_$compiled_name.json" --benchmark_out_format=json)
    [ "$dry" = 0 ] || echo "  $compiled_name: $compiled_models Eval compiled for the GPU by AOTInductor, then the program on it (cap $compiled_cap s, $COMPILED_RUN_SHARE s of it kept for the program)"
    t0=$SECONDS rc=0
    run_step "compile_$compiled_name" $((compiled_cap - COMPILED_RUN_SHARE)) \
      $((SUMMARY_RESERVE + COMPILED_RUN_SHARE)) -- "${cmd[@]}" || rc=$?
    if [ "$rc" = 125 ]; then
      failures=$((failures + 1))  # skipped for time: run_step said so
    elif [ "$dry" = 1 ] || compgen -G "$raw/$compiled_name/*/batch_size_*/aoti.pt2" > /dev/null; then
      rc=0
      run_step "cpp_$compiled_name" $((compiled_cap - (SECONDS - t0))) "$SUMMARY_RESERVE" \
        -- "${run[@]}" || rc=$?
      [ "$rc" = 0 ] || failures=$((failures + 1))
    else
      note "cpp_$compiled_name: not run: tools/compile_models.py made no AOTI package (its row in the summary, or the note above, says why)"
      failures=$((failures + 1))
    fi
  elif [ "$kind" = vs ]; then
    read -r name cap models <<< "$VERSUS_RUN"
    # shellcheck disable=SC2086  # models: one word each
    cmd=("${run_env[@]}" PYTHONUNBUFFERED=1 "$python" "$root/tools/versus_python.py" $models --device cuda
         --batch-size default --rounds 2 --steps "$repetitions" --binary "$tb"
         -o "$raw/versus.json" --markdown "$raw/versus.md")
    [ "$dry" = 0 ] || echo "  $name: $models, C++ against Python in rounds (cap $cap s)"
    rc=0
    run_step "$name" "$cap" "$SUMMARY_RESERVE" -- "${cmd[@]}" || rc=$?
    [ "$rc" = 0 ] || failures=$((failures + 1))
  else
    for entry in "${PY_RUNS[@]}"; do
      read -r name cap models <<< "$entry"
      [ "$name" = "$want" ] || continue
      # shellcheck disable=SC2086  # models: one word each
      py_command "$name" $models
      [ "$dry" = 0 ] || echo "  py_$name: $models, Python eager at $name (cap $cap s)"
      rc=0
      run_step "py_$name" "$cap" "$SUMMARY_RESERVE" -- "${cmd[@]}" || rc=$?
      [ "$rc" = 0 ] || failures=$((failures + 1))
    done
  fi
done

# ---- Summary ----
if [ "$dry" = 1 ]; then
  echo "6. summary: $(quoted "${summary[@]}")"
  echo "summary columns (one row per instance; then the context, a verdict per expectation, notes):"
  "$python" "$root/tools/gpu_check_summary.py" --columns 2>/dev/null ||
    python3 "$root/tools/gpu_check_summary.py" --columns
  exit 0
fi
echo "time=$((SECONDS - t_start)) s of a $budget s budget" >> "$raw/context.txt"
echo
"${summary[@]}" || failures=$((failures + 1))
if [ -s "$raw/versus.md" ]; then
  { echo; echo "C++ against Python (tools/versus_python.py):"; sed -n '/^## Summary/,$p' "$raw/versus.md"; } \
    >> "$out/summary.txt"
fi
tar -czf "$out/raw.tar.gz" -C "$out" raw && rm -rf "$raw"
log "wrote $out/summary.txt and $out/raw.tar.gz"
# A rehearsal's runs stop where a GPU is needed: built is what it can prove.
[ "$rehearse" = 1 ] || [ "$failures" = 0 ]
