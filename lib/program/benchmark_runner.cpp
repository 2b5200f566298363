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

// What ran, for the result's label: the resolved precision and, for Train,
// the optimizer path(s) the step took.
std::string Label(const Instance& instance) {
  std::string label =
      absl::StrCat("precision:", PrecisionName(instance.config().precision));
  if (instance.config().mode == Mode::kTrain) {
    absl::StrAppend(&label, " optimizer:",
                    OptimizerPathsText(instance.stepped_optimizer_paths()));
  }
  return label;
}

// The profile of each instance, taken once: Google Benchmark calls an
// instance's function several times (iteration probes, repetitions), and
// every call reports the same per-step counters.
std::map<std::string, std::map<std::string, double>>& Profiles() {
  static auto* profiles =
      new std::map<std::string, std::map<std::string, double>>();
  return *profiles;
}

void RunInstance(benchmark::State& state, const RegisteredModel* entry,
                 ModelConfig config, int warmup_steps, bool count_ops,
                 const ProfileOptions* profile) {
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

  // After the timed loop, never inside it.
  const std::map<std::string, double>* profile_counters = nullptr;
  if (profile != nullptr) {
    const std::string name =
        InstanceName(entry->spec.name, config.mode, config.batch_size);
    auto it = Profiles().find(name);
    if (it == Profiles().end()) {
      try {
        it = Profiles()
                 .emplace(name,
                          ProfileInstance(*instance, name, *profile).counters)
                 .first;
      } catch (const std::exception& e) {
        Fail(state, absl::StrCat("profiling failed: ", Describe(e)));
        return;
      }
    }
    profile_counters = &it->second;
  }

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
  if (aten_ops >= 0) {
    state.counters["aten_ops"] =
        benchmark::Counter(static_cast<double>(aten_ops));
    state.counters["optimizer_ops"] =
        benchmark::Counter(static_cast<double>(optimizer_ops));
  }
  if (profile_counters != nullptr) {
    for (const auto& [key, value] : *profile_counters) {
      state.counters[key] = benchmark::Counter(value);
    }
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
  std::shared_ptr<const ProfileOptions> profile;
  if (options.profile_steps > 0) {
    auto p = std::make_shared<ProfileOptions>();
    p->steps = options.profile_steps;
    p->trace_dir = options.trace_dir;
    profile = std::move(p);
  }
  for (const PlannedInstance& p : planned) {
    const RegisteredModel* entry = p.entry;
    const ModelConfig config = p.config;
    benchmark::RegisterBenchmark(
        p.name.c_str(),
        [entry, config, warmup, count_ops, profile](benchmark::State& state) {
          RunInstance(state, entry, config, warmup, count_ops, profile.get());
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

int ErroredInstances() { return errored_instances.load(); }

void ReleaseLiveInstance() { LiveInstance().Release(); }

}  // namespace torchbench
