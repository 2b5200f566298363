#!/usr/bin/env bash
# slurm_sharding.sh <torchbench> <python>
# A real Slurm run of tools/slurm/submit.sh on a one-node cluster started
# here, on loopback, as root: munged, slurmctld and slurmd from Debian's
# munge, slurmctld, slurmd and slurm-client, with their config, ports, state,
# sockets and logs in a temporary folder. It submits the array job (3 shards
# of a few small CPU instances) and its afterany merge job, waits for the
# merge, and checks:
#   - merged.json holds exactly the instances (and in the order) an unsharded
#     run lists for the same flags, none errored, from 3 shard files;
#   - the merge refuses a missing shard (tools/tb merge, exit 1) and a shard
#     whose torchbench_git_commit is another commit (exit 3).
# The daemons it started are stopped and the folder removed however it ends.
# Exit 77 (skipped) when not root or the packages are missing.
set -euo pipefail
tb=$(realpath "$1"); py=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
export PATH="/usr/sbin:/sbin:$PATH"
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (slurmd runs the jobs as the submitting user, started here as root)"
for c in munged slurmctld slurmd sbatch scontrol sinfo; do
  command -v "$c" >/dev/null || skip "$c not found: apt-get install munge slurmctld slurmd slurm-client (tools/tb setup)"
done
[ -r /etc/munge/munge.key ] || command -v mungekey >/dev/null ||
  skip "no /etc/munge/munge.key and no mungekey to create one"

# Small and fast: a few small models, Eval, batch 1, tiny time budget.
FLAGS=(--torchbench_device=cpu --torchbench_batch_sizes=1 --torchbench_warmup_steps=1
       --benchmark_min_time=0.000001
       "--benchmark_filter=^(${SLURM_TEST_MODELS:-phlippe_densenet|phlippe_resnet|pyhpc_equation_of_state|soft_actor_critic|squeezenet1_1})/Eval/")
start=$SECONDS
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tb-slurm.XXXXXX")
pids=()
cleanup() {
  local status=$?
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  [ -f "$tmp/munged.pid" ] && kill "$(cat "$tmp/munged.pid")" 2>/dev/null || true
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  done
  if [ "$status" -ne 0 ] && [ "$status" -ne 77 ]; then
    for log in "$tmp"/log/* "$tmp"/results/slurm-*.out; do
      [ -f "$log" ] && { echo "--- $log"; tail -n 20 "$log"; }
    done
  fi
  rm -rf "$tmp"
  echo "slurm_sharding: $((SECONDS - start)) s, exit $status"
}
trap cleanup EXIT
mkdir -p "$tmp"/{state,spool,log,work}

# munged with the packaged key (a fresh one if none), owned by root as
# munged wants it, on its own socket.
if [ -r /etc/munge/munge.key ]; then
  install -m 600 /etc/munge/munge.key "$tmp/munge.key"
else
  mungekey --create --keyfile="$tmp/munge.key"
fi
munged --force --socket="$tmp/munge.sock" --key-file="$tmp/munge.key" \
  --pid-file="$tmp/munged.pid" --log-file="$tmp/log/munged.log" --seed-file="$tmp/munged.seed"

read -r ctld_port slurmd_port < <("$py" -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
host=$(hostname -s)
mem_mb=$(awk '/MemTotal/ { print int($2 / 1024 * 0.9) }' /proc/meminfo)
cat > "$tmp/slurm.conf" <<EOF
ClusterName=tbtest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
AuthInfo=socket=$tmp/munge.sock
CryptoType=crypto/munge
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
MinJobAge=600
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$mem_mb State=UNKNOWN
PartitionName=tb Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$tmp/slurm.conf"
slurmctld -D >"$tmp/log/slurmctld.out" 2>&1 & pids+=($!)
slurmd -D >"$tmp/log/slurmd.out" 2>&1 & pids+=($!)
for _ in $(seq 100); do
  sinfo -h -o %t 2>/dev/null | grep -qx idle && break
  sleep 0.2
done
sinfo -h -o %t | grep -qx idle || { echo "FAIL: the node did not come up"; exit 1; }
echo "cluster up on $host (ports $ctld_port, $slurmd_port) after $((SECONDS - start)) s"

# The unsharded list for the same flags, then the sharded run on Slurm.
unsharded=$(env -u SLURM_ARRAY_TASK_ID -u JOB_COMPLETION_INDEX "$tb" "${FLAGS[@]}" --benchmark_list_tests)
cd "$tmp/work"
read -r array_id merge_id < <(TORCHBENCH="$tb" TORCHBENCH_PYTHON="$py" \
  TORCHBENCH_RESULTS="$tmp/results" "$root/tools/slurm/submit.sh" \
  --array=0-2 --no-exclusive --cpus-per-task=1 -- "${FLAGS[@]}")
[ -n "${merge_id:-}" ] || { echo "FAIL: submit.sh did not print the two job ids"; exit 1; }
echo "submitted array job $array_id and merge job $merge_id"
state=
for _ in $(seq 600); do
  state=$(scontrol show job "$merge_id" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
  case "$state" in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY) break ;; esac
  sleep 0.25
done
echo "merge job $merge_id: $state after $((SECONDS - start)) s"
for i in 0 1 2; do
  [ -f "$tmp/results/$array_id/shard-$i.json" ] || { echo "FAIL: no shard-$i.json"; exit 1; }
  [ -f "$tmp/results/$array_id/shard-$i.journal.jsonl" ] || { echo "FAIL: no shard-$i journal"; exit 1; }
done
[ "$state" = COMPLETED ] || { echo "FAIL: merge job ended $state"; exit 1; }
merged="$tmp/results/$array_id/merged.json"
"$py" - "$merged" "$unsharded" <<'PY'
import json, sys
with open(sys.argv[1]) as f:
    doc = json.load(f)
expected = sys.argv[2].split()
got = []
for row in doc["benchmarks"]:
    assert not row.get("error_occurred"), f"{row['name']}: {row.get('error_message')}"
    if row["name"] not in got:
        got.append(row["name"])
assert set(got) == set(expected), f"merged {sorted(got)} != unsharded {sorted(expected)}"
assert got == expected, f"merged order {got} != unsharded order {expected}"
assert doc["context"]["torchbench_shard"] == "merged 3 shards", doc["context"]["torchbench_shard"]
print(f"merged.json: the unsharded run's {len(expected)} instances, in its order")
PY

# A requeued task resumes from its journal: nothing is left to run.
scontrol requeue "${array_id}_0"
scontrol update JobId="${array_id}_0" StartTime=now  # Slurm defers a requeued job by 2 min.
task_state=
for _ in $(seq 400); do
  info=$(scontrol show job "${array_id}_0" 2>/dev/null)
  task_state=$(sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' <<<"$info")
  grep -q "Restarts=1" <<<"$info" && [ "$task_state" = COMPLETED ] && break
  sleep 0.25
done
[ "$task_state" = COMPLETED ] || { echo "FAIL: requeued task 0 ended $task_state"; exit 1; }
grep -q "resuming .*shard-0.journal.jsonl: [0-9]* instance(s) done, 0 to run" \
  "$tmp/results/slurm-${array_id}_0.out" ||
  { cat "$tmp/results/slurm-${array_id}_0.out"; echo "FAIL: the requeued task did not resume"; exit 1; }
echo "requeued task 0 resumed from its journal after $((SECONDS - start)) s"

# The merge refuses a missing shard and a shard of another commit.
dir="$tmp/results/$array_id"
status=0
"$root/tools/tb" merge "$dir/shard-0.json" "$dir/shard-1.json" -o "$tmp/partial.json" \
  2>"$tmp/missing.err" || status=$?
[ "$status" -eq 1 ] && grep -q "shard 2/3 is missing" "$tmp/missing.err" ||
  { cat "$tmp/missing.err"; echo "FAIL: a missing shard gave exit $status, not 1"; exit 1; }
[ ! -e "$tmp/partial.json" ] || { echo "FAIL: a failed merge wrote its output"; exit 1; }
"$py" - "$dir/shard-2.json" "$tmp/other-commit.json" <<'PY'
import json, sys
with open(sys.argv[1]) as f:
    doc = json.load(f)
doc["context"]["torchbench_git_commit"] = "0" * 40
with open(sys.argv[2], "w") as f:
    json.dump(doc, f)
PY
status=0
"$py" "$root/tools/merge.py" "$dir/shard-0.json" "$dir/shard-1.json" "$tmp/other-commit.json" \
  -o "$tmp/mixed.json" 2>"$tmp/mixed.err" || status=$?
[ "$status" -eq 3 ] && grep -q "other-commit.json: commit" "$tmp/mixed.err" ||
  { cat "$tmp/mixed.err"; echo "FAIL: another commit gave exit $status, not 3"; exit 1; }
echo "merge refuses a missing shard (1) and another commit (3)"
echo "PASS"
