// File: program/machine_peak.h
//
// What this machine reaches, measured through the same LibTorch the models
// run on, as the yardstick of --torchbench_flops: matrix-product FLOP/s per
// dtype from a large square GEMM (at::mm: oneDNN/MKL on a CPU, cuBLAS on a
// GPU) at the run's intra-op threads, and memory bandwidth from a large
// tensor copy. These are attainable peaks, not the vendor's nominal ones: a
// step that reaches them is as fast as this LibTorch's best kernel gets.
//
// The peaks are measured once by the program (Plan), or given with
// --torchbench_peaks (so two runs share one yardstick, and an isolated
// child takes its parent's), or taken from a resumed journal's context.
#ifndef TORCHBENCH_PROGRAM_MACHINE_PEAK_H_
#define TORCHBENCH_PROGRAM_MACHINE_PEAK_H_

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "program/flop_counter.h"
#include "program/journal.h"

namespace torchbench {

struct MachinePeaks {
  std::map<c10::ScalarType, double> gemm_flops_per_second;
  double copy_bytes_per_second = 0;  // Bytes read plus bytes written.
  int threads = 0;                   // Intra-op threads they were taken at.
  std::string source;                // measured, flag or journal.
};

// Measures the GEMM peak of each of `dtypes` and the copy bandwidth on
// `device`: each the best of repeated runs over about 0.3 s per size (about
// 0.6 s per dtype and 0.3 s for the copy).
// `allow_tf32`: float32 products on a GPU may use TF32 (the tf32 precision),
// as the instances' will.
MachinePeaks MeasurePeaks(c10::Device device,
                          const std::set<c10::ScalarType>& dtypes,
                          bool allow_tf32 = false);

// "float32=1.23e+11,bfloat16=4.5e+12,copy=2.1e+10,threads=2": the value of
// --torchbench_peaks, and its parser (InvalidArgument saying what is wrong).
std::string PeaksText(const MachinePeaks& peaks);
absl::StatusOr<MachinePeaks> ParsePeaks(const std::string& text);

// The context keys: peak_gemm_<dtype>_flops_per_second,
// peak_copy_bytes_per_second, peak_threads, machine_peaks (PeaksText) and
// machine_peaks_source; and back from a journal's context (nullopt: none).
void AddPeaksContext(const MachinePeaks& peaks, ContextPairs* context);
std::optional<MachinePeaks> PeaksFromContext(const ContextPairs& context);

// Seconds a step with `count`'s FLOPs would take at the GEMM peak of the
// dtype each FLOP ran in (a dtype without a measured peak at float32's).
double SecondsAtPeak(const FlopCount& count, const MachinePeaks& peaks);

// The roofline of a step's products: each call takes at least the longer of
// its FLOPs at its dtype's GEMM peak and its bytes at the copy bandwidth.
// `seconds` sums that over the calls; `memory_bound_seconds` the part of it
// in calls whose bytes are the longer (a matrix-vector product's, a small
// batch's linear layer). Without a bandwidth, FLOPs alone.
struct Roofline {
  double seconds = 0;
  double memory_bound_seconds = 0;
};
Roofline RooflineOf(const FlopCount& count, const MachinePeaks& peaks);

// "float32", "bfloat16", "float16", ... as the context keys spell them.
std::string DtypeName(c10::ScalarType dtype);

}  // namespace torchbench

#endif  // TORCHBENCH_PROGRAM_MACHINE_PEAK_H_
