#include "program/machine_peak.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>

namespace torchbench {
namespace {

TEST(MachinePeakTest, TextRoundTrips) {
  auto peaks = ParsePeaks("float32=2e11,bfloat16=1.5e12,copy=2.5e10,threads=2");
  ASSERT_TRUE(peaks.ok()) << peaks.status();
  EXPECT_EQ(peaks->source, "flag");
  EXPECT_EQ(peaks->gemm_flops_per_second.at(c10::ScalarType::Float), 2e11);
  EXPECT_EQ(peaks->gemm_flops_per_second.at(c10::ScalarType::BFloat16), 1.5e12);
  EXPECT_EQ(peaks->copy_bytes_per_second, 2.5e10);
  EXPECT_EQ(peaks->threads, 2);
  EXPECT_EQ(PeaksText(*peaks),
            "float32=2e+11,bfloat16=1.5e+12,copy=2.5e+10,threads=2");

  ContextPairs context;
  AddPeaksContext(*peaks, &context);
  const auto back = PeaksFromContext(context);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->source, "journal");
  EXPECT_EQ(PeaksText(*back), PeaksText(*peaks));
  EXPECT_FALSE(PeaksFromContext({{"seed", "1"}}).has_value());
}

TEST(MachinePeakTest, BadTextSaysWhatIsWrong) {
  EXPECT_FALSE(ParsePeaks("").ok());
  EXPECT_FALSE(ParsePeaks("bfloat16=1e12").ok());  // float32 is required
  EXPECT_FALSE(ParsePeaks("float32=-1").ok());
  EXPECT_FALSE(ParsePeaks("float32=fast").ok());
  const auto unknown = ParsePeaks("float32=1e11,int8=1e12");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("int8"), std::string::npos);
}

TEST(MachinePeakTest, SecondsAtPeakDividesEachDtypeByItsOwnPeak) {
  MachinePeaks peaks;
  peaks.gemm_flops_per_second = {{c10::ScalarType::Float, 1e11},
                                 {c10::ScalarType::BFloat16, 1e12}};
  FlopCount count;
  count.by_dtype = {{c10::ScalarType::Float, 200'000'000'000},
                    {c10::ScalarType::BFloat16, 3'000'000'000'000},
                    {c10::ScalarType::Double, 100'000'000'000}};  // as fp32
  EXPECT_DOUBLE_EQ(SecondsAtPeak(count, peaks), 2 + 3 + 1);
}

TEST(MachinePeakTest, RooflineTakesTheLongerOfFlopsAndBytesPerCall) {
  MachinePeaks peaks;
  peaks.gemm_flops_per_second = {{c10::ScalarType::Float, 1e9}};
  peaks.copy_bytes_per_second = 1e8;
  FlopCount count;
  // A large product: 2 s of FLOPs, 1 s of bytes. A matrix-vector one: 0.1 s
  // of FLOPs, 3 s of bytes.
  count.calls = {{c10::ScalarType::Float, 2'000'000'000, 100'000'000},
                 {c10::ScalarType::Float, 100'000'000, 300'000'000}};
  const Roofline roofline = RooflineOf(count, peaks);
  EXPECT_DOUBLE_EQ(roofline.seconds, 2 + 3);
  EXPECT_DOUBLE_EQ(roofline.memory_bound_seconds, 3);
  peaks.copy_bytes_per_second = 0;  // no bandwidth: FLOPs alone
  EXPECT_DOUBLE_EQ(RooflineOf(count, peaks).seconds, 2 + 0.1);
}

// The CPU's nominal peak: cores x frequency x FLOPs per cycle per core for
// the widest units its flags name (two FMA ports), with headroom for turbo:
// an upper bound that a GEMM rate counted twice over would still cross.
double NominalCpuPeak(c10::ScalarType dtype, int threads) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, flags;
  double mhz = 0;
  while (std::getline(cpuinfo, line)) {
    if (flags.empty() && line.rfind("flags", 0) == 0) flags = line + " ";
    if (line.rfind("cpu MHz", 0) == 0) {
      mhz = std::max(mhz, std::stod(line.substr(line.find(':') + 1)));
    }
  }
  const auto has = [&](const char* flag) {
    return flags.find(std::string(" ") + flag + " ") != std::string::npos;
  };
  double per_cycle = has("avx512f") ? 64 : has("fma") ? 32 : 16;
  if (dtype != c10::ScalarType::Float) {
    if (has("amx_bf16") || has("amx_fp16"))
      per_cycle = 2048;
    else if (has("avx512_bf16") || has("avx512_fp16"))
      per_cycle = 128;
  }
  // "cpu MHz" is the current clock on bare metal (low when idle), the
  // nominal one in a VM: never below 3 GHz, and 1.5x for turbo.
  const double ghz = std::max(mhz / 1000, 3.0) * 1.5;
  const int cores = std::min<int>(threads, std::thread::hardware_concurrency());
  return cores * ghz * 1e9 * per_cycle;
}

TEST(MachinePeakTest, MeasuredPeaksArePositiveAndBelowTheNominal) {
  const MachinePeaks peaks = MeasurePeaks(
      c10::kCPU, {c10::ScalarType::Float, c10::ScalarType::BFloat16});
  EXPECT_EQ(peaks.source, "measured");
  EXPECT_EQ(peaks.threads, at::get_num_threads());
  for (const auto& [dtype, rate] : peaks.gemm_flops_per_second) {
    EXPECT_GT(rate, 0) << DtypeName(dtype);
    EXPECT_LT(rate, NominalCpuPeak(dtype, peaks.threads)) << DtypeName(dtype);
  }
  EXPECT_EQ(peaks.gemm_flops_per_second.size(), 2u);
  // Above a slow disk's, below any memory system's of this decade.
  EXPECT_GT(peaks.copy_bytes_per_second, 1e8);
  EXPECT_LT(peaks.copy_bytes_per_second, 2e12);
}

}  // namespace
}  // namespace torchbench
