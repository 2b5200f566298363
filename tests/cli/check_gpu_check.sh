#!/usr/bin/env bash
# tools/gpu_check.sh on a machine without a GPU or its .deb files: --dry-run
# plans every instance (C++ and Python, and resnet50/Eval compiled by
# AOTInductor for the GPU and run by the program, before the rounds), builds
# only the program, prints the summary's columns, creates nothing and exits 0;
# a bad argument is one line and exit 2; without a GPU and without
# --rehearse, one line naming --rehearse and exit 2, nothing built.
#
#   check_gpu_check.sh <source-dir> [python-with-torch]
set -uo pipefail
root=$1
script="$root/tools/gpu_check.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$("$script" --dry-run --out "$work/out" --build-dir "$work/build" \
      --deps "$work/no-deps" --repetitions 7 2>&1)
rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || fail "--dry-run exited $rc"
for want in \
    'resnet50/Train +fp32 +C\+\+ and Python' 'resnet50/Eval +fp32 +C\+\+ and Python' \
    'hf_Bert/Train +fp32 +C\+\+ and Python' 'hf_Bert/Eval +fp32 +C\+\+ and Python' \
    'resnet50/Train +default +C\+\+ and Python' 'resnet50/Eval +default +C\+\+ and Python' \
    'hf_Bert/Train +default +C\+\+ and Python' 'hf_Bert/Eval +default +C\+\+ and Python' \
    'pytorch_unet/Train +amp_fp16 +C\+\+$' 'moco/Train +default +C\+\+$' \
    'vision_maskrcnn/Eval +default +C\+\+$' \
    'dpkg -x' '-DTORCHBENCH_ENABLE_TESTING=OFF' '-DTORCHBENCH_CCACHE=OFF' \
    'CCACHE_DISABLE=1 cmake --build .* --target torchbench -j' \
    "torchbench --torchbench_device=cuda --torchbench_precision=amp_fp16 --torchbench_profile --torchbench_flops '--benchmark_filter=\^\(pytorch_unet/Train\)/batch_size:\[0-9\]\+\\$'" \
    '--benchmark_repetitions=7 ' \
    'versus_python.py eager --device cuda --precision=default --models resnet50 hf_Bert .*--kernels' \
    'gpu_check_summary.py .*--plan fp32:resnet50/Train' \
    'resnet50/Eval +fp32 +C\+\+ on its AOTInductor package' \
    'PYTHONUNBUFFERED=1 python3? .*/tools/compile_models.py resnet50 --device cuda --backend aoti --batch-size default --timeout [0-9]+ --binary .*/benchmarks/torchbench -o .*/raw/compiled$' \
    "torchbench --torchbench_device=cuda --torchbench_backend=aoti --torchbench_compiled=.*/raw/compiled '--benchmark_filter=\^\(resnet50\)/Eval/batch_size:\[0-9\]\+\\$' --benchmark_repetitions=7 .*--benchmark_out=.*/raw/cpp_compiled.json" \
    'gpu_check_summary.py .*--compiled .*/raw/compiled --cpp-compiled .*/raw/cpp_compiled.json --compiled-plan resnet50/Eval' \
    'C\+\+/Py +C\+\+ ms / Py ms' 'mem% ' 'kern% ' 'syncs ' 'AOTI/eager +AOTI ms / eager ms' \
    'err port +compiled_error_vs_port'; do
  printf '%s\n' "$out" | grep -Eq -- "$want" || fail "--dry-run does not print /$want/"
done
# The compiled run after the runs that matter more, before the rounds.
order=$(printf '%s\n' "$out" | sed -n 's/^  \([a-z0-9_]*\): .*(cap [0-9]* s.*/\1/p' | paste -sd' ')
[ "$order" = "cpp_fp32 py_fp32 cpp_unet_amp cpp_moco cpp_maskrcnn cpp_default py_default compiled versus" ] ||
  fail "--dry-run runs in the order '$order'"
if [ -e "$work/out" ] || [ -e "$work/build" ]; then fail "--dry-run created files"; fi

for args in "--repetitions=abc" "--bogus" "--out" "--prepare --dry-run" "--rehearse --dry-run" \
            "--prepare --rehearse" "--rehearse=yes"; do
  # shellcheck disable=SC2086  # the arguments, word by word
  said=$("$script" $args 2>&1)
  rc=$?
  [ "$rc" -eq 2 ] || fail "'$args' exited $rc, not 2: $said"
  [ "$(printf '%s\n' "$said" | wc -l)" -eq 1 ] || fail "'$args' printed more than one line: $said"
done
# Without a GPU and without --rehearse: one line naming both ways on, exit 2,
# nothing built (the python that reads torch is the test's own).
python=${2:-python3}
said=$("$script" --python "$python" --out "$work/out" --build-dir "$work/build" \
       --deps "$work/no-deps" 2>&1)
rc=$?
if "$python" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "a GPU is here: the no-GPU refusal is not checked"
else
  [ "$rc" -eq 2 ] || fail "no GPU: exited $rc, not 2: $said"
  [ "$(printf '%s\n' "$said" | wc -l)" -eq 1 ] || fail "no GPU: more than one line: $said"
  printf '%s\n' "$said" | grep -q -- '--rehearse' || fail "no GPU: the line does not name --rehearse: $said"
  [ ! -e "$work/build" ] || fail "no GPU: it built"
fi
echo "gpu_check.sh: dry run and bad arguments as expected"
