// File: program/reporter.h
//
// Google Benchmark appends "/manual_time" to the name of every benchmark
// timed with UseManualTime(). TorchBench names are exactly
// <model>/<Train|Eval>/batch_size:<N>, so the harness reports through
// reporters that drop that suffix, for the console and for --benchmark_out
// alike, while honouring Google Benchmark's output flags.
#ifndef TORCHBENCH_PROGRAM_REPORTER_H_
#define TORCHBENCH_PROGRAM_REPORTER_H_

#include <benchmark/benchmark.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace torchbench {

// Says whether a benchmark (by the name it was registered under) is one of
// the harness's; null means every benchmark is.
using OwnsBenchmark = std::function<bool(const std::string& name)>;

// Hands every call to `inner`, which writes to this reporter's streams
// (Google Benchmark sets them after construction, so they are shared on each
// call). A subclass changes the runs on their way by overriding ReportRuns
// and calling ForwardingReporter::ReportRuns with what `inner` should get.
class ForwardingReporter : public benchmark::BenchmarkReporter {
 public:
  explicit ForwardingReporter(
      std::unique_ptr<benchmark::BenchmarkReporter> inner);
  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& runs) override;
  void Finalize() override;

 private:
  void ShareStreams();
  std::unique_ptr<benchmark::BenchmarkReporter> inner_;
};

// Forwards every call to `inner`, with the time-type suffix removed from the
// runs of the benchmarks `owns` accepts (others, e.g. a user's own manually
// timed benchmarks beside TorchBench's, keep Google Benchmark's names).
class ExactNameReporter : public ForwardingReporter {
 public:
  explicit ExactNameReporter(
      std::unique_ptr<benchmark::BenchmarkReporter> inner,
      OwnsBenchmark owns = nullptr);
  void ReportRuns(const std::vector<Run>& runs) override;

 private:
  OwnsBenchmark owns_;
};

// The reporters Google Benchmark would create from --benchmark_format,
// --benchmark_color, --benchmark_counters_tabular and --benchmark_out_format
// (read from argv, which is left unchanged), each wrapped in
// ExactNameReporter with `owns`. `file` is null when --benchmark_out is not
// given.
// Returns the value of --<name>=<value> in argv (the last one wins, as in
// Google Benchmark), "true" for a bare --<name>, or `fallback`.
std::string FlagValue(int argc, char** argv, const std::string& name,
                      const std::string& fallback);

// Removes --<name> and --<name>=... from argv; returns its value as
// FlagValue would ("" when absent).
std::string TakeFlag(int* argc, char** argv, const std::string& name);

// Whether a Google Benchmark boolean flag's value means true.
bool IsTrue(const std::string& value);

struct Reporters {
  std::unique_ptr<benchmark::BenchmarkReporter> display;
  std::unique_ptr<benchmark::BenchmarkReporter> file;
};
// `wrap` (when set) wraps each created reporter inside the ExactNameReporter,
// so it sees the exact names; `is_file` tells the two apart.
using WrapReporter =
    std::function<std::unique_ptr<benchmark::BenchmarkReporter>(
        std::unique_ptr<benchmark::BenchmarkReporter> reporter, bool is_file)>;
Reporters MakeReporters(int argc, char** argv, OwnsBenchmark owns = nullptr,
                        const WrapReporter& wrap = nullptr);

}  // namespace torchbench

#endif  // TORCHBENCH_PROGRAM_REPORTER_H_
