#include "program/benchmark_runner.h"

#include <benchmark/benchmark.h>
#include <c10/util/Exception.h>
#include <torch/torch.h>

#include <exception>
#include <map>
#include <sstream>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "instance_internal.h"
#include "memory_internal.h"
#include "program/compiled_model.h"
#include "program/filters.h"
#include "program/flop_counter.h"
#include "program/host_malloc.h"
#include "program/isolation.h"
#include "program/machine_peak.h"
#include "program/op_counter.h"
#include "program/op_coverage.h"
#include "program/profile.h"
#include "step_timer.h"
#include "torchbench/device.h"
#include "torchbench/memory.h"

namespace torchbench {
namespace {

using Counters = std::map<std::string, double>;

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

// What ran, for the result's label: the resolved precision and, when not
// eager, the backend; for Train, the optimizer path(s) the step took and,
// under amp_fp16, whether a GradScaler ran; on CUDA, the TF32 and cuDNN
// flags `in_force`, read back from PyTorch after the timed steps (what the
// steps ran under, whoever set it).
std::string Label(const Instance& instance, Backend backend,
                  const BackendFlags& in_force) {
  const ModelConfig& config = instance.config();
  std::string label =
      absl::StrCat("precision:", PrecisionName(config.precision));
  if (backend != Backend::kEager) {
    absl::StrAppend(&label, " backend:", BackendName(backend));
  }
  if (config.mode == Mode::kTrain) {
    absl::StrAppend(&label, " optimizer:",
                    OptimizerPathsText(instance.stepped_optimizer_paths()));
    if (config.precision == Precision::kAmpFp16) {
      absl::StrAppend(&label, " grad_scaler:",
                      AmpGradScalerName(instance.spec().amp_grad_scaler));
    }
  }
  if (config.device.is_cuda()) {
    absl::StrAppend(&label, " ", BackendFlagsText(in_force));
  }
  return label;
}

// ---- Prepare ---------------------------------------------------------------

// What Prepare hands Measure: an error every repetition reports, or the
// counters of the untimed passes.
struct Prepared {
  std::string error;
  Counters counters;
  // --torchbench_flops: the step's FLOPs (-1: not counted), and the seconds
  // they would take at the machine's measured peaks.
  double flops = -1;
  double seconds_at_peak = 0;
  double seconds_at_roofline = 0;
};

// The compiled instance's fidelity check, on its first step (the first
// warm-up step; one untimed step when there is no warm-up): its largest
// relative errors against Python eager's stored outputs and, where the port
// takes the package's inputs, the port's eager Forward.
Counters CompiledFidelityPass(Instance& instance, const RegisteredModel& port) {
  auto* compiled = dynamic_cast<CompiledModel*>(&instance.model());
  if (compiled == nullptr) return {};
  if (compiled->first_outputs().empty()) instance.Step();
  const CompiledFidelity fidelity =
      CheckCompiledFidelity(*compiled, port, instance.config());
  instance.Activate();  // Building the port set its own flags.
  // The port built for the check is freed; under --torchbench_host_malloc=
  // retain its pages would stay and raise the instance's peak_host_rss,
  // which must be the package's alone.
  TrimHostHeap();
  Counters counters = {
      {"compiled_error_vs_python", fidelity.versus_python_eager}};
  if (fidelity.versus_port) {
    counters["compiled_error_vs_port"] = *fidelity.versus_port;
  }
  return counters;
}

// One untimed step under OpCoverage; appends the instance's line to `path`.
Counters CoveragePass(Instance& instance, const std::string& name,
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

// One untimed step under an OpCounter.
Counters OpCountPass(Instance& instance) {
  OpCounter ops;
  instance.Step();
  SynchronizeDevice(instance.config().device);
  return {{"aten_ops", static_cast<double>(ops.top_level_ops())},
          {"optimizer_ops", static_cast<double>(ops.optimizer_ops())}};
}

// One untimed step under a FlopCounter, which is gone before Measure: a
// timed step never runs with its callback installed.
Counters FlopPass(Instance& instance, const MachinePeaks& peaks,
                  Prepared* prepared) {
  FlopCount count;
  {
    FlopCounter flops;
    instance.Step();
    SynchronizeDevice(instance.config().device);
    count = flops.count();
  }
  if (!count.error.empty()) throw std::runtime_error(count.error);
  prepared->flops = static_cast<double>(count.total());
  prepared->seconds_at_peak = SecondsAtPeak(count, peaks);
  const Roofline roofline = RooflineOf(count, peaks);
  prepared->seconds_at_roofline = roofline.seconds;
  Counters counters = {
      {"flops_per_step", prepared->flops},
      {"flops_forward", static_cast<double>(count.forward)},
      {"product_bytes", static_cast<double>(count.bytes)},
      {"memory_bound_share",
       roofline.seconds > 0 ? roofline.memory_bound_seconds / roofline.seconds
                            : 0}};
  if (instance.config().mode == Mode::kTrain) {
    counters["flops_backward"] = static_cast<double>(count.backward);
    counters["flops_optimizer"] = static_cast<double>(count.optimizer);
  }
  return counters;
}

// Builds and warms up the instance, then runs its untimed passes, so that
// the step each pass records is the same whatever the timing does after.
Prepared Prepare(const PlannedInstance& p, RunState* state) {
  const RunOptions& options = state->options();
  Prepared prepared;
  if (Interrupted()) return prepared;  // Measure reports it.
  const char* phase = "setup failed: ";
  try {
    Instance& instance = state->live().Acquire(state->EntryFor(p), p.config,
                                               options.warmup_steps);
    if (options.backend != Backend::kEager) {
      phase = "compiled fidelity check failed: ";
      prepared.counters.merge(CompiledFidelityPass(instance, *p.entry));
    }
    if (!options.op_coverage_file.empty()) {
      phase = "op coverage failed: ";
      prepared.counters.merge(
          CoveragePass(instance, p.name, options.op_coverage_file));
    }
    if (options.count_ops) {
      phase = "counting ops failed: ";
      prepared.counters.merge(OpCountPass(instance));
    }
    if (options.count_flops) {
      phase = "counting FLOPs failed: ";
      prepared.counters.merge(FlopPass(instance, options.peaks, &prepared));
    }
  } catch (const std::exception& e) {
    prepared.error = absl::StrCat(phase, Describe(e));
    prepared.counters.clear();
    state->live().Release();
  }
  return prepared;
}

// ---- Measure ---------------------------------------------------------------

void Fail(benchmark::State& st, RunState* state, const std::string& message) {
  // Releasing after an out-of-memory error gives the next instance the
  // whole device again.
  state->live().Release();
  st.SkipWithError(message.c_str());
}

// The timed loop's memory figures; -1 where unknown.
struct PeakMemory {
  int64_t allocated = -1;    // peak_mem: tensors' bytes.
  int64_t reserved = -1;     // peak_mem_reserved: the caching allocator's.
  int64_t device_used = -1;  // device_memory_used: NVML's, device-wide.
  int64_t host_rss = -1;     // peak_host_rss.
};

void SetCounters(benchmark::State& st, const Instance& instance,
                 Backend backend, const Prepared& prepared,
                 double device_seconds, double wall_seconds,
                 const PeakMemory& memory) {
  const auto iterations = static_cast<double>(st.iterations());
  const double samples =
      iterations * static_cast<double>(instance.config().batch_size);
  // Set directly rather than through SetItemsProcessed, whose rate Google
  // Benchmark may divide by CPU time; this is samples per measured second.
  st.counters["items_per_second"] =
      benchmark::Counter(device_seconds > 0 ? samples / device_seconds : 0);
  // Synchronized host seconds per step, beside the device-event Time.
  st.counters["wall_time"] = benchmark::Counter(wall_seconds / iterations);
  const auto bytes = [](int64_t value) {
    return benchmark::Counter(static_cast<double>(value),
                              benchmark::Counter::kDefaults,
                              benchmark::Counter::OneK::kIs1024);
  };
  if (memory.allocated >= 0) st.counters["peak_mem"] = bytes(memory.allocated);
  if (memory.reserved >= 0) {
    st.counters["peak_mem_reserved"] = bytes(memory.reserved);
  }
  if (memory.device_used >= 0) {
    st.counters["device_memory_used"] = bytes(memory.device_used);
  }
  if (memory.host_rss >= 0)
    st.counters["peak_host_rss"] = bytes(memory.host_rss);
  // A package holds its weights as constants the program cannot count: the
  // port's count, which its tests prove equal to the reference's.
  st.counters["params"] = benchmark::Counter(static_cast<double>(
      backend == Backend::kEager ? instance.counts().parameters
                                 : instance.spec().reference_parameters));
  st.counters["batch_size"] =
      benchmark::Counter(static_cast<double>(instance.config().batch_size));
  for (const auto& [key, value] : prepared.counters) {
    st.counters[key] = benchmark::Counter(value);
  }
  const double step_seconds = device_seconds / iterations;
  // A step without products (pyhpc's, a quantized model's integer ones) has
  // 0 of both: counted, not missing.
  if (prepared.flops >= 0 && step_seconds > 0) {
    st.counters["flop_rate"] =
        benchmark::Counter(prepared.flops / step_seconds);
    st.counters["peak_share"] =
        benchmark::Counter(prepared.seconds_at_peak / step_seconds);
    st.counters["roofline_share"] =
        benchmark::Counter(prepared.seconds_at_roofline / step_seconds);
  }
}

// Google Benchmark's function for the instance: one step per iteration,
// timed between the harness's device synchronizations.
void MeasureSteps(benchmark::State& st, const PlannedInstance& p,
                  const Prepared& prepared, RunState* state) {
  if (Interrupted()) {
    // Not an error of the model: dropped from the results and the journal.
    state->live().Release();
    st.SkipWithError(kInterruptedMessage);
    return;
  }
  if (!prepared.error.empty()) return Fail(st, state, prepared.error);
  Instance* instance = nullptr;
  try {
    instance = &state->live().Acquire(state->EntryFor(p), p.config,
                                      state->options().warmup_steps);
  } catch (const std::exception& e) {
    return Fail(st, state, absl::StrCat("setup failed: ", Describe(e)));
  }
  const c10::Device device = p.config.device;
  StepTimer timer(device);
  ResetPeakMemory(device);
  ResetPeakHostRss();
  torch::Tensor last;
  double device_seconds = 0;
  double wall_seconds = 0;
  try {
    for (auto _ : st) {
      if (Interrupted()) {
        state->live().Release();
        st.SkipWithError(kInterruptedMessage);
        return;
      }
      // Freed before the next step, outside the timed region: kept alive, the
      // previous output counted in every step's peak but the first, so
      // peak_mem depended on how many iterations a repetition ran.
      last = torch::Tensor();
      timer.Start();
      last = instance->Step();
      const StepTime t = timer.Stop();
      st.SetIterationTime(t.seconds);
      device_seconds += t.seconds;
      wall_seconds += t.wall_seconds;
    }
    CheckFinite(last,
                absl::StrCat(p.config.mode == Mode::kTrain ? "loss" : "output",
                             " (", PrecisionName(p.config.precision), ")"));
  } catch (const std::exception& e) {
    return Fail(st, state, Describe(e));
  }
  last = torch::Tensor();
  if (st.iterations() == 0) return;
  // The timed loop's peaks, read before a profiling pass can raise them.
  // NVML's device-wide figure is read once, now: the caching allocator
  // keeps what it reserved while steps run, so it is the loop's peak but for
  // memory that bypasses the allocator and is freed within a step.
  const PeakMemory memory = {.allocated = PeakMemoryBytes(device),
                             .reserved = PeakReservedMemoryBytes(device),
                             .device_used = DeviceMemoryUsedBytes(device),
                             .host_rss = PeakHostRssBytes()};
  const Backend backend = state->options().backend;
  SetCounters(st, *instance, backend, prepared, device_seconds, wall_seconds,
              memory);
  st.SetLabel(Label(*instance, backend, CurrentBackendFlags()));
}

// Keeps what Google Benchmark reports for one instance.
class CollectingReporter : public benchmark::BenchmarkReporter {
 public:
  CollectingReporter() { SetErrorStream(&discarded_); }
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    runs_.insert(runs_.end(), runs.begin(), runs.end());
  }
  std::vector<Run> TakeRuns() { return std::move(runs_); }

 private:
  std::ostringstream discarded_;  // "Failed to match any benchmarks ..."
  std::vector<Run> runs_;
};

// Registers the instance with Google Benchmark and runs exactly it: its
// iterations, repetitions and aggregates, as --benchmark_* flags say.
std::vector<BenchmarkRun> Measure(const PlannedInstance& p,
                                  const Prepared& prepared, RunState* state) {
  benchmark::RegisterBenchmark(p.name.c_str(),
                               [p, prepared, state](benchmark::State& st) {
                                 MeasureSteps(st, p, prepared, state);
                               })
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  CollectingReporter collected;
  benchmark::RunSpecifiedBenchmarks(&collected, ExactBenchmarkFilter(p.name));
  std::vector<BenchmarkRun> runs = collected.TakeRuns();
  if (runs.empty()) {
    runs = ErrorRecord(p.name, "Google Benchmark reported no run").runs;
  }
  return runs;
}

// ---- Profile ---------------------------------------------------------------

// The profiling pass on the still-live instance (rebuilt if a repetition's
// error released it); its per-step counters join every run (stddev and cv
// as 0), or its error replaces them.
void Profile(const PlannedInstance& p, RunState* state,
             std::vector<BenchmarkRun>* runs) {
  const RunOptions& options = state->options();
  Counters counters;
  std::string error;
  try {
    Instance& instance = state->live().Acquire(state->EntryFor(p), p.config,
                                               options.warmup_steps);
    counters = ProfileInstance(instance, p.name,
                               {.steps = options.profile_steps,
                                .trace_dir = options.trace_dir,
                                .record_shapes = options.profile_shapes})
                   .counters;
  } catch (const std::exception& e) {
    error = absl::StrCat("profiling failed: ", Describe(e));
    state->live().Release();
  }
  for (BenchmarkRun& run : *runs) {
    if (!error.empty()) {
      run.error_occurred = true;
      run.error_message = error;
      continue;
    }
    const bool spread =
        run.run_type == BenchmarkRun::RT_Aggregate &&
        (run.aggregate_name == "stddev" || run.aggregate_name == "cv");
    for (const auto& [key, value] : counters) {
      run.counters[key] = benchmark::Counter(spread ? 0 : value);
    }
  }
  if (!error.empty()) state->CountError();
}

bool Errored(const std::vector<BenchmarkRun>& runs) {
  for (const BenchmarkRun& run : runs) {
    if (run.error_occurred && run.error_message != kInterruptedMessage) {
      return true;
    }
  }
  return false;
}

bool Interrupted(const std::vector<BenchmarkRun>& runs) {
  for (const BenchmarkRun& run : runs) {
    if (run.error_message == kInterruptedMessage) return true;
  }
  return false;
}

}  // namespace

RunState::RunState(RunOptions options) : options_(std::move(options)) {
  live_.set_weights_file(options_.weights_file);
}

RunState::~RunState() { live_.Release(); }

const RegisteredModel& RunState::EntryFor(const PlannedInstance& instance) {
  if (options_.backend == Backend::kEager) return *instance.entry;
  std::unique_ptr<RegisteredModel>& entry =
      compiled_[instance.entry->spec.name];
  if (!entry) {
    entry = std::make_unique<RegisteredModel>(CompiledEntry(
        *instance.entry, options_.backend, options_.compiled_dir));
  }
  return *entry;
}

InstanceRecord RunInProcess(const PlannedInstance& instance, RunState* state) {
  const Prepared prepared = Prepare(instance, state);
  InstanceRecord record{instance.name, Measure(instance, prepared, state)};
  if (Errored(record.runs)) {
    state->CountError();
  } else if (state->options().profile_steps > 0 && !Interrupted(record.runs)) {
    Profile(instance, state, &record.runs);
  }
  return record;
}

}  // namespace torchbench
