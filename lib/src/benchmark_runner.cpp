#include "torchbench/benchmark_runner.h"

#include <benchmark/benchmark.h>
#include <c10/util/Exception.h>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <iostream>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "torchbench/context.h"
#include "torchbench/device.h"
#include "torchbench/instance.h"
#include "torchbench/memory.h"
#include "torchbench/op_counter.h"
#include "torchbench/reporter.h"

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

void RunInstance(benchmark::State& state, const RegisteredModel* entry,
                 ModelConfig config, int warmup_steps, bool count_ops) {
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

  const auto iterations = static_cast<double>(state.iterations());
  if (iterations == 0) return;
  const double samples = iterations * static_cast<double>(config.batch_size);
  // Set directly rather than through SetItemsProcessed, whose rate Google
  // Benchmark may divide by CPU time; this is samples per measured second.
  state.counters["items_per_second"] =
      benchmark::Counter(device_seconds > 0 ? samples / device_seconds : 0);
  // Synchronized host seconds per step, beside the device-event Time.
  state.counters["wall_time"] = benchmark::Counter(wall_seconds / iterations);
  const int64_t peak = PeakMemoryBytes(config.device);
  if (peak >= 0) {
    state.counters["peak_mem"] = benchmark::Counter(
        static_cast<double>(peak), benchmark::Counter::kDefaults,
        benchmark::Counter::OneK::kIs1024);
  }
  const int64_t rss = PeakHostRssBytes();
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
  state.SetLabel(Label(*instance));
}

std::string JsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string Quote(const std::string& s) {
  return absl::StrCat("\"", JsonEscape(s), "\"");
}

int NoMatch(const std::string& filter) {
  std::cerr << "torchbench: no benchmark matches --benchmark_filter='" << filter
            << "' (--benchmark_list_tests lists them; names are "
               "<model>/<Train|Eval>/batch_size:<N>)\n";
  return 2;
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

std::vector<std::string> RegisterModelBenchmarks(
    const Registry& registry, const RunOptions& options,
    std::vector<RegistrationNote>* notes) {
  std::vector<std::string> names;
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
        const int warmup = options.warmup_steps;
        const bool count_ops = options.count_ops;
        benchmark::RegisterBenchmark(
            name.c_str(),
            [entry, config, warmup, count_ops](benchmark::State& state) {
              RunInstance(state, entry, config, warmup, count_ops);
            })
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond);
        names.push_back(std::move(name));
      }
    }
  }
  return names;
}

std::string GoogleBenchmarkFilter(const std::string& filter,
                                  const std::vector<std::string>& registered) {
  if (filter.empty() || filter == "all") return "all";
  // A negative filter already spared every registered name; the caller's
  // own benchmarks see it unchanged.
  if (filter.front() == '-' || registered.empty()) return filter;
  std::vector<std::string> escaped;
  escaped.reserve(registered.size());
  for (const std::string& name : registered) {
    std::string e;
    for (char c : name) {
      if (std::string_view(".[]()*+?{}|^$\\").find(c) !=
          std::string_view::npos) {
        e += '\\';
      }
      e += c;
    }
    escaped.push_back(std::move(e));
  }
  return absl::StrCat("^(", absl::StrJoin(escaped, "|"), ")/manual_time$|",
                      filter);
}

std::string FilterError(const std::string& filter) {
  if (filter.empty() || filter == "all") return "";
  try {
    const std::regex re(filter.front() == '-' ? filter.substr(1) : filter,
                        std::regex::extended);
  } catch (const std::regex_error& e) {
    return e.what();
  }
  return "";
}

bool FilterSelects(const std::string& filter, const std::string& name) {
  if (filter.empty() || filter == "all") return true;
  const bool negate = filter.front() == '-';
  const std::string pattern = negate ? filter.substr(1) : filter;
  try {
    const std::regex re(pattern, std::regex::extended);
    return std::regex_search(name, re) != negate;
  } catch (const std::regex_error&) {
    return true;  // Google Benchmark reports a bad pattern itself.
  }
}

int ErroredInstances() { return errored_instances.load(); }

void ReleaseLiveInstance() { LiveInstance().Release(); }

bool ListModels(const Registry& registry, const std::string& format,
                std::ostream& out) {
  bool ok = true;
  const bool json = format == "json";
  if (json) {
    out << "[";
  } else {
    out << absl::StrCat(
        "name", std::string(22, ' '), "domain", std::string(10, ' '),
        "modes         batch(T/E)    parameters     buffers  reference\n");
  }
  bool first = true;
  for (const RegisteredModel* entry : registry.List()) {
    const ModelSpec& spec = entry->spec;
    ElementCounts counts;
    std::string error;
    try {
      ModelConfig config;
      config.mode = spec.Supports(Mode::kEval) ? Mode::kEval : Mode::kTrain;
      config.batch_size =
          spec.fixed_batch_size
              ? spec.DefaultBatchSize(config.mode)
              : std::max(spec.MinBatchSize(config.mode),
                         std::min(spec.test_batch_size,
                                  spec.DefaultBatchSize(config.mode)));
      auto model = entry->Create(config);
      counts = CountElements(model->module());
    } catch (const std::exception& e) {
      error = Describe(e);
      ok = false;
    }
    std::vector<std::string> modes;
    for (Mode m : spec.modes) modes.push_back(ModeName(m));
    if (json) {
      std::vector<std::string> quoted;
      for (const auto& m : modes) quoted.push_back(Quote(m));
      out << (first ? "\n" : ",\n") << "  {\"name\": " << Quote(spec.name)
          << ", \"domain\": " << Quote(spec.domain)
          << ", \"task\": " << Quote(spec.task)
          << ", \"reference\": " << Quote(spec.reference) << ", \"modes\": ["
          << absl::StrJoin(quoted, ", ") << "]"
          << ", \"train_batch_size\": " << spec.train_batch_size
          << ", \"eval_batch_size\": " << spec.eval_batch_size
          << ", \"fixed_batch_size\": "
          << (spec.fixed_batch_size ? "true" : "false")
          << ", \"min_train_batch_size\": " << spec.MinBatchSize(Mode::kTrain)
          << ", \"min_eval_batch_size\": " << spec.MinBatchSize(Mode::kEval)
          << ", \"parameters\": " << counts.parameters
          << ", \"buffers\": " << counts.buffers;
      if (!error.empty()) out << ", \"error\": " << Quote(error);
      out << "}";
    } else {
      char line[512];
      std::snprintf(
          line, sizeof(line), "%-26s%-16s%-12s%6lld/%-9lld%12lld%12lld  %s\n",
          spec.name.c_str(), spec.domain.c_str(),
          absl::StrJoin(modes, ",").c_str(),
          static_cast<long long>(spec.train_batch_size),
          static_cast<long long>(spec.eval_batch_size),
          static_cast<long long>(counts.parameters),
          static_cast<long long>(counts.buffers), spec.reference.c_str());
      out << line;
      if (!error.empty()) out << "  error: " << error << "\n";
    }
    first = false;
  }
  out << (json ? "\n]\n" : "");
  return ok;
}

namespace {

// Lists the caller's own benchmarks as Google Benchmark would (called before
// the TorchBench ones are registered). Returns how many it listed.
size_t ListCallerBenchmarks(const std::string& filter) {
  benchmark::ConsoleReporter lister;
  std::ostringstream discarded;  // "Failed to match any benchmarks ..."
  lister.SetOutputStream(&std::cout);
  lister.SetErrorStream(&discarded);
  return benchmark::RunSpecifiedBenchmarks(&lister, filter);
}

// The torchbench program and RunBenchmarks. `caller_benchmarks`: other
// benchmarks may be registered beside TorchBench's.
int RunMain(int argc, char** argv, bool caller_benchmarks) {
  auto flags = ParseHarnessFlags(&argc, argv);
  if (!flags.ok()) {
    std::cerr << "torchbench: " << flags.status().message() << "\n";
    return 2;
  }
  if (flags->help) {
    std::cout << HarnessFlagsHelp();
    return 0;
  }
  if (flags->cpu_memory_counter) InstallCpuMemoryCounter();
  if (flags->list_models) {
    return ListModels(Registry::Global(), *flags->list_models, std::cout) ? 0
                                                                          : 1;
  }

  c10::Device device = DefaultDevice();
  if (!flags->device.empty()) {
    auto parsed = ParseDevice(flags->device);
    if (!parsed.ok()) {
      std::cerr << "torchbench: " << parsed.status().message() << "\n";
      return 2;
    }
    device = *parsed;
  }
  ApplyPrecision(flags->precision);

  // The reporters read Google Benchmark's output flags from argv before
  // Initialize() consumes them; the names they own are added once
  // registered.
  auto owned = std::make_shared<std::set<std::string>>();
  Reporters reporters = MakeReporters(
      argc, argv, [owned](const auto& name) { return owned->count(name) > 0; });
  bool list_tests = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--benchmark_list_tests" ||
        arg == "--benchmark_list_tests=true") {
      list_tests = true;
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  const std::string filter = benchmark::GetBenchmarkFilter();
  if (const std::string error = FilterError(filter); !error.empty()) {
    std::cerr << "torchbench: --benchmark_filter='" << filter
              << "' is not a valid regular expression: " << error << "\n";
    return 2;
  }

  // Google Benchmark's listing would show "/manual_time" on TorchBench's
  // names, so the caller's are listed first, by Google Benchmark, and
  // TorchBench's after them, by the harness.
  size_t listed = 0;
  if (list_tests && caller_benchmarks) listed = ListCallerBenchmarks(filter);

  RunOptions options;
  options.device = device;
  options.precision = flags->precision;
  options.optimizer = flags->optimizer;
  options.count_ops = flags->count_ops;
  options.channels_last = flags->channels_last;
  options.warmup_steps = flags->warmup_steps;
  options.seed = flags->seed;
  options.batch_sizes = flags->batch_sizes;
  options.filter = filter;
  std::vector<RegistrationNote> notes;
  const std::vector<std::string> names =
      RegisterModelBenchmarks(Registry::Global(), options, &notes);
  for (const auto& note : notes) {
    if (FilterSelects(filter, note.benchmark)) {
      std::cerr << "torchbench: note: " << note.text << "\n";
    }
  }
  if (list_tests) {
    for (const auto& name : names) std::cout << name << "\n";
    listed += names.size();
    return listed > 0 ? 0 : NoMatch(filter);
  }
  if (names.empty() && !caller_benchmarks) return NoMatch(filter);
  for (const auto& [key, value] : RunContext(device, *flags)) {
    benchmark::AddCustomContext(key, value);
  }

  owned->insert(names.begin(), names.end());
  const std::string spec =
      caller_benchmarks ? GoogleBenchmarkFilter(filter, names) : "all";
  const size_t ran = benchmark::RunSpecifiedBenchmarks(
      reporters.display.get(), reporters.file.get(), spec);
  ReleaseLiveInstance();
  benchmark::Shutdown();
  if (ran == 0) return NoMatch(filter);
  if (ErroredInstances() > 0) {
    std::cerr << "torchbench: " << ErroredInstances()
              << " benchmark run(s) errored (see error_message above)";
    if (flags->fail_on_error) {
      std::cerr << "; exiting 1 (--torchbench_fail_on_error=false to exit 0)\n";
      return 1;
    }
    std::cerr << "\n";
  }
  return 0;
}

}  // namespace

int TorchBenchMain(int argc, char** argv) {
  return RunMain(argc, argv, /*caller_benchmarks=*/false);
}

int RunBenchmarks(int argc, char** argv) {
  return RunMain(argc, argv, /*caller_benchmarks=*/true);
}

}  // namespace torchbench
