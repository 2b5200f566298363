#include "program/machine_peak.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "torchbench/device.h"

namespace torchbench {
namespace {

constexpr c10::ScalarType kGemmDtypes[] = {
    c10::ScalarType::Float, c10::ScalarType::BFloat16, c10::ScalarType::Half,
    c10::ScalarType::Double};

// The best rate of `run` (which does `work` units each call) over repeated
// calls for at least `budget` seconds and 3 calls, after one untimed call:
// the best, since on a shared machine a slow call is another process's.
double BestRate(c10::Device device, double work,
                const std::function<void()>& run, double budget = 0.3) {
  using Clock = std::chrono::steady_clock;
  run();
  SynchronizeDevice(device);
  double best = 0;
  const auto start = Clock::now();
  for (int i = 0;
       i < 3 ||
       std::chrono::duration<double>(Clock::now() - start).count() < budget;
       ++i) {
    const auto t0 = Clock::now();
    run();
    SynchronizeDevice(device);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (s > 0) best = std::max(best, work / s);
  }
  return best;
}

double GemmPeak(c10::Device device, c10::ScalarType dtype) {
  // Big enough that packing and threading costs fade on a CPU and that a
  // GPU's tensor cores stay busy; two sizes, as the fastest kernel's best
  // size differs by library and cache. The best of both: what this LibTorch
  // reaches.
  const std::vector<int64_t> sizes = device.is_cpu()
                                         ? std::vector<int64_t>{1024, 2048}
                                         : std::vector<int64_t>{4096, 8192};
  const auto options = torch::TensorOptions().device(device).dtype(dtype);
  torch::manual_seed(0);
  double best = 0;
  for (const int64_t n : sizes) {
    const torch::Tensor a = torch::randn({n, n}, options);
    const torch::Tensor b = torch::randn({n, n}, options);
    torch::Tensor c = torch::empty({n, n}, options);
    best = std::max(best, BestRate(device, 2.0 * n * n * n,
                                   [&] { torch::mm_out(c, a, b); }));
  }
  return best;
}

double CopyPeak(c10::Device device) {
  // Far above any last-level cache.
  const int64_t bytes = int64_t{512} << 20;
  const auto options =
      torch::TensorOptions().device(device).dtype(torch::kFloat);
  const torch::Tensor src = torch::ones({bytes / 4}, options);
  torch::Tensor dst = torch::empty({bytes / 4}, options);
  return BestRate(device, 2.0 * static_cast<double>(bytes),
                  [&] { dst.copy_(src); });
}

std::optional<c10::ScalarType> DtypeNamed(const std::string& name) {
  for (c10::ScalarType d : kGemmDtypes) {
    if (DtypeName(d) == name) return d;
  }
  return std::nullopt;
}

}  // namespace

std::string DtypeName(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::Float:
      return "float32";
    case c10::ScalarType::BFloat16:
      return "bfloat16";
    case c10::ScalarType::Half:
      return "float16";
    case c10::ScalarType::Double:
      return "float64";
    default:
      return c10::toString(dtype);
  }
}

MachinePeaks MeasurePeaks(c10::Device device,
                          const std::set<c10::ScalarType>& dtypes,
                          bool allow_tf32) {
  MachinePeaks peaks;
  peaks.source = "measured";
  peaks.threads = at::get_num_threads();
  // A float32 product under --torchbench_precision=tf32 runs on TF32 units:
  // its peak is theirs.
  at::Context& ctx = at::globalContext();
  const bool tf32_before = ctx.allowTF32CuBLAS();
  ctx.setAllowTF32CuBLAS(allow_tf32);
  for (c10::ScalarType dtype : dtypes) {
    peaks.gemm_flops_per_second[dtype] = GemmPeak(device, dtype);
  }
  ctx.setAllowTF32CuBLAS(tf32_before);
  peaks.copy_bytes_per_second = CopyPeak(device);
  return peaks;
}

std::string PeaksText(const MachinePeaks& peaks) {
  std::vector<std::string> parts;
  for (const auto& [dtype, rate] : peaks.gemm_flops_per_second) {
    parts.push_back(
        absl::StrCat(DtypeName(dtype), "=", absl::StrFormat("%.4g", rate)));
  }
  parts.push_back(absl::StrCat(
      "copy=", absl::StrFormat("%.4g", peaks.copy_bytes_per_second)));
  parts.push_back(absl::StrCat("threads=", peaks.threads));
  return absl::StrJoin(parts, ",");
}

absl::StatusOr<MachinePeaks> ParsePeaks(const std::string& text) {
  MachinePeaks peaks;
  peaks.source = "flag";
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    const std::vector<std::string> kv = absl::StrSplit(part, '=');
    double value = 0;
    if (kv.size() != 2 || !absl::SimpleAtod(kv[1], &value) || !(value > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", part, "' is not <name>=<positive number>"));
    }
    if (kv[0] == "copy") {
      peaks.copy_bytes_per_second = value;
    } else if (kv[0] == "threads") {
      peaks.threads = static_cast<int>(value);
    } else if (auto dtype = DtypeNamed(kv[0])) {
      peaks.gemm_flops_per_second[*dtype] = value;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown peak '", kv[0],
          "' (float32, bfloat16, float16, float64, copy or threads)"));
    }
  }
  if (peaks.gemm_flops_per_second.count(c10::ScalarType::Float) == 0) {
    return absl::InvalidArgumentError("float32=<FLOP/s> is required");
  }
  return peaks;
}

void AddPeaksContext(const MachinePeaks& peaks, ContextPairs* context) {
  for (const auto& [dtype, rate] : peaks.gemm_flops_per_second) {
    context->emplace_back(
        absl::StrCat("peak_gemm_", DtypeName(dtype), "_flops_per_second"),
        absl::StrFormat("%.4g", rate));
  }
  context->emplace_back("peak_copy_bytes_per_second",
                        absl::StrFormat("%.4g", peaks.copy_bytes_per_second));
  context->emplace_back("peak_threads", absl::StrCat(peaks.threads));
  context->emplace_back("machine_peaks", PeaksText(peaks));
  context->emplace_back("machine_peaks_source", peaks.source);
}

std::optional<MachinePeaks> PeaksFromContext(const ContextPairs& context) {
  for (const auto& [key, value] : context) {
    if (key != "machine_peaks") continue;
    auto parsed = ParsePeaks(value);
    if (!parsed.ok()) return std::nullopt;
    parsed->source = "journal";
    return *parsed;
  }
  return std::nullopt;
}

Roofline RooflineOf(const FlopCount& count, const MachinePeaks& peaks) {
  const auto& gemm = peaks.gemm_flops_per_second;
  const auto fp32 = gemm.find(c10::ScalarType::Float);
  Roofline roofline;
  for (const ProductCall& call : count.calls) {
    auto it = gemm.find(call.dtype);
    if (it == gemm.end()) it = fp32;
    const double compute = it != gemm.end() && it->second > 0
                               ? static_cast<double>(call.flops) / it->second
                               : 0;
    const double memory =
        peaks.copy_bytes_per_second > 0
            ? static_cast<double>(call.bytes) / peaks.copy_bytes_per_second
            : 0;
    roofline.seconds += std::max(compute, memory);
    if (memory > compute) roofline.memory_bound_seconds += memory;
  }
  return roofline;
}

double SecondsAtPeak(const FlopCount& count, const MachinePeaks& peaks) {
  const auto fp32 = peaks.gemm_flops_per_second.find(c10::ScalarType::Float);
  double seconds = 0;
  for (const auto& [dtype, flops] : count.by_dtype) {
    auto it = peaks.gemm_flops_per_second.find(dtype);
    if (it == peaks.gemm_flops_per_second.end()) it = fp32;
    if (it == peaks.gemm_flops_per_second.end() || it->second <= 0) return 0;
    seconds += static_cast<double>(flops) / it->second;
  }
  return seconds;
}

}  // namespace torchbench
