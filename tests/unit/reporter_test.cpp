#include "program/reporter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

namespace torchbench {
namespace {

TEST(ExactNameReporterTest, DropsTheManualTimeSuffix) {
  std::ostringstream out;
  ExactNameReporter reporter(std::make_unique<benchmark::JSONReporter>());
  reporter.SetOutputStream(&out);
  reporter.SetErrorStream(&out);
  benchmark::BenchmarkReporter::Run run;
  run.run_name.function_name = "resnet50/Eval/batch_size:32";
  run.run_name.time_type = "manual_time";
  ASSERT_EQ(run.benchmark_name(), "resnet50/Eval/batch_size:32/manual_time");
  run.iterations = 1;
  run.time_unit = benchmark::kMillisecond;
  reporter.ReportRuns({run});
  reporter.Finalize();
  EXPECT_NE(out.str().find("\"name\": \"resnet50/Eval/batch_size:32\","),
            std::string::npos)
      << out.str();
  EXPECT_EQ(out.str().find("manual_time"), std::string::npos) << out.str();
}

TEST(ExactNameReporterTest, LeavesOtherBenchmarksNamesAlone) {
  std::ostringstream out;
  ExactNameReporter reporter(std::make_unique<benchmark::JSONReporter>(),
                             [](const std::string& name) {
                               return name == "resnet50/Eval/batch_size:1";
                             });
  reporter.SetOutputStream(&out);
  reporter.SetErrorStream(&out);
  benchmark::BenchmarkReporter::Run ours;
  ours.run_name.function_name = "resnet50/Eval/batch_size:1";
  ours.run_name.time_type = "manual_time";
  ours.iterations = 1;
  benchmark::BenchmarkReporter::Run theirs = ours;
  theirs.run_name.function_name = "BM_UsersOwn";
  reporter.ReportRuns({ours, theirs});
  reporter.Finalize();
  EXPECT_NE(out.str().find("\"name\": \"resnet50/Eval/batch_size:1\","),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("\"name\": \"BM_UsersOwn/manual_time\","),
            std::string::npos)
      << out.str();
}

TEST(ExactNameReporterTest, CvOfAnAllZeroCounterIsZeroNotNan) {
  std::ostringstream out;
  ExactNameReporter reporter(std::make_unique<benchmark::JSONReporter>());
  reporter.SetOutputStream(&out);
  reporter.SetErrorStream(&out);
  using Run = benchmark::BenchmarkReporter::Run;
  Run mean;
  mean.run_name.function_name = "alexnet/Eval/batch_size:1";
  mean.run_type = Run::RT_Aggregate;
  mean.iterations = 3;
  mean.aggregate_name = "mean";
  mean.counters["optimizer_ops"] = benchmark::Counter(0);
  mean.counters["aten_ops"] = benchmark::Counter(0);
  Run stddev = mean;
  stddev.aggregate_name = "stddev";
  stddev.counters["aten_ops"] = benchmark::Counter(1);
  Run cv = mean;
  cv.aggregate_name = "cv";
  cv.counters["optimizer_ops"] = benchmark::Counter(std::nan(""));
  // Not all zero (stddev 1): stays NaN, the statistic is undefined.
  cv.counters["aten_ops"] = benchmark::Counter(std::nan(""));
  reporter.ReportRuns({mean, stddev, cv});
  reporter.Finalize();
  const std::string json = out.str();
  const size_t at = json.find("\"aggregate_name\": \"cv\"");
  ASSERT_NE(at, std::string::npos) << json;
  const std::string cv_row = json.substr(at);
  EXPECT_NE(cv_row.find("\"optimizer_ops\": 0.0"), std::string::npos) << json;
  EXPECT_NE(cv_row.find("\"aten_ops\": NaN"), std::string::npos) << json;
}

TEST(MakeReportersTest, FileReporterOnlyWithBenchmarkOut) {
  char arg0[] = "tb";
  char arg1[] = "--benchmark_out=x.json";
  char* with_out[] = {arg0, arg1, nullptr};
  char* without[] = {arg0, nullptr};
  EXPECT_NE(MakeReporters(2, with_out).file, nullptr);
  EXPECT_EQ(MakeReporters(1, without).file, nullptr);
  EXPECT_NE(MakeReporters(1, without).display, nullptr);
}

}  // namespace
}  // namespace torchbench
