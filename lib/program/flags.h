// File: program/flags.h
//
// The harness's own command-line flags, all spelled --torchbench_*. They are
// taken out of argv before Google Benchmark reads the rest, so every
// --benchmark_* flag keeps working.
#ifndef TORCHBENCH_PROGRAM_FLAGS_H_
#define TORCHBENCH_PROGRAM_FLAGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "program/host_malloc.h"
#include "program/shard.h"
#include "torchbench/model.h"

namespace torchbench {

struct HarnessFlags {
  // --torchbench_batch_sizes=1,8,32; empty means each model's defaults.
  std::vector<int64_t> batch_sizes;
  // --torchbench_device=cpu|cuda[:i]; empty means cuda when usable.
  std::string device;
  // --torchbench_precision=fp32|tf32|fp16|bf16|amp_fp16|amp_bf16|default.
  Precision precision = Precision::kFp32;
  // --torchbench_optimizer=default|foreach|single.
  OptimizerPath optimizer = OptimizerPath::kDefault;
  // --torchbench_count_ops: one extra untimed step per instance counts the
  // ATen operators it dispatches (counters aten_ops, optimizer_ops).
  bool count_ops = false;
  // --torchbench_profile: after each instance's timed loop, profile_steps
  // more steps under the Kineto profiler add per-step counters
  // (aten_ops_per_step, would_sync_per_step; gpu_*_pct, kernels_per_step,
  // syncs_per_step, ... on a GPU). --torchbench_trace_dir implies it.
  bool profile = false;
  // --torchbench_profile_steps=K (default 5); implies profile.
  int profile_steps = 5;
  // --torchbench_trace_dir=DIR: each instance's Chrome trace and profile
  // tables. The trace has K+2 steps (the discarded start-up step and one after
  // the K, for Holistic Trace Analysis, which drops a trace's last); the
  // tables divide by K.
  std::string trace_dir;
  // --torchbench_profile_shapes: the profiler records each op's input shapes,
  // dtypes and scalar arguments (in the Chrome trace), for tools/tb abtest's
  // micro-benchmarks; implies profile.
  bool profile_shapes = false;
  // --torchbench_testonly_slow_op=aten::mm:0.2 (slow_op.h); empty: none.
  std::string testonly_slow_op;
  // --torchbench_op_coverage=FILE: the operators each instance dispatches in
  // one untimed step (op_coverage.h) go to FILE, and counters ops_distinct,
  // ... to its results.
  std::string op_coverage;
  // --torchbench_channels_last.
  bool channels_last = false;
  // --torchbench_weights=FILE.safetensors (InstanceCache::set_weights_file).
  std::string weights;
  // --torchbench_warmup_steps=N untimed steps after building an instance
  // (TorchBench's run.py uses 3).
  int warmup_steps = 3;
  // --torchbench_seed=N (TorchBench's is 1337).
  uint64_t seed = 1337;
  // --torchbench_fail_on_error=false keeps the exit status 0 when some
  // instance errored.
  bool fail_on_error = true;
  // --torchbench_list_models prints a table; =json prints JSON.
  std::optional<std::string> list_models;
  // --torchbench_cpu_memory_counter=false leaves LibTorch's CPU allocator
  // alone (the peak_mem counter is then absent on the CPU).
  bool cpu_memory_counter = true;
  // --torchbench_host_malloc=retain|glibc: whether freed host memory stays
  // in the process between steps (host_malloc.h).
  HostMalloc host_malloc = HostMalloc::kRetain;
  bool help = false;

  // Runs that survive and scale (torchbench program only):
  // --torchbench_isolate=process runs each instance in a child process.
  bool isolate = false;
  // --torchbench_instance_timeout=S: an isolated instance still running
  // after S seconds is killed and reported (0: no limit).
  double instance_timeout = 3600;
  // --torchbench_journal=FILE appends each finished instance to FILE.
  std::string journal;
  // --torchbench_resume=FILE: skip the instances FILE holds, report them
  // from it, append the rest to it.
  std::string resume;
  // --torchbench_shard=I/N; absent: from Slurm or Kubernetes variables.
  std::optional<Shard> shard;
  // --torchbench_shard_costs=RESULTS.json balances shards by its times.
  std::string shard_costs;
  // Internal: set by an isolating parent for its child, which runs one
  // instance and journals it to this file.
  std::string child_result;
};

// Parses and removes every --torchbench_* argument from argv, leaving the
// rest (program name first) for Google Benchmark. Returns InvalidArgument
// naming the flag for an unknown --torchbench_* flag or a bad value (a batch
// size that is not a positive integer, an unknown precision, ...).
absl::StatusOr<HarnessFlags> ParseHarnessFlags(int* argc, char** argv);

// Returns the help text for the --torchbench_* flags.
std::string HarnessFlagsHelp();

}  // namespace torchbench

#endif  // TORCHBENCH_PROGRAM_FLAGS_H_
