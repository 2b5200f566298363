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
  Precision precision = Precision::kFp32;
  bool channels_last = false;
  int warmup_steps = 3;
  uint64_t seed = 1337;
  std::vector<int64_t> batch_sizes;  // Empty: each model's defaults.
};

// A remark about one registered benchmark, e.g. that a fixed-batch model
// ignored --torchbench_batch_sizes.
struct RegistrationNote {
  std::string benchmark;
  std::string text;
};

// Registers one benchmark per model x supported mode x batch size of
// `registry`. Models with a fixed batch size run only their default; each
// such case adds a note (when `notes` is not null). Returns the registered
// names.
std::vector<std::string> RegisterModelBenchmarks(
    const Registry& registry, const RunOptions& options,
    std::vector<RegistrationNote>* notes);

// Returns whether `name` is selected by a --benchmark_filter value, with
// Google Benchmark's rules: extended regex search, a leading '-' negates,
// "" and "all" select everything.
bool FilterSelects(const std::string& filter, const std::string& name);

// Returns how many benchmark instances errored since the process started.
int ErroredInstances();

// Frees the live model instance (called after the run).
void ReleaseLiveInstance();

// Prints every model's metadata and element counts (built on the CPU) as a
// table or as JSON (a list of objects with name, domain, task, reference,
// modes, train_batch_size, eval_batch_size, fixed_batch_size, parameters,
// buffers). Returns false when a model failed to build (it is listed with an
// "error" field).
bool ListModels(const Registry& registry, const std::string& format,
                std::ostream& out);

// The torchbench program: parses flags, registers, runs, exits non-zero
// for bad flags, a filter that matches nothing, or (unless
// --torchbench_fail_on_error=false) any errored instance.
int TorchBenchMain(int argc, char** argv);

}  // namespace torchbench

#endif  // TORCHBENCH_BENCHMARK_RUNNER_H_
