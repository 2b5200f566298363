#include "program/journal.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

namespace torchbench {
namespace {

BenchmarkRun MakeRun(const std::string& name, int64_t rep) {
  BenchmarkRun run;
  run.run_name.function_name = name;
  run.iterations = 42;
  run.repetitions = 3;
  run.repetition_index = rep;
  run.time_unit = benchmark::kMillisecond;
  run.real_accumulated_time = 0.125 + static_cast<double>(rep);
  run.cpu_accumulated_time = 0.1;
  run.report_label = "precision:fp32 \"quoted\"";
  run.counters["peak_mem"] = benchmark::Counter(
      1024.0, benchmark::Counter::kDefaults, benchmark::Counter::kIs1024);
  run.counters["items_per_second"] = benchmark::Counter(1.0 / 3.0);
  return run;
}

TEST(JournalTest, RecordsRoundTripEveryReportedField) {
  InstanceRecord record{"m/Eval/batch_size:1",
                        {MakeRun("m/Eval/batch_size:1", 0)}};
  BenchmarkRun cv = MakeRun("m/Eval/batch_size:1", 0);
  cv.run_type = BenchmarkRun::RT_Aggregate;
  cv.aggregate_name = "cv";
  cv.aggregate_unit = benchmark::kPercentage;
  cv.counters["params"] = benchmark::Counter(std::nan(""));
  record.runs.push_back(cv);
  BenchmarkRun error = MakeRun("m/Eval/batch_size:1", 1);
  error.error_occurred = true;
  error.error_message = "crashed: signal 11\n(SIGSEGV)";
  record.runs.push_back(error);

  auto back = RecordFromJson(RecordToJson(record));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->runs.size(), 3u);
  EXPECT_EQ(back->instance, record.instance);
  for (size_t i = 0; i < 3; ++i) {
    const BenchmarkRun& a = record.runs[i];
    const BenchmarkRun& b = back->runs[i];
    EXPECT_EQ(b.benchmark_name(), a.benchmark_name());
    EXPECT_EQ(b.run_type, a.run_type);
    EXPECT_EQ(b.aggregate_unit, a.aggregate_unit);
    EXPECT_EQ(b.report_label, a.report_label);
    EXPECT_EQ(b.error_occurred, a.error_occurred);
    EXPECT_EQ(b.error_message, a.error_message);
    EXPECT_EQ(b.iterations, a.iterations);
    EXPECT_EQ(b.repetition_index, a.repetition_index);
    EXPECT_EQ(b.time_unit, a.time_unit);
    EXPECT_EQ(b.real_accumulated_time, a.real_accumulated_time);  // Exact.
    EXPECT_EQ(b.counters.at("peak_mem").oneK, benchmark::Counter::kIs1024);
    EXPECT_EQ(b.counters.at("items_per_second").value, 1.0 / 3.0);
  }
  EXPECT_TRUE(std::isnan(back->runs[1].counters.at("params").value));
}

// Non-finite doubles are written as Google Benchmark writes them (bare NaN,
// Infinity, -Infinity: not JSON) and read back; the same text inside a
// string stays text.
TEST(JournalTest, NonFiniteValuesRoundTripAsGoogleBenchmarkWritesThem) {
  BenchmarkRun run = MakeRun("m/Eval/batch_size:1", 0);
  run.report_label = "NaN Infinity -Infinity";
  run.real_accumulated_time = std::numeric_limits<double>::infinity();
  run.counters["nan"] = benchmark::Counter(std::nan(""));
  run.counters["neg_inf"] =
      benchmark::Counter(-std::numeric_limits<double>::infinity());
  const std::string line = RecordToJson({"m/Eval/batch_size:1", {run}});
  EXPECT_NE(line.find("\"real_accumulated_time\": Infinity,"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("\"nan\": [NaN, "), std::string::npos) << line;
  EXPECT_NE(line.find("\"neg_inf\": [-Infinity, "), std::string::npos) << line;
  auto back = RecordFromJson(line);
  ASSERT_TRUE(back.ok()) << back.status();
  const BenchmarkRun& b = back->runs.at(0);
  EXPECT_EQ(b.report_label, run.report_label);
  EXPECT_EQ(b.real_accumulated_time, std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(b.counters.at("nan").value));
  EXPECT_EQ(b.counters.at("neg_inf").value,
            -std::numeric_limits<double>::infinity());
  EXPECT_EQ(b.counters.at("items_per_second").value, 1.0 / 3.0);
}

TEST(JournalTest, ErrorRecordSetsEveryIndex) {
  const InstanceRecord record = ErrorRecord("m/Eval/batch_size:1", "boom");
  ASSERT_EQ(record.runs.size(), 1u);
  const BenchmarkRun& run = record.runs[0];
  EXPECT_TRUE(run.error_occurred);
  EXPECT_EQ(run.error_message, "boom");
  EXPECT_EQ(run.repetition_index, 0);
  EXPECT_EQ(run.repetitions, 1);
  EXPECT_EQ(run.family_index, 0);
  EXPECT_EQ(run.per_family_instance_index, 0);
  auto back = RecordFromJson(RecordToJson(record));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->runs[0].repetition_index, 0);
}

TEST(JournalTest, ToleratesACutLastLineButNotACorruptMiddle) {
  const std::string path = ::testing::TempDir() + "/journal.jsonl";
  std::remove(path.c_str());
  {
    auto writer = JournalWriter::Open(path, {{"seed", "1337"}});
    ASSERT_TRUE(writer.ok()) << writer.status();
    ASSERT_TRUE((*writer)
                    ->Append({"a/Eval/batch_size:1",
                              {MakeRun("a/Eval/batch_size:1", 0)}})
                    .ok());
    ASSERT_TRUE((*writer)
                    ->Append({"b/Eval/batch_size:1",
                              {MakeRun("b/Eval/batch_size:1", 0)}})
                    .ok());
    // A rerun of a replaces the first record.
    ASSERT_TRUE((*writer)
                    ->Append({"a/Eval/batch_size:1",
                              {MakeRun("a/Eval/batch_size:1", 2)}})
                    .ok());
  }
  const std::string cut = RecordToJson(
      {"c/Eval/batch_size:1", {MakeRun("c/Eval/batch_size:1", 0)}});
  std::ofstream(path, std::ios::app) << cut.substr(0, cut.size() / 2);
  auto journal = ReadJournal(path);
  ASSERT_TRUE(journal.ok()) << journal.status();
  EXPECT_EQ(journal->context, (ContextPairs{{"seed", "1337"}}));
  ASSERT_EQ(journal->records.size(), 2u);
  EXPECT_EQ(journal->records[0].runs[0].repetition_index, 2);
  EXPECT_NE(journal->warning.find("cut short"), std::string::npos);

  std::ofstream(path, std::ios::app) << "\n{\"instance\": 1}\n";
  EXPECT_FALSE(ReadJournal(path).ok());
  std::ofstream(path) << "{\"not\": \"a journal\"}\n";
  EXPECT_FALSE(ReadJournal(path).ok());
  EXPECT_TRUE(absl::IsNotFound(ReadJournal(path + ".missing").status()));
  std::remove(path.c_str());
}

TEST(JournalTest, MismatchNamesWhatDiffers) {
  const ContextPairs a = {
      {"torchbench_git_commit", "abc"}, {"seed", "1"}, {"host_name", "x"}};
  ContextPairs b = a;
  EXPECT_EQ(JournalMismatch(a, b), "");
  b[2].second = "y";  // Another host may resume (a requeued Slurm task).
  EXPECT_EQ(JournalMismatch(a, b), "");
  b[0].second = "def";
  EXPECT_EQ(JournalMismatch(a, b), "torchbench_git_commit abc vs def");
}

// Reporter that records what reaches it.
class Recorder : public benchmark::BenchmarkReporter {
 public:
  explicit Recorder(std::vector<std::string>* names) : names_(names) {}
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& r : runs) names_->push_back(r.benchmark_name());
  }

 private:
  std::vector<std::string>* names_;
};

TEST(JournalTest, ResultsReporterJournalsWholeInstancesAndDropsInterrupted) {
  const std::string path = ::testing::TempDir() + "/results.jsonl";
  std::remove(path.c_str());
  auto writer = JournalWriter::Open(path, {});
  ASSERT_TRUE(writer.ok());
  std::vector<std::string> shown;
  ResultsReporter reporter(
      std::make_unique<Recorder>(&shown),
      {.journal = writer->get(),
       .replay = {{"r/Eval/batch_size:1", {MakeRun("r/Eval/batch_size:1", 0)}}},
       .aggregates_only = true});
  benchmark::BenchmarkReporter::Context context;
  reporter.ReportContext(context);
  std::vector<BenchmarkRun> reps = {MakeRun("m/Eval/batch_size:1", 0),
                                    MakeRun("m/Eval/batch_size:1", 1),
                                    MakeRun("m/Eval/batch_size:1", 2)};
  reporter.ReportRuns(reps);
  BenchmarkRun mean = reps[0];
  mean.run_type = BenchmarkRun::RT_Aggregate;
  mean.aggregate_name = "mean";
  reporter.ReportRuns({mean});
  BenchmarkRun stopped = MakeRun("s/Eval/batch_size:1", 0);
  stopped.error_occurred = true;
  stopped.error_message = kInterruptedMessage;
  reporter.ReportRuns({stopped});
  reporter.Finalize();
  // Shown: the replayed run (one repetition of three, hidden: aggregates
  // only) ... and m's mean only.
  EXPECT_EQ(shown, (std::vector<std::string>{"m/Eval/batch_size:1_mean"}));
  EXPECT_EQ(reporter.finished(), 1);
  auto journal = ReadJournal(path);
  ASSERT_TRUE(journal.ok());
  ASSERT_EQ(journal->records.size(), 1u);          // Not the replay, not s.
  EXPECT_EQ(journal->records[0].runs.size(), 4u);  // 3 repetitions + mean.
  std::remove(path.c_str());
}

}  // namespace
}  // namespace torchbench
