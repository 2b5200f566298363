// File: torchbench/benchmark_runner.h
//
// Registers the models with Google Benchmark at run time (one benchmark per
// model x mode x batch size, named <model>/<Train|Eval>/batch_size:<N>) and
// runs them: setup once per instance, untimed warm-up, one step per
// iteration followed by the harness's device synchronization, manual time
// from device events (CPU: steady clock), memory counters, and errors turned
// into SkipWithError so one failing model never stops the others.
#ifndef TORCHBENCH_BENCHMARK_RUNNER_H_
#define TORCHBENCH_BENCHMARK_RUNNER_H_

#include <c10/core/Device.h>

#include <cstdint>
#include <string>
#include <vector>

#include "torchbench/flags.h"
#include "torchbench/registry.h"

namespace torchbench {

struct RunOptions {
  c10::Device device = c10::kCPU;
  // kDefault resolves per model and mode (ModelSpec::ResolvePrecision).
  Precision precision = Precision::kFp32;
  OptimizerPath optimizer = OptimizerPath::kDefault;
  // One extra untimed step per instance under an OpCounter.
  bool count_ops = false;
  // > 0: after each instance's timed loop, this many steps under the Kineto
  // profiler (profile.h) add per-step counters.
  int profile_steps = 0;
  // With profile_steps: where each instance's trace and tables go ("": none).
  std::string trace_dir;
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

// `text` with every extended-regex metacharacter escaped.
std::string EscapeRegex(const std::string& text);

// Registers one benchmark per model x supported mode x batch size of
// `registry` (batch sizes from ResolveBatchSizes) whose exact name
// options.filter selects, skipping (with a note) the instances whose
// resolved precision the model cannot run. Returns the registered names.
std::vector<std::string> RegisterModelBenchmarks(
    const Registry& registry, const RunOptions& options,
    std::vector<RegistrationNote>* notes);

// Returns whether `name` is selected by a --benchmark_filter value, with
// Google Benchmark's rules: extended regex search, a leading '-' negates,
// "" and "all" select everything.
bool FilterSelects(const std::string& filter, const std::string& name);

// Returns why a --benchmark_filter value is not a valid extended regular
// expression, or "" when it is.
std::string FilterError(const std::string& filter);

// Returns the filter to hand Google Benchmark so that it runs exactly the
// TorchBench benchmarks `registered` (the names RegisterModelBenchmarks
// returned for `filter`) and, among any other benchmarks of the process,
// those `filter` selects. Google Benchmark matches manually timed benchmarks
// by an internal name ending in "/manual_time"; this keeps `^name$` working
// on the names the harness prints.
std::string GoogleBenchmarkFilter(const std::string& filter,
                                  const std::vector<std::string>& registered);

// Returns how many benchmark instances errored since the process started.
int ErroredInstances();

// Frees the live model instance (called after the run).
void ReleaseLiveInstance();

// Prints every model's metadata and element counts (its spec's reference
// figures, which the built port equals: tests/models/counts_test.cpp) as a
// table or as JSON (a list of objects with name, domain, task, reference,
// modes, train_batch_size, eval_batch_size, fixed_batch_size,
// min_train_batch_size, min_eval_batch_size, parameters, buffers). Builds
// no model. Returns false when a spec records no counts (that model is
// listed with an "error" field).
bool ListModels(const Registry& registry, const std::string& format,
                std::ostream& out);

// The torchbench program: parses flags, registers, runs, exits non-zero
// for bad flags, a filter that matches nothing, or (unless
// --torchbench_fail_on_error=false) any errored instance.
int TorchBenchMain(int argc, char** argv);

// Runs TorchBench's model benchmarks beside the caller's own Google Benchmark
// benchmarks, from the caller's main():
//
//   BENCHMARK(BM_MyTokenizer);   // the caller's own, as usual
//   int main(int argc, char** argv) {
//     return torchbench::RunBenchmarks(argc, argv);
//   }
//
// Takes the same --torchbench_* and --benchmark_* flags as the torchbench
// program and gives the TorchBench benchmarks the same names, counters, JSON
// context and exit codes; the caller's benchmarks keep Google Benchmark's
// own names and filter rules. Call it once, instead of benchmark::Initialize
// and benchmark::RunSpecifiedBenchmarks.
int RunBenchmarks(int argc, char** argv);

}  // namespace torchbench

#endif  // TORCHBENCH_BENCHMARK_RUNNER_H_
