// File: torchbench/reporter.h
//
// Google Benchmark appends "/manual_time" to the name of every benchmark
// timed with UseManualTime(). TorchBench names are exactly
// <model>/<Train|Eval>/batch_size:<N>, so the harness reports through
// reporters that drop that suffix, for the console and for --benchmark_out
// alike, while honouring Google Benchmark's output flags.
#ifndef TORCHBENCH_REPORTER_H_
#define TORCHBENCH_REPORTER_H_

#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

namespace torchbench {

// Forwards every call to `inner`, with each run's time-type suffix removed.
class ExactNameReporter : public benchmark::BenchmarkReporter {
 public:
  explicit ExactNameReporter(
      std::unique_ptr<benchmark::BenchmarkReporter> inner);
  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& runs) override;
  void Finalize() override;

 private:
  void ShareStreams();
  std::unique_ptr<benchmark::BenchmarkReporter> inner_;
};

// The reporters Google Benchmark would create from --benchmark_format,
// --benchmark_color, --benchmark_counters_tabular and --benchmark_out_format
// (read from argv, which is left unchanged), each wrapped in
// ExactNameReporter. `file` is null when --benchmark_out is not given.
struct Reporters {
  std::unique_ptr<benchmark::BenchmarkReporter> display;
  std::unique_ptr<benchmark::BenchmarkReporter> file;
};
Reporters MakeReporters(int argc, char** argv);

}  // namespace torchbench

#endif  // TORCHBENCH_REPORTER_H_
