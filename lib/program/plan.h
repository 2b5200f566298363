// File: program/plan.h
//
// The run's plan: which instances run, and with what. The registry's models
// x modes x batch sizes that --benchmark_filter selects, less what this
// shard leaves to others and what a resumed journal already holds.
#ifndef TORCHBENCH_PROGRAM_PLAN_H_
#define TORCHBENCH_PROGRAM_PLAN_H_

#include <c10/core/Device.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "program/flags.h"
#include "program/journal.h"
#include "program/machine_peak.h"
#include "program/shard.h"
#include "torchbench/registry.h"

namespace torchbench {

// What every instance of a run is configured and measured with (from the
// flags, RunOptionsFrom).
struct RunOptions {
  c10::Device device = c10::kCPU;
  // kDefault resolves per model and mode (ModelSpec::ResolvePrecision).
  Precision precision = Precision::kFp32;
  OptimizerPath optimizer = OptimizerPath::kDefault;
  bool count_ops = false;
  // --torchbench_flops: the FLOP pass, divided by these (Plan sets them).
  bool count_flops = false;
  MachinePeaks peaks;
  // > 0: a profiling pass of this many steps after the measured repetitions.
  int profile_steps = 0;
  std::string trace_dir;
  bool profile_shapes = false;
  std::string op_coverage_file;  // "": no coverage pass.
  std::string weights_file;      // "": the models' own weights.
  // kAoti, kTorchScript: the Eval instances run compiled_dir's packages
  // (compiled_model.h); Train instances are not planned.
  Backend backend = Backend::kEager;
  std::string compiled_dir;
  bool channels_last = false;
  int warmup_steps = 3;
  uint64_t seed = 1337;
  std::vector<int64_t> batch_sizes;  // Empty: each model's defaults.
  // A --benchmark_filter value: only the instances whose exact names it
  // selects are planned. Empty: all.
  std::string filter;
};

RunOptions RunOptionsFrom(const HarnessFlags& flags, c10::Device device,
                          std::string filter);

// A remark about one planned instance, e.g. that a fixed-batch model ignored
// --torchbench_batch_sizes.
struct RegistrationNote {
  std::string benchmark;
  std::string text;
};

// Returns the batch sizes `spec` runs in `mode` when `requested` are asked
// for (empty: the model's default), in request order without repeats. A
// fixed-batch model runs only its default; a request below the mode's
// smallest valid batch (ModelSpec::MinBatchSize) runs at that batch. Each
// such change adds a note (when `notes` is not null).
std::vector<int64_t> ResolveBatchSizes(const ModelSpec& spec, Mode mode,
                                       const std::vector<int64_t>& requested,
                                       std::vector<RegistrationNote>* notes);

// One benchmark instance to run: its name, model and configuration.
struct PlannedInstance {
  std::string name;
  const RegisteredModel* entry = nullptr;
  ModelConfig config;
};

// One instance per model x supported mode x batch size of `registry` whose
// exact name options.filter selects, skipping (with a note) the instances
// whose resolved precision the model cannot run, and under a compiled
// backend the Train instances and those that do not resolve to fp32.
std::vector<PlannedInstance> PlanInstances(
    const Registry& registry, const RunOptions& options,
    std::vector<RegistrationNote>* notes);

// The dtypes the planned instances' matrix products run in (float32 always;
// bfloat16 and float16 for the precisions that use them): the GEMM peaks a
// FLOP run measures.
std::set<c10::ScalarType> GemmDtypes(
    const std::vector<PlannedInstance>& planned);

// The planned instances' names.
std::vector<std::string> InstanceNames(
    const std::vector<PlannedInstance>& planned);

// "model:domain,..." of every planned model, for reports that group results
// by domain (taken before sharding, so every shard and their merge name all).
std::string ModelDomains(const std::vector<PlannedInstance>& planned);

// Keeps the planned instances of `shard`, balanced by `costs_path`'s times
// (a previous run's JSON) or, without one, by parameter counts; adds the
// plan's context keys (torchbench_shard, _plan, _basis, _instances).
absl::StatusOr<std::vector<PlannedInstance>> SelectShard(
    const std::vector<PlannedInstance>& planned, const Shard& shard,
    const std::string& costs_path, ContextPairs* context);

// A resumed run: what the journal holds is reported from it (`replay`), in
// plan order; the rest is run (`todo`).
struct ResumeSplit {
  std::vector<InstanceRecord> replay;
  std::vector<PlannedInstance> todo;
};
ResumeSplit SplitResumed(const std::vector<PlannedInstance>& planned,
                         std::vector<InstanceRecord> journaled);

}  // namespace torchbench

#endif  // TORCHBENCH_PROGRAM_PLAN_H_
