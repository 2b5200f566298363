#include "program/benchmark_runner.h"

#include <benchmark/benchmark.h>
#include <c10/util/Exception.h>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <iostream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "program/context.h"
#include "program/filters.h"
#include "program/isolation.h"
#include "program/journal.h"
#include "program/op_counter.h"
#include "program/op_coverage.h"
#include "program/profile.h"
#include "program/reporter.h"
#include "torchbench/device.h"
#include "torchbench/instance.h"
#include "torchbench/memory.h"

namespace torchbench {
namespace {

std::atomic<int> errored_instances{0};

InstanceCache& LiveInstance() {
  static auto* cache = new InstanceCache();
  return *cache;
}

// Returns a one-line message for an exception, without LibTorch's C++ stack
// trace (c10::Error::what() appends it).
std::string Describe(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) {
    std::string msg = c10_error->what_without_backtrace();
    if (dynamic_cast<const c10::OutOfMemoryError*>(&e) != nullptr) {
      msg = absl::StrCat("out of memory: ", msg);
    }
    return msg;
  }
  return e.what();
}

void Fail(benchmark::State& state, const std::string& message) {
  ++errored_instances;
  LiveInstance().Release();
  // Releasing after an out-of-memory error gives the next instance the
  // whole device again.
  state.SkipWithError(message.c_str());
}

const char* Bool(bool b) { return b ? "true" : "false"; }

// What ran, for the result's label: the resolved precision; for Train, the
// optimizer path(s) the step took and, under amp_fp16, whether a GradScaler
// ran; on CUDA, the model's cuDNN flags.
std::string Label(const Instance& instance) {
  const ModelConfig& config = instance.config();
  std::string label =
      absl::StrCat("precision:", PrecisionName(config.precision));
  if (config.mode == Mode::kTrain) {
    absl::StrAppend(&label, " optimizer:",
                    OptimizerPathsText(instance.stepped_optimizer_paths()));
    if (config.precision == Precision::kAmpFp16) {
      absl::StrAppend(&label, " grad_scaler:",
                      AmpGradScalerName(instance.spec().amp_grad_scaler));
    }
  }
  if (config.device.is_cuda()) {
    const BackendFlags& flags = instance.backend_flags();
    absl::StrAppend(&label, " cudnn_benchmark:", Bool(flags.cudnn_benchmark),
                    " cudnn_deterministic:", Bool(flags.cudnn_deterministic));
  }
  return label;
}

// An instance registered with a profiling pass.
struct ProfilePlan {
  const RegisteredModel* entry = nullptr;
  ModelConfig config;
  int warmup_steps = 0;
  ProfileOptions options;
};

std::map<std::string, ProfilePlan>& ProfilePlans() {
  static auto* plans = new std::map<std::string, ProfilePlan>();
  return *plans;
}

// The counters of each instance's pass, taken once: its runs reach the
// display and the file reporter, repetitions and aggregates apart.
std::map<std::string, std::map<std::string, double>>& Profiles() {
  static auto* profiles =
      new std::map<std::string, std::map<std::string, double>>();
  return *profiles;
}

// The per-step counters of `name`'s profiling pass, run on first use;
// nullptr when `name` was not registered with one. Throws what the pass
// throws.
const std::map<std::string, double>* ProfileAfterRepetitions(
    const std::string& name) {
  auto done = Profiles().find(name);
  if (done != Profiles().end()) return &done->second;
  const auto plan = ProfilePlans().find(name);
  if (plan == ProfilePlans().end()) return nullptr;
  const ProfilePlan& p = plan->second;
  Instance& instance =
      LiveInstance().Acquire(*p.entry, p.config, p.warmup_steps);
  return &Profiles()
              .emplace(name,
                       ProfileInstance(instance, name, p.options).counters)
              .first->second;
}

// Each instance's coverage counters, taken once: its first call runs the
// pass, right after the instance was built and warmed up, so the step
// recorded is the same on every run whatever the timing.
std::map<std::string, std::map<std::string, double>>& Coverages() {
  static auto* coverages =
      new std::map<std::string, std::map<std::string, double>>();
  return *coverages;
}

// One step under OpCoverage; appends the instance's line to `path`.
std::map<std::string, double> CoverageOf(Instance& instance,
                                         const std::string& name,
                                         const std::string& path) {
  std::vector<CoveredOp> ops;
  {
    OpCoverage coverage;
    instance.Step();
    SynchronizeDevice(instance.config().device);
    ops = coverage.ops();
  }
  const ModelConfig& config = instance.config();
  const absl::Status written = AppendCoverageLine(
      path,
      CoverageInstanceLine({.instance = name,
                            .model = instance.spec().name,
                            .domain = instance.spec().domain,
                            .mode = ModeName(config.mode),
                            .batch_size = config.batch_size,
                            .device = config.device.str(),
                            .precision = PrecisionName(config.precision)},
                           ops),
      /*truncate=*/false);
  if (!written.ok()) throw std::runtime_error(std::string(written.message()));
  return CoverageCounters(ops);
}

void RunInstance(benchmark::State& state, const RegisteredModel* entry,
                 ModelConfig config, int warmup_steps, bool count_ops,
                 const std::string& coverage_file) {
  if (Interrupted()) {
    // Not an error of the model: dropped from the results and the journal.
    LiveInstance().Release();
    state.SkipWithError(kInterruptedMessage);
    return;
  }
  Instance* instance = nullptr;
  try {
    instance = &LiveInstance().Acquire(*entry, config, warmup_steps);
  } catch (const std::exception& e) {
    Fail(state, absl::StrCat("setup failed: ", Describe(e)));
    return;
  }
  const std::string name =
      InstanceName(entry->spec.name, config.mode, config.batch_size);
  if (!coverage_file.empty() && Coverages().count(name) == 0) {
    try {
      Coverages()[name] = CoverageOf(*instance, name, coverage_file);
    } catch (const std::exception& e) {
      Fail(state, absl::StrCat("op coverage failed: ", Describe(e)));
      return;
    }
  }
  int64_t aten_ops = -1;
  int64_t optimizer_ops = -1;
  if (count_ops) {
    try {
      OpCounter ops;
      instance->Step();
      SynchronizeDevice(config.device);
      aten_ops = ops.top_level_ops();
      optimizer_ops = ops.optimizer_ops();
    } catch (const std::exception& e) {
      Fail(state, absl::StrCat("counting ops failed: ", Describe(e)));
      return;
    }
  }

  StepTimer timer(config.device);
  ResetPeakMemory(config.device);
  ResetPeakHostRss();
  torch::Tensor last;
  double device_seconds = 0;
  double wall_seconds = 0;
  try {
    for (auto _ : state) {
      if (Interrupted()) {
        LiveInstance().Release();
        state.SkipWithError(kInterruptedMessage);
        return;
      }
      // Freed before the next step, outside the timed region: kept alive, the
      // previous output counted in every step's peak but the first, so
      // peak_mem depended on how many iterations a repetition ran.
      last = torch::Tensor();
      timer.Start();
      last = instance->Step();
      const StepTime t = timer.Stop();
      state.SetIterationTime(t.seconds);
      device_seconds += t.seconds;
      wall_seconds += t.wall_seconds;
    }
    CheckFinite(last,
                absl::StrCat(config.mode == Mode::kTrain ? "loss" : "output",
                             " (", PrecisionName(config.precision), ")"));
  } catch (const std::exception& e) {
    Fail(state, Describe(e));
    return;
  }
  last = torch::Tensor();

  // The timed loop's peaks, read before the profiling pass can raise them.
  const int64_t peak = PeakMemoryBytes(config.device);
  const int64_t rss = PeakHostRssBytes();

  const auto iterations = static_cast<double>(state.iterations());
  if (iterations == 0) return;
  const double samples = iterations * static_cast<double>(config.batch_size);
  // Set directly rather than through SetItemsProcessed, whose rate Google
  // Benchmark may divide by CPU time; this is samples per measured second.
  state.counters["items_per_second"] =
      benchmark::Counter(device_seconds > 0 ? samples / device_seconds : 0);
  // Synchronized host seconds per step, beside the device-event Time.
  state.counters["wall_time"] = benchmark::Counter(wall_seconds / iterations);
  if (peak >= 0) {
    state.counters["peak_mem"] = benchmark::Counter(
        static_cast<double>(peak), benchmark::Counter::kDefaults,
        benchmark::Counter::OneK::kIs1024);
  }
  if (rss >= 0) {
    state.counters["peak_host_rss"] = benchmark::Counter(
        static_cast<double>(rss), benchmark::Counter::kDefaults,
        benchmark::Counter::OneK::kIs1024);
  }
  state.counters["params"] =
      benchmark::Counter(static_cast<double>(instance->counts().parameters));
  state.counters["batch_size"] =
      benchmark::Counter(static_cast<double>(config.batch_size));
  if (const auto it = Coverages().find(name); it != Coverages().end()) {
    for (const auto& [key, value] : it->second) {
      state.counters[key] = benchmark::Counter(value);
    }
  }
  if (aten_ops >= 0) {
    state.counters["aten_ops"] =
        benchmark::Counter(static_cast<double>(aten_ops));
    state.counters["optimizer_ops"] =
        benchmark::Counter(static_cast<double>(optimizer_ops));
  }
  state.SetLabel(Label(*instance));
}

}  // namespace

std::vector<int64_t> ResolveBatchSizes(const ModelSpec& spec, Mode mode,
                                       const std::vector<int64_t>& requested,
                                       std::vector<RegistrationNote>* notes) {
  const int64_t default_size = spec.DefaultBatchSize(mode);
  auto note = [&](int64_t runs, std::string text) {
    if (notes != nullptr) {
      notes->push_back({InstanceName(spec.name, mode, runs), std::move(text)});
    }
  };
  if (requested.empty()) return {default_size};
  if (spec.fixed_batch_size) {
    note(default_size,
         absl::StrCat(spec.name, " ", ModeName(mode),
                      " has a fixed batch size; running batch_size:",
                      default_size, " only"));
    return {default_size};
  }
  const int64_t smallest = spec.MinBatchSize(mode);
  std::vector<int64_t> sizes;
  for (int64_t size : requested) {
    if (size < smallest) {
      note(smallest, absl::StrCat(spec.name, " ", ModeName(mode),
                                  " needs batch_size >= ", smallest, " (",
                                  spec.min_batch_size_reason,
                                  "); running batch_size:", smallest,
                                  " instead of ", size));
      size = smallest;
    }
    if (std::find(sizes.begin(), sizes.end(), size) == sizes.end()) {
      sizes.push_back(size);
    }
  }
  return sizes;
}

std::vector<PlannedInstance> PlanInstances(
    const Registry& registry, const RunOptions& options,
    std::vector<RegistrationNote>* notes) {
  std::vector<PlannedInstance> planned;
  for (const RegisteredModel* entry : registry.List()) {
    for (Mode mode : {Mode::kTrain, Mode::kEval}) {
      if (!entry->spec.Supports(mode)) continue;
      for (int64_t batch_size :
           ResolveBatchSizes(entry->spec, mode, options.batch_sizes, notes)) {
        std::string name = InstanceName(entry->spec.name, mode, batch_size);
        // Registering only what the filter selects lets Google Benchmark
        // run exactly these, whatever it appends to their internal names.
        if (!FilterSelects(options.filter, name)) continue;
        ModelConfig config;
        config.mode = mode;
        config.batch_size = batch_size;
        config.device = options.device;
        config.precision = entry->spec.ResolvePrecision(options.precision, mode,
                                                        options.device);
        if (const std::string* why = entry->spec.UnsupportedReason(
                config.precision, mode, config.device)) {
          if (notes != nullptr) {
            notes->push_back(
                {name,
                 absl::StrCat(name, " skipped: ", entry->spec.name,
                              " does not run ", PrecisionName(config.precision),
                              " (", *why, ")")});
          }
          continue;
        }
        config.optimizer = options.optimizer;
        config.channels_last =
            options.channels_last && entry->spec.supports_channels_last;
        config.seed = options.seed;
        planned.push_back({std::move(name), entry, config});
      }
    }
  }
  return planned;
}

void RegisterInstances(const std::vector<PlannedInstance>& planned,
                       const RunOptions& options) {
  const int warmup = options.warmup_steps;
  const bool count_ops = options.count_ops;
  const std::string coverage_file = options.op_coverage_file;
  for (const PlannedInstance& p : planned) {
    const RegisteredModel* entry = p.entry;
    const ModelConfig config = p.config;
    if (options.profile_steps > 0) {
      ProfilePlan& plan = ProfilePlans()[p.name];
      plan = {.entry = entry, .config = config, .warmup_steps = warmup};
      plan.options.steps = options.profile_steps;
      plan.options.trace_dir = options.trace_dir;
      plan.options.record_shapes = options.profile_shapes;
    }
    benchmark::RegisterBenchmark(p.name.c_str(),
                                 [entry, config, warmup, count_ops,
                                  coverage_file](benchmark::State& state) {
                                   RunInstance(state, entry, config, warmup,
                                               count_ops, coverage_file);
                                 })
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
}

std::vector<std::string> RegisterModelBenchmarks(
    const Registry& registry, const RunOptions& options,
    std::vector<RegistrationNote>* notes) {
  const std::vector<PlannedInstance> planned =
      PlanInstances(registry, options, notes);
  RegisterInstances(planned, options);
  std::vector<std::string> names;
  for (const auto& p : planned) names.push_back(p.name);
  return names;
}

void ProfilingReporter::ReportRuns(const std::vector<Run>& runs) {
  // The runs of one instance reach this reporter up to four times
  // (repetitions and aggregates, display and file): a failed pass is
  // reported, and counted, once per instance.
  static auto* failures = new std::map<std::string, std::string>();
  std::vector<Run> out = runs;
  for (Run& run : out) {
    if (run.error_occurred) continue;
    const std::string name = run.run_name.function_name;
    const std::map<std::string, double>* counters = nullptr;
    if (!failures->count(name)) {
      try {
        counters = ProfileAfterRepetitions(name);
      } catch (const std::exception& e) {
        failures->emplace(name,
                          absl::StrCat("profiling failed: ", Describe(e)));
        ++errored_instances;
        LiveInstance().Release();
      }
    }
    if (const auto failed = failures->find(name); failed != failures->end()) {
      run.error_occurred = true;
      run.error_message = failed->second;
      continue;
    }
    if (counters == nullptr) continue;
    const bool spread =
        run.run_type == Run::RT_Aggregate &&
        (run.aggregate_name == "stddev" || run.aggregate_name == "cv");
    for (const auto& [key, value] : *counters) {
      run.counters[key] = benchmark::Counter(spread ? 0 : value);
    }
  }
  ForwardingReporter::ReportRuns(out);
}

int ErroredInstances() { return errored_instances.load(); }

void ReleaseLiveInstance() { LiveInstance().Release(); }

void SetLiveInstanceWeights(const std::string& path) {
  LiveInstance().set_weights_file(path);
}

}  // namespace torchbench
