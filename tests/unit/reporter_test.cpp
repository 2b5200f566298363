#include "torchbench/reporter.h"

#include <gtest/gtest.h>

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
