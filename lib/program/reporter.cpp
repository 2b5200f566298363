#include "program/reporter.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <string>

namespace torchbench {

std::string FlagValue(int argc, char** argv, const std::string& name,
                      const std::string& fallback) {
  std::string value = fallback;
  const std::string bare = "--" + name;
  const std::string prefix = bare + "=";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == bare) value = "true";
    if (arg.rfind(prefix, 0) == 0) value = arg.substr(prefix.size());
  }
  return value;
}

std::string TakeFlag(int* argc, char** argv, const std::string& name) {
  const std::string value = FlagValue(*argc, argv, name, "");
  int kept = 1;
  for (int i = 1; i < *argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--" + name || arg.rfind("--" + name + "=", 0) == 0) continue;
    argv[kept++] = argv[i];
  }
  *argc = kept;
  argv[kept] = nullptr;
  return value;
}

bool IsTrue(const std::string& v) {
  return v == "true" || v == "yes" || v == "1" || v == "on";
}

namespace {

std::unique_ptr<benchmark::BenchmarkReporter> Create(const std::string& format,
                                                     bool color, bool tabular) {
  if (format == "json") return std::make_unique<benchmark::JSONReporter>();
  if (format == "csv") {
    // Deprecated upstream but still a --benchmark_format value; keep it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    return std::make_unique<benchmark::CSVReporter>();
#pragma GCC diagnostic pop
  }
  int options = benchmark::ConsoleReporter::OO_None;
  if (color) options |= benchmark::ConsoleReporter::OO_Color;
  if (tabular) options |= benchmark::ConsoleReporter::OO_Tabular;
  return std::make_unique<benchmark::ConsoleReporter>(
      static_cast<benchmark::ConsoleReporter::OutputOptions>(options));
}

// Google Benchmark's cv of a counter that is 0 in every repetition (e.g.
// optimizer_ops in Eval) is 0/0, written as a bare NaN that strict JSON
// parsers reject. With a mean and a standard deviation of 0 the variation is
// 0; any other NaN is left as it is.
void ZeroTheCvOfAllZeroCounters(
    std::vector<benchmark::BenchmarkReporter::Run>* runs) {
  using Run = benchmark::BenchmarkReporter::Run;
  auto is_zero = [&](const Run& cv, const std::string& counter,
                     const char* aggregate) {
    for (const Run& r : *runs) {
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name == aggregate &&
          r.run_name.str() == cv.run_name.str()) {
        auto it = r.counters.find(counter);
        return it != r.counters.end() && it->second.value == 0;
      }
    }
    return false;
  };
  for (Run& cv : *runs) {
    if (cv.run_type != Run::RT_Aggregate || cv.aggregate_name != "cv") continue;
    for (auto& [name, counter] : cv.counters) {
      if (std::isnan(counter.value) && is_zero(cv, name, "mean") &&
          is_zero(cv, name, "stddev")) {
        counter.value = 0;
      }
    }
  }
}

}  // namespace

ForwardingReporter::ForwardingReporter(
    std::unique_ptr<benchmark::BenchmarkReporter> inner)
    : inner_(std::move(inner)) {}

void ForwardingReporter::ShareStreams() {
  // Google Benchmark points this reporter's streams at stdout or the
  // --benchmark_out file; the inner reporter writes there too.
  inner_->SetOutputStream(&GetOutputStream());
  inner_->SetErrorStream(&GetErrorStream());
}

bool ForwardingReporter::ReportContext(const Context& context) {
  ShareStreams();
  return inner_->ReportContext(context);
}

void ForwardingReporter::ReportRuns(const std::vector<Run>& runs) {
  ShareStreams();
  inner_->ReportRuns(runs);
}

void ForwardingReporter::Finalize() {
  ShareStreams();
  inner_->Finalize();
}

ExactNameReporter::ExactNameReporter(
    std::unique_ptr<benchmark::BenchmarkReporter> inner, OwnsBenchmark owns)
    : ForwardingReporter(std::move(inner)), owns_(std::move(owns)) {}

void ExactNameReporter::ReportRuns(const std::vector<Run>& runs) {
  std::vector<Run> renamed = runs;
  for (Run& run : renamed) {
    if (!owns_ || owns_(run.run_name.function_name)) {
      run.run_name.time_type.clear();
    }
  }
  ZeroTheCvOfAllZeroCounters(&renamed);
  ForwardingReporter::ReportRuns(renamed);
}

Reporters MakeReporters(int argc, char** argv, OwnsBenchmark owns,
                        const WrapReporter& wrap) {
  auto wrapped = [&](std::unique_ptr<benchmark::BenchmarkReporter> r,
                     bool is_file) {
    return wrap ? wrap(std::move(r), is_file) : std::move(r);
  };
  const std::string color_flag =
      FlagValue(argc, argv, "benchmark_color", "auto");
  const bool color =
      color_flag == "auto" ? isatty(fileno(stdout)) != 0 : IsTrue(color_flag);
  const bool tabular =
      IsTrue(FlagValue(argc, argv, "benchmark_counters_tabular", "false"));
  Reporters reporters;
  reporters.display = std::make_unique<ExactNameReporter>(
      wrapped(Create(FlagValue(argc, argv, "benchmark_format", "console"),
                     color, tabular),
              /*is_file=*/false),
      owns);
  if (!FlagValue(argc, argv, "benchmark_out", "").empty()) {
    reporters.file = std::make_unique<ExactNameReporter>(
        wrapped(Create(FlagValue(argc, argv, "benchmark_out_format", "json"),
                       /*color=*/false, tabular),
                /*is_file=*/true),
        std::move(owns));
  }
  return reporters;
}

}  // namespace torchbench
