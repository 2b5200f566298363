#include "program/journal.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
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

// What a journal file holds, byte for byte.
std::string JournalBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

InstanceRecord Record(const std::string& instance) {
  BenchmarkRun run = MakeRun(instance, 0);
  run.family_index = 0;  // Google Benchmark leaves them uninitialised.
  run.per_family_instance_index = 0;
  // The tokens JSON lacks, so that cuts inside them are covered too.
  run.counters["nan"] =
      benchmark::Counter(std::numeric_limits<double>::quiet_NaN());
  run.counters["inf"] =
      benchmark::Counter(-std::numeric_limits<double>::infinity());
  return {instance, {run}};
}

std::vector<std::string> Instances(const JournalContents& contents) {
  std::vector<std::string> names;
  for (const auto& r : contents.records) names.push_back(r.instance);
  return names;
}

std::string WriteJournalOf(const std::string& path,
                           const std::vector<std::string>& instances) {
  std::remove(path.c_str());
  {
    auto writer = JournalWriter::Open(path, {{"seed", "1337"}});
    EXPECT_TRUE(writer.ok()) << writer.status();
    for (const auto& name : instances) {
      EXPECT_TRUE((*writer)->Append(Record(name)).ok());
    }
  }
  return JournalBytes(path);
}

// The sequence: a journal of two cut 200 bytes short, resumed, and
// resumed again; the second resume used to refuse the glued line.
TEST(JournalTest, ATornTailIsCutBeforeAppending) {
  const std::string path = ::testing::TempDir() + "/torn_tail.jsonl";
  const std::string whole =
      WriteJournalOf(path, {"a/Eval/batch_size:1", "b/Eval/batch_size:1"});
  std::filesystem::resize_file(path, whole.size() - 200);
  auto read = ReadJournal(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(Instances(*read),
            (std::vector<std::string>{"a/Eval/batch_size:1"}));
  EXPECT_NE(read->warning.find("line 3 was cut short"), std::string::npos)
      << read->warning;
  EXPECT_NE(read->warning.find("of the record of b/Eval/batch_size:1"),
            std::string::npos)
      << read->warning;
  {
    auto writer = JournalWriter::Open(path, {{"seed", "1337"}});
    ASSERT_TRUE(writer.ok()) << writer.status();
    const size_t torn = whole.find("{\"instance\": \"b/");
    EXPECT_EQ((*writer)->repair_note(),
              "journal '" + path + "': cut off its last " +
                  std::to_string(whole.size() - 200 - torn) +
                  " bytes of the record of b/Eval/batch_size:1, a line cut "
                  "short when the run writing it died; that instance runs "
                  "again");
    ASSERT_TRUE((*writer)->Append(Record("b/Eval/batch_size:1")).ok());
    ASSERT_TRUE((*writer)->Append(Record("c/Eval/batch_size:1")).ok());
  }
  read = ReadJournal(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->warning, "");
  EXPECT_EQ(Instances(*read), (std::vector<std::string>{
                                  "a/Eval/batch_size:1", "b/Eval/batch_size:1",
                                  "c/Eval/batch_size:1"}));
  EXPECT_EQ(JournalBytes(path),
            whole + RecordToJson(Record("c/Eval/batch_size:1")) + "\n");
  std::remove(path.c_str());
}

// Wherever a writer dies, the next one leaves a journal that reads back
// with every whole record before the cut and its own after it.
TEST(JournalTest, EveryCutIsRepairedByTheNextWriter) {
  const std::string path = ::testing::TempDir() + "/every_cut.jsonl";
  const std::vector<std::string> names = {
      "a/Eval/batch_size:1", "b/Eval/batch_size:1", "c/Eval/batch_size:1"};
  const std::string whole = WriteJournalOf(path, names);
  for (size_t cut = 0; cut <= whole.size(); ++cut) {
    {
      std::ofstream(path, std::ios::binary | std::ios::trunc)
          << whole.substr(0, cut);
    }
    // What a resumed run reads first.
    if (cut > 0) {
      auto before = ReadJournal(path);
      ASSERT_TRUE(before.ok()) << "cut at " << cut << ": " << before.status();
    }
    {
      auto writer = JournalWriter::Open(path, {{"seed", "1337"}});
      ASSERT_TRUE(writer.ok()) << writer.status();
      ASSERT_TRUE((*writer)->Append(Record("z/Eval/batch_size:1")).ok());
    }
    auto read = ReadJournal(path);
    ASSERT_TRUE(read.ok()) << "cut at " << cut << ": " << read.status();
    EXPECT_EQ(read->warning, "") << "cut at " << cut;
    EXPECT_EQ(read->context, (ContextPairs{{"seed", "1337"}}));
    // The records whose line (newline included, or the line whole but for
    // it) survived the cut, then z.
    std::vector<std::string> expected;
    size_t line_end = whole.find('\n');  // After the context line.
    for (const auto& name : names) {
      const size_t next = whole.find('\n', line_end + 1);
      if (next <= cut) expected.push_back(name);
      line_end = next;
    }
    expected.push_back("z/Eval/batch_size:1");
    EXPECT_EQ(Instances(*read), expected) << "cut at " << cut;
  }
  std::remove(path.c_str());
}

// Every prefix of a record is a torn line: at the end, in the middle (a
// writer that started a new line after it), or glued to the record a
// writer without the repair appended after it.
TEST(JournalTest, TornLinesAreSkippedAnywhere) {
  const std::string path = ::testing::TempDir() + "/torn_lines.jsonl";
  const std::string head = WriteJournalOf(path, {"a/Eval/batch_size:1"});
  const std::string torn = RecordToJson(Record("t/Eval/batch_size:1"));
  const std::string next = RecordToJson(Record("n/Eval/batch_size:1"));
  for (size_t n = 1; n < torn.size(); ++n) {
    const std::string prefix = torn.substr(0, n);
    for (const std::string& text :
         {head + prefix, head + prefix + "\n" + next + "\n",
          head + prefix + next + "\n"}) {
      std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
      auto read = ReadJournal(path);
      ASSERT_TRUE(read.ok()) << "cut at " << n << ": " << read.status();
      EXPECT_NE(read->warning.find("line 3"), std::string::npos) << n;
      EXPECT_EQ(read->records.front().instance, "a/Eval/batch_size:1");
      const bool has_next = text.size() > head.size() + prefix.size();
      EXPECT_EQ(read->records.size(), has_next ? 2u : 1u) << n;
      if (n > torn.find("\", ")) {  // The instance's name is whole.
        EXPECT_NE(read->warning.find("of the record of t/Eval/batch_size:1"),
                  std::string::npos)
            << read->warning;
      }
    }
  }
  // A whole line that is not a record is still an error.
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      << head << "{\"instance\": \"x\", \"runs\": 3}\n"
      << next << "\n";
  auto read = ReadJournal(path);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("line 3"), std::string::npos)
      << read.status();
  std::remove(path.c_str());
}

TEST(JournalTest, AJournalCutInsideItsContextHoldsNothing) {
  const std::string path = ::testing::TempDir() + "/torn_context.jsonl";
  std::ofstream(path, std::ios::trunc) << "{\"torchbench_journal\": 1, \"con";
  auto read = ReadJournal(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE(read->context.empty());
  EXPECT_TRUE(read->records.empty());
  EXPECT_NE(read->warning.find("line 1"), std::string::npos);
  EXPECT_EQ(JournalMismatch(read->context, {{"seed", "1"}}), "");
  std::remove(path.c_str());
}

TEST(JournalTest, ASecondWriterIsRefused) {
  const std::string path = ::testing::TempDir() + "/two_writers.jsonl";
  std::remove(path.c_str());
  auto first = JournalWriter::Open(path, {{"seed", "1337"}});
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = JournalWriter::Open(path, {{"seed", "1337"}});
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("is being written by another run"),
            std::string::npos)
      << second.status();
  ASSERT_TRUE((*first)->Append(Record("a/Eval/batch_size:1")).ok());
  first->reset();
  auto third = JournalWriter::Open(path, {{"seed", "1337"}});
  EXPECT_TRUE(third.ok()) << third.status();
  std::remove(path.c_str());
}

TEST(JournalTest, AFailedWriteIsTakenBackAndNamed) {
  const std::string path = ::testing::TempDir() + "/full.jsonl";
  const std::string whole = WriteJournalOf(path, {"a/Eval/batch_size:1"});
  auto writer = JournalWriter::Open(path, {{"seed", "1337"}});
  ASSERT_TRUE(writer.ok());  // Open ignores SIGXFSZ: EFBIG is an error.
  rlimit saved{};
  ::getrlimit(RLIMIT_FSIZE, &saved);
  rlimit limit = saved;
  limit.rlim_cur = whole.size() + 100;  // Part of the next record fits.
  ::setrlimit(RLIMIT_FSIZE, &limit);
  const absl::Status failed = (*writer)->Append(Record("b/Eval/batch_size:1"));
  ::setrlimit(RLIMIT_FSIZE, &saved);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.message().find("'" + path + "'"), std::string::npos)
      << failed;
  EXPECT_NE(failed.message().find("b/Eval/batch_size:1"), std::string::npos);
  EXPECT_NE(failed.message().find("(EFBIG)"), std::string::npos) << failed;
  EXPECT_EQ(JournalBytes(path), whole);  // Nothing of b, nothing lost.
  ASSERT_TRUE((*writer)->Append(Record("b/Eval/batch_size:1")).ok());
  writer->reset();
  auto read = ReadJournal(path);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->records.size(), 2u);

  // A full disk while starting one: one message, the file and the errno.
  auto full = JournalWriter::Open("/dev/full", {{"seed", "1337"}});
  ASSERT_FALSE(full.ok());
  EXPECT_NE(full.status().message().find("'/dev/full'"), std::string::npos)
      << full.status();
  EXPECT_NE(full.status().message().find("(ENOSPC)"), std::string::npos)
      << full.status();
  std::remove(path.c_str());
}

TEST(JournalTest, AFailingOutputStreamIsReported) {
  std::ofstream full("/dev/full");
  ASSERT_TRUE(full.is_open());
  ResultsReporter reporter(std::make_unique<benchmark::JSONReporter>(), {});
  reporter.SetOutputStream(&full);
  reporter.SetErrorStream(&full);
  benchmark::BenchmarkReporter::Context context;
  reporter.ReportContext(context);
  reporter.ReportRuns({MakeRun("m/Eval/batch_size:1", 0)});
  reporter.Finalize();
  ASSERT_FALSE(reporter.output_status().ok());
  EXPECT_NE(reporter.output_status().message().find("(ENOSPC)"),
            std::string::npos)
      << reporter.output_status();

  std::ostringstream fine;
  ResultsReporter ok(std::make_unique<benchmark::JSONReporter>(), {});
  ok.SetOutputStream(&fine);
  ok.SetErrorStream(&fine);
  ok.ReportContext(context);
  ok.ReportRuns({MakeRun("m/Eval/batch_size:1", 0)});
  ok.Finalize();
  EXPECT_TRUE(ok.output_status().ok()) << ok.output_status();
}

}  // namespace
}  // namespace torchbench
