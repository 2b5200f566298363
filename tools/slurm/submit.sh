#!/usr/bin/env bash
# Submits a sharded torchbench run to Slurm: an array job (one shard per
# task, tools/slurm/torchbench-array.sbatch) and a merge job that runs after
# it however it ended (afterany, tools/slurm/merge.sbatch).
#
#   tools/slurm/submit.sh [sbatch flags...] [-- torchbench flags...]
#
#   tools/slurm/submit.sh --array=0-7 --partition=gpu --gres=gpu:1 --time=4:00:00 \
#       -- --torchbench_device=cuda --benchmark_repetitions=5
#
# The sbatch flags go to the array job (--array=0-N-1 gives N shards; default
# 0-3); --partition, --account, --qos and --reservation also go to the merge
# job, and --merge-sbatch=FLAG passes FLAG to the merge job only.
# --merge-flag=FLAG passes FLAG to tools/merge.py (e.g. --merge-flag=--strict).
# Each task gets a whole node (--exclusive) unless the flags say otherwise
# (--exclusive=..., --oversubscribe) or --no-exclusive is given: benchmarks
# sharing a node disturb each other's times.
#
# Environment: TORCHBENCH (the program; default build/benchmarks/torchbench
# of this checkout), TORCHBENCH_RESULTS (default: ./results), TORCHBENCH_PYTHON.
# Prints the two job ids; results land in $TORCHBENCH_RESULTS/<array job id>/
# (shard-<i>.json, shard-<i>.journal.jsonl, merged.json) and the logs in
# $TORCHBENCH_RESULTS/slurm-<job>_<task>.out.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export TORCHBENCH_ROOT="$root"
export TORCHBENCH=${TORCHBENCH:-$root/build/benchmarks/torchbench}
export TORCHBENCH_RESULTS=${TORCHBENCH_RESULTS:-$PWD/results}
export TORCHBENCH_PYTHON=${TORCHBENCH_PYTHON:-$root/.venv/bin/python}

array_flags=()
merge_sbatch=()
merge_flags=()
exclusive=yes
array=no
output=no
while [ $# -gt 0 ]; do
  case "$1" in
    --) shift; break ;;
    --no-exclusive) exclusive=no ;;
    --exclusive*|--oversubscribe|-s) exclusive=no; array_flags+=("$1") ;;
    --merge-sbatch=*) merge_sbatch+=("${1#--merge-sbatch=}") ;;
    --merge-flag=*) merge_flags+=("${1#--merge-flag=}") ;;
    --array=*|-a) array=yes; array_flags+=("$1") ;;
    --output=*|-o) output=yes; array_flags+=("$1") ;;
    --partition=*|--account=*|--qos=*|--reservation=*)
      merge_sbatch+=("$1"); array_flags+=("$1") ;;
    *) array_flags+=("$1") ;;
  esac
  # Flags given as two words (-a 0-3, -p gpu) keep their value with them.
  case "$1" in
    -a|-o|-p|-A|-q|-t|-N|-n|-c|-J|-w|-x|-C|-G|--gres|--time|--partition|--account|--qos)
      [ $# -gt 1 ] || { echo "submit.sh: $1 needs a value" >&2; exit 2; }
      array_flags+=("$2")
      case "$1" in -p|-A|-q|--partition|--account|--qos) merge_sbatch+=("$1" "$2") ;; esac
      shift ;;
  esac
  shift
done
[ "$array" = yes ] || array_flags+=(--array=0-3)
[ "$exclusive" = yes ] && array_flags+=(--exclusive)
mkdir -p "$TORCHBENCH_RESULTS"
[ "$output" = yes ] || array_flags+=(--output="$TORCHBENCH_RESULTS/slurm-%A_%a.out")

array_id=$(sbatch --parsable "${array_flags[@]}" "$here/torchbench-array.sbatch" "$@")
array_id=${array_id%%;*}  # "id;cluster" on a multi-cluster setup.
merge_id=$(sbatch --parsable --dependency="afterany:$array_id" \
  --output="$TORCHBENCH_RESULTS/slurm-%j-merge.out" "${merge_sbatch[@]}" \
  "$here/merge.sbatch" "$array_id" "${merge_flags[@]}")
merge_id=${merge_id%%;*}
echo "array job $array_id ($TORCHBENCH_RESULTS/$array_id/shard-<i>.json), merge job $merge_id" \
     "($TORCHBENCH_RESULTS/$array_id/merged.json)" >&2
echo "$array_id $merge_id"
