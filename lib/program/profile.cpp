#include "program/profile.h"

#include <ATen/record_function.h>
#include <stdlib.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "json.h"
#include "program/atomic_file.h"
#include "torchbench/device.h"

namespace torchbench {
namespace {

namespace ap = torch::autograd::profiler;
namespace pi = torch::profiler::impl;

// libkineto::ActivityType values (stable below 16; the header is not part of
// every LibTorch package, so they are spelled out).
constexpr uint8_t kCpuOp = 0;
constexpr uint8_t kUserAnnotation = 1;
constexpr uint8_t kGpuMemcpy = 3;
constexpr uint8_t kGpuMemset = 4;
constexpr uint8_t kConcurrentKernel = 5;
constexpr uint8_t kCudaRuntime = 7;
constexpr uint8_t kCudaDriver = 8;

constexpr std::string_view kEvaluateFunction =
    "autograd::engine::evaluate_function: ";

TraceEventKind KindOf(const ap::KinetoEvent& e) {
  switch (e.activityType()) {
    case kCpuOp:
      // The engine's per-node wrapper is recorded with the FUNCTION scope of
      // ATen ops; it is backward bookkeeping, not an operator.
      if (e.scope() ==
              static_cast<uint8_t>(at::RecordScope::BACKWARD_FUNCTION) ||
          std::string_view(e.name()).substr(0, kEvaluateFunction.size()) ==
              kEvaluateFunction) {
        return TraceEventKind::kBackwardFunction;
      }
      if (e.scope() == static_cast<uint8_t>(at::RecordScope::USER_SCOPE)) {
        return TraceEventKind::kUserScope;
      }
      return e.scope() == static_cast<uint8_t>(at::RecordScope::FUNCTION)
                 ? TraceEventKind::kAtenOp
                 : TraceEventKind::kOther;
    case kUserAnnotation:
      return TraceEventKind::kUserScope;
    case kGpuMemcpy:
      return TraceEventKind::kMemcpy;
    case kGpuMemset:
      return TraceEventKind::kMemset;
    case kConcurrentKernel:
      return TraceEventKind::kKernel;
    case kCudaRuntime:
    case kCudaDriver:
      return TraceEventKind::kRuntime;
    default:
      return TraceEventKind::kOther;
  }
}

std::vector<TraceEvent> Convert(const std::vector<ap::KinetoEvent>& events) {
  std::vector<TraceEvent> out;
  out.reserve(events.size());
  for (const ap::KinetoEvent& e : events) {
    TraceEvent t;
    t.kind = KindOf(e);
    if (t.kind == TraceEventKind::kOther) continue;
    t.name = e.name();
    t.start_ns = static_cast<int64_t>(e.startNs());
    t.end_ns = static_cast<int64_t>(e.endNs());
    t.thread = e.startThreadId();
    t.stream = e.deviceResourceId();
    t.correlation = e.correlationId();
    t.linked_correlation = e.linkedCorrelationId();
    out.push_back(std::move(t));
  }
  return out;
}

double Ms(double ns) { return ns / 1e6; }
double Us(double ns) { return ns / 1e3; }

// Renamed into place: a run killed mid-write leaves the previous file (or
// none), never a table a reader would take for a whole one.
void WriteFile(const std::filesystem::path& path, const std::string& text) {
  const absl::Status written =
      WriteFileAtomically(path.string(), text, "the profile");
  if (!written.ok()) {
    throw std::runtime_error(absl::StrCat("profile: ", written.message()));
  }
}

// Kineto writes the trace itself, by name (through a "<name>.tmp" of its
// own), and does not report a failed write: the trace goes to a temporary
// name of ours and is renamed into place only once it ends its JSON.
void SaveTrace(ap::ProfilerResult& result, const std::filesystem::path& path) {
  auto file = AtomicFile::Create(path.string());
  if (!file.ok()) {
    throw std::runtime_error(absl::StrCat("profile: writing the trace '",
                                          path.string(),
                                          "': ", file.status().message()));
  }
  result.save(file->temp_path());
  std::ifstream in(file->temp_path(), std::ios::binary | std::ios::ate);
  const std::streamoff size = in ? static_cast<std::streamoff>(in.tellg()) : 0;
  char last = 0;
  for (std::streamoff back = 1; back <= std::min<std::streamoff>(size, 64);
       ++back) {
    in.seekg(size - back);
    in.get(last);
    if (last != '\n' && last != ' ' && last != '\r' && last != '\t') break;
  }
  if (last != '}') {
    // Kineto writes through "<name>.tmp" of its own, left behind when its
    // write fails.
    std::error_code ignored;
    std::filesystem::remove(file->temp_path() + ".tmp", ignored);
    throw std::runtime_error(absl::StrCat(
        "profile: writing the trace '", path.string(), "' through '",
        file->temp_path(),
        "' failed: it does not end its JSON (a full disk or a file-size "
        "limit?)"));
  }
  const absl::Status committed = file->Commit();
  if (!committed.ok()) {
    throw std::runtime_error(
        absl::StrCat("profile: the trace: ", committed.message()));
  }
}

// One table row: three numbers, then the name.
std::string Row(const std::string& name, double a, double b, double c) {
  char line[64];
  std::snprintf(line, sizeof(line), "%10.1f %10.3f %10.3f  ", a, b, c);
  return absl::StrCat(line, name, "\n");
}

}  // namespace

std::string SafeFileName(const std::string& instance_name) {
  std::string s = instance_name;
  for (char& c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  return s;
}

std::map<std::string, double> CountersFromSummary(const TraceSummary& s,
                                                  bool device_is_gpu) {
  std::map<std::string, double> c;
  if (s.steps == 0) return c;
  const double steps = s.steps;
  c["profile_steps"] = steps;
  c["aten_ops_per_step"] = static_cast<double>(s.aten_ops) / steps;
  c["would_sync_per_step"] = static_cast<double>(s.would_sync) / steps;
  // The share of a step in matrix products, convolutions and attention: of
  // the GPU window the device time they launched, on a CPU their host time.
  if (device_is_gpu) {
    double product_ns = 0;
    for (const OpStat& op : s.ops_by_device) {
      if (IsProductOp(op.name)) product_ns += static_cast<double>(op.self_ns);
    }
    if (s.window_ns > 0) {
      c["matmul_conv_share"] = product_ns / static_cast<double>(s.window_ns);
    }
  } else if (s.step_host_ns > 0) {
    c["matmul_conv_share"] = static_cast<double>(s.product_host_ns) /
                             static_cast<double>(s.step_host_ns);
  }
  // Without a GPU there is no window to be idle in, and without device
  // events (CUPTI unavailable) nothing was seen: absent, not zero, so a run
  // never reads as a 0 % busy GPU.
  if (!device_is_gpu || !s.has_device) return c;
  const double window = static_cast<double>(s.window_ns);
  auto pct = [&](double ns) { return window > 0 ? 100.0 * ns / window : 0.0; };
  c["gpu_busy_pct"] = pct(static_cast<double>(s.busy_ns));
  c["gpu_memcpy_pct"] = pct(static_cast<double>(s.memcpy_ns));
  c["gpu_active_pct"] = pct(static_cast<double>(s.busy_ns - s.memcpy_ns));
  c["gpu_idle_pct"] = pct(static_cast<double>(s.idle_ns));
  c["gpu_idle_host_wait_pct"] = pct(s.idle_host_wait_ns);
  c["gpu_idle_kernel_wait_pct"] = pct(s.idle_kernel_wait_ns);
  c["gpu_idle_other_pct"] = pct(s.idle_other_ns);
  c["kernels_per_step"] = static_cast<double>(s.kernel_count) / steps;
  c["memcpy_per_step"] = static_cast<double>(s.memcpy_count) / steps;
  c["syncs_per_step"] = static_cast<double>(s.sync_count) / steps;
  c["kernel_median_us"] = Us(static_cast<double>(s.kernel_median_ns));
  return c;
}

std::string ProfileTable(const std::string& name, const TraceSummary& s,
                         int top_k) {
  std::ostringstream out;
  const double steps = s.steps > 0 ? s.steps : 1;
  out << name << ": " << s.steps << " profiled steps; figures per step\n\n";
  out << "phase        aten ops   host ms (inclusive)"
      << (s.has_device ? "   device ms\n" : "\n");
  const std::pair<const char*, const PhaseStat*> phases[] = {
      {"forward", &s.forward},
      {"backward", &s.backward},
      {"optimizer", &s.optimizer}};
  for (const auto& [label, p] : phases) {
    char line[256];
    std::snprintf(line, sizeof(line), "%-10s %10.1f %21.3f", label,
                  static_cast<double>(p->ops) / steps,
                  Ms(static_cast<double>(p->host_ns)) / steps);
    out << line;
    if (s.has_device) {
      std::snprintf(line, sizeof(line), " %11.3f",
                    Ms(static_cast<double>(p->device_ns)) / steps);
      out << line;
    }
    out << "\n";
  }
  out << "\ntop ops by self host time\n"
         "     calls    self ms   total ms  op\n";
  int shown = 0;
  for (const OpStat& r : s.ops_by_host) {
    if (shown++ == top_k) break;
    out << Row(r.name, r.calls / steps,
               Ms(static_cast<double>(r.self_ns)) / steps,
               Ms(static_cast<double>(r.total_ns)) / steps);
  }
  if (s.has_device) {
    // Device tables: launches (or kernels), device ms, mean us per launch.
    auto device_table = [&](const char* header,
                            const std::vector<OpStat>& rows) {
      out << header;
      int n = 0;
      for (const OpStat& r : rows) {
        if (n++ == top_k) break;
        out << Row(
            r.name, r.calls / steps, Ms(static_cast<double>(r.self_ns)) / steps,
            r.calls > 0 ? Us(static_cast<double>(r.self_ns)) / r.calls : 0.0);
      }
    };
    device_table(
        "\ntop ops by device time (kernels they launched)\n"
        "  launches  device ms    mean us  op\n",
        s.ops_by_device);
    device_table(
        "\ntop kernels\n"
        "     count  device ms    mean us  kernel\n",
        s.kernels);
  }
  return out.str();
}

std::string ProfileJson(const std::string& name, const TraceSummary& s,
                        const std::map<std::string, double>& counters,
                        int top_k) {
  using json::Number;
  using json::Quote;
  const double steps = s.steps > 0 ? s.steps : 1;
  std::ostringstream out;
  out << "{\n  \"name\": " << Quote(name) << ",\n  \"steps\": " << s.steps
      << ",\n  \"per_step\": true,\n  \"counters\": {";
  bool first = true;
  for (const auto& [key, value] : counters) {
    out << (first ? "" : ", ") << Quote(key) << ": " << Number(value);
    first = false;
  }
  out << "},\n  \"phases\": {";
  const std::pair<const char*, const PhaseStat*> phases[] = {
      {"forward", &s.forward},
      {"backward", &s.backward},
      {"optimizer", &s.optimizer}};
  first = true;
  for (const auto& [label, p] : phases) {
    out << (first ? "" : ", ") << Quote(label)
        << ": {\"aten_ops\": " << Number(static_cast<double>(p->ops) / steps)
        << ", \"host_ms\": "
        << Number(Ms(static_cast<double>(p->host_ns)) / steps)
        << ", \"device_ms\": "
        << Number(Ms(static_cast<double>(p->device_ns)) / steps) << "}";
    first = false;
  }
  out << "}";
  auto table = [&](const char* key, const std::vector<OpStat>& rows,
                   const char* time_key, int limit) {
    out << ",\n  " << Quote(key) << ": [";
    int shown = 0;
    for (const OpStat& r : rows) {
      if (shown == limit) break;
      out << (shown++ ? ",\n    " : "\n    ") << "{\"name\": " << Quote(r.name)
          << ", \"calls\": " << Number(r.calls / steps) << ", \"" << time_key
          << "\": " << Number(Us(static_cast<double>(r.self_ns)) / steps);
      if (r.total_ns > 0) {
        out << ", \"total_host_us\": "
            << Number(Us(static_cast<double>(r.total_ns)) / steps);
      }
      out << "}";
    }
    out << (shown ? "\n  ]" : "]");
  };
  // Every op, not only the top k: a reader looking for the ops only one
  // mode runs needs the other mode's whole list.
  table("top_ops_host", s.ops_by_host, "self_host_us",
        static_cast<int>(s.ops_by_host.size()));
  if (s.has_device) {
    table("top_ops_device", s.ops_by_device, "device_us", top_k);
    table("top_kernels", s.kernels, "device_us", top_k);
  }
  out << "\n}\n";
  return out.str();
}

InstanceProfile ProfileInstance(Instance& instance, const std::string& name,
                                const ProfileOptions& options) {
  const c10::Device device = instance.config().device;
  const bool gpu = device.is_cuda();
  std::set<pi::ActivityType> activities{pi::ActivityType::CPU};
  if (gpu) activities.insert(pi::ActivityType::CUDA);
  // Without a GPU, Kineto logs an ERROR line per pass from probing for one
  // ("gpuGetDeviceCount failed") and two USDT trace-point lines, none of
  // them about the run; level 6 is above both. A user's own
  // KINETO_LOG_LEVEL wins.
  if (!gpu) ::setenv("KINETO_LOG_LEVEL", "6", /*overwrite=*/0);
  const pi::ProfilerConfig config(
      pi::ProfilerState::KINETO,
      /*report_input_shapes=*/options.record_shapes);
  ap::prepareProfiler(config, activities);
  ap::enableProfiler(config, activities);
  std::unique_ptr<ap::ProfilerResult> result;
  try {
    // Outside any ProfilerStep scope, so not analyzed: the first step of a
    // session carries the profiler's start-up (CUPTI's, on a GPU).
    instance.Step();
    SynchronizeDevice(device);
    for (int n = 0; n <= options.steps; ++n) {
      {
        RECORD_USER_SCOPE(absl::StrCat("ProfilerStep#", n).c_str());
        instance.Step();
      }
      SynchronizeDevice(device);
    }
  } catch (...) {
    ap::disableProfiler();
    throw;
  }
  result = ap::disableProfiler();

  InstanceProfile profile;
  profile.summary = AnalyzeTrace(Convert(result->events()), options.steps);
  profile.counters = CountersFromSummary(profile.summary, gpu);
  if (gpu && !profile.summary.has_device) {
    std::fprintf(stderr,
                 "torchbench: %s: the profiler saw no device events (CUPTI "
                 "unavailable?); GPU counters left out\n",
                 name.c_str());
  }
  if (!options.trace_dir.empty()) {
    const std::filesystem::path dir(options.trace_dir);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    const std::string base = SafeFileName(name);
    SaveTrace(*result, dir / (base + ".pt.trace.json"));
    WriteFile(dir / (base + ".profile.txt"),
              ProfileTable(name, profile.summary, options.top_k));
    WriteFile(
        dir / (base + ".profile.json"),
        ProfileJson(name, profile.summary, profile.counters, options.top_k));
  }
  return profile;
}

}  // namespace torchbench
