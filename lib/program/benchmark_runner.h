// File: program/benchmark_runner.h
//
// Registers the models with Google Benchmark at run time (one benchmark per
// model x mode x batch size, named <model>/<Train|Eval>/batch_size:<N>) and
// runs them: setup once per instance, untimed warm-up, one step per
// iteration followed by the harness's device synchronization, manual time
// from device events (CPU: steady clock), memory counters, and errors turned
// into SkipWithError so one failing model never stops the others.
#ifndef TORCHBENCH_PROGRAM_BENCHMARK_RUNNER_H_
#define TORCHBENCH_PROGRAM_BENCHMARK_RUNNER_H_

#include <benchmark/benchmark.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "program/flags.h"
#include "program/reporter.h"
#include "torchbench/registry.h"

namespace torchbench {

struct RunOptions {
  c10::Device device = c10::kCPU;
  // kDefault resolves per model and mode (ModelSpec::ResolvePrecision).
  Precision precision = Precision::kFp32;
  OptimizerPath optimizer = OptimizerPath::kDefault;
  // One extra untimed step per instance under an OpCounter.
  bool count_ops = false;
  // > 0: after each instance's measured repetitions, this many steps under
  // the Kineto profiler (profile.h) add per-step counters; ProfilingReporter
  // runs them.
  int profile_steps = 0;
  // With profile_steps: where each instance's trace and tables go ("": none).
  std::string trace_dir;
  // With profile_steps: record each op's input shapes (ProfileOptions).
  bool profile_shapes = false;
  // Non-empty: before an instance's first timed loop, one untimed step under
  // OpCoverage (op_coverage.h) appends the instance's line to this file and
  // adds ops_distinct* counters.
  std::string op_coverage_file;
  bool channels_last = false;
  int warmup_steps = 3;
  uint64_t seed = 1337;
  std::vector<int64_t> batch_sizes;  // Empty: each model's defaults.
  // A --benchmark_filter value: only the instances whose exact names it
  // selects are registered. Empty: all.
  std::string filter;
};

// A remark about one registered benchmark, e.g. that a fixed-batch model
// ignored --torchbench_batch_sizes.
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

// The instances RegisterModelBenchmarks would register, without registering
// them (so that a shard or a resumed run can drop some first).
std::vector<PlannedInstance> PlanInstances(
    const Registry& registry, const RunOptions& options,
    std::vector<RegistrationNote>* notes);

// Registers `planned` with Google Benchmark.
void RegisterInstances(const std::vector<PlannedInstance>& planned,
                       const RunOptions& options);

// Registers one benchmark per model x supported mode x batch size of
// `registry` (batch sizes from ResolveBatchSizes) whose exact name
// options.filter selects, skipping (with a note) the instances whose
// resolved precision the model cannot run. Returns the registered names.
std::vector<std::string> RegisterModelBenchmarks(
    const Registry& registry, const RunOptions& options,
    std::vector<RegistrationNote>* notes);

// Profiles an instance once its measured repetitions are over. Google
// Benchmark reports an instance's runs right after its last repetition (its
// repetitions first, then its aggregates); placed in front of the other
// reporters, this one then runs the profiling pass of each instance
// registered with profile_steps (on the live instance, rebuilt if another
// ran in between) and adds its per-step counters to every run and aggregate
// it forwards (stddev and cv as 0). Profiling in the first iteration probe,
// as before, put a CUPTI session in front of every measured repetition.
// Other runs pass through unchanged; a failed pass marks the instance's runs
// errored with "profiling failed: ...".
class ProfilingReporter : public ForwardingReporter {
 public:
  using ForwardingReporter::ForwardingReporter;
  void ReportRuns(const std::vector<Run>& runs) override;
};

// Returns how many benchmark instances errored since the process started.
int ErroredInstances();

// Frees the live model instance (called after the run).
void ReleaseLiveInstance();

// Every instance the program builds loads this safetensors file
// (--torchbench_weights; InstanceCache::set_weights_file).
void SetLiveInstanceWeights(const std::string& path);

}  // namespace torchbench

#endif  // TORCHBENCH_PROGRAM_BENCHMARK_RUNNER_H_
