// File: program/journal.h
//
// Results that an interruption cannot lose. Each finished instance is one
// line of a JSON-lines journal, appended and flushed as the instance ends:
//
//   {"torchbench_journal": 1, "context": {"torchbench_git_commit": ..., ...}}
//   {"instance": "resnet18/Eval/batch_size:1", "runs": [{...}, ...]}
//
// A run is Google Benchmark's BenchmarkReporter::Run with every field its
// reporters print, so a journal replays into the console and JSON reporters
// as if the instances had just run; --torchbench_resume=JOURNAL does exactly
// that for the instances it holds and runs only the others. The same format
// carries an isolated child's result to its parent.
#ifndef TORCHBENCH_PROGRAM_JOURNAL_H_
#define TORCHBENCH_PROGRAM_JOURNAL_H_

#include <benchmark/benchmark.h>

#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace torchbench {

using BenchmarkRun = benchmark::BenchmarkReporter::Run;
using ContextPairs = std::vector<std::pair<std::string, std::string>>;

// The error message of an instance stopped by Ctrl-C: such a run is neither
// reported nor journaled, so a resumed run repeats the instance.
inline constexpr char kInterruptedMessage[] = "interrupted (SIGINT)";

// One instance's runs: its repetitions, then its aggregates (mean, median,
// ...) when there are any.
struct InstanceRecord {
  std::string instance;
  std::vector<BenchmarkRun> runs;
};

// The one run of an instance that never reported (its process died, timed
// out or could not start), every field set: Google Benchmark's Run leaves
// the indices uninitialised.
InstanceRecord ErrorRecord(const std::string& instance, std::string message);

// `run` as one JSON object, and back. RunFromJsonText fails with
// InvalidArgument on anything it did not write.
std::string RunToJson(const BenchmarkRun& run);
std::string RecordToJson(const InstanceRecord& record);
absl::StatusOr<InstanceRecord> RecordFromJson(const std::string& line);

struct JournalContents {
  // Empty when the journal's first line was itself cut short: it holds no
  // record, and any run may take it over (JournalMismatch says "").
  ContextPairs context;
  std::vector<InstanceRecord> records;
  // Set when a line was cut short (a writer died mid-line): which line, how
  // many bytes and whose record they began; those bytes are ignored.
  std::string warning;
};

// Reads a journal. NotFound when `path` does not exist; InvalidArgument
// naming the line for a corrupt one. A line cut short (a prefix of a record:
// its writer died) is only a warning, wherever it is; so is a torn prefix
// glued to a whole record on one line (what a resumed run appended before
// JournalWriter repaired torn tails), whose record is kept. A later record
// of an instance replaces an earlier one.
absl::StatusOr<JournalContents> ReadJournal(const std::string& path);

// Returns "" when a journal written with `journal` may be resumed by a run
// with `current` context, else the keys that differ (the commit, LibTorch,
// device, precision, ...), as one message. An empty `journal` context (a
// journal whose first line was cut short) holds nothing to mix: "".
std::string JournalMismatch(const ContextPairs& journal,
                            const ContextPairs& current);

// Appends records to a journal, each as one line written whole and fsync'd,
// so that a kill, a full disk or a file-size limit leaves whole lines only.
// The writer holds the journal's exclusive lock (flock) while open: a second
// run on the same journal (two resumes, a Slurm array given one journal) is
// refused with one message instead of interleaving with the first.
class JournalWriter {
 public:
  // Opens `path` for appending, creating it. A last line cut short by a
  // writer that died is cut off first (repair_note() says what), so the
  // next record starts a line of its own; the context line is written when
  // the file is new or empty. Errors: the journal is locked by another
  // process (FailedPrecondition), or cannot be opened, repaired or written
  // (one message naming the file and the errno).
  static absl::StatusOr<std::unique_ptr<JournalWriter>> Open(
      const std::string& path, const ContextPairs& context);
  ~JournalWriter();
  JournalWriter(const JournalWriter&) = delete;
  JournalWriter& operator=(const JournalWriter&) = delete;
  // Appends `record` as one line, or nothing: a write that fails part-way
  // (EFBIG, ENOSPC, EIO) is taken back, so the journal still ends with its
  // last whole record. The error names the journal, the instance and errno.
  absl::Status Append(const InstanceRecord& record);
  const std::string& path() const { return path_; }
  // What Open cut off the journal's end ("" when nothing): the bytes and,
  // when they tell, whose record they began.
  const std::string& repair_note() const { return repair_note_; }

 private:
  JournalWriter(int fd, std::string path, bool locked)
      : fd_(fd), path_(std::move(path)), locked_(locked) {}
  int fd_;
  std::string path_;
  bool locked_;
  std::string repair_note_;
};

// Sits between Google Benchmark (or the isolating parent) and a reporter:
// replays resumed records right after the context, drops interrupted runs,
// appends each finished instance to the journal (when given), and applies
// --benchmark_display_aggregates_only / --benchmark_report_aggregates_only
// itself, because the journal needs every repetition whatever is shown.
class ResultsReporter : public benchmark::BenchmarkReporter {
 public:
  struct Options {
    JournalWriter* journal = nullptr;  // Not owned; may be null.
    std::vector<InstanceRecord> replay;
    bool aggregates_only = false;  // For runs with > 1 repetition.
  };
  ResultsReporter(std::unique_ptr<benchmark::BenchmarkReporter> inner,
                  Options options);
  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& runs) override;
  void Finalize() override;

  // Instances reported with an error (interrupted ones excluded) and
  // without.
  int errored() const { return errored_; }
  int finished() const { return finished_; }
  // A journal write that failed (the run goes on; the message is printed).
  const absl::Status& journal_status() const { return journal_status_; }
  // The first failure of the output stream (a --benchmark_out that hit a
  // file-size limit or a full disk), with the errno of the failing write;
  // OK while every byte went out. Checked after each report and at
  // Finalize, which flushes.
  const absl::Status& output_status() const { return output_status_; }

 private:
  void Forward(const std::vector<Run>& runs);
  void Complete();
  void ShareStreams();
  void CheckOutput();
  std::unique_ptr<benchmark::BenchmarkReporter> inner_;
  Options options_;
  // The repetitions of an instance whose aggregates are still to come.
  InstanceRecord pending_;
  int errored_ = 0;
  int finished_ = 0;
  absl::Status journal_status_;
  absl::Status output_status_;
};

}  // namespace torchbench

#endif  // TORCHBENCH_PROGRAM_JOURNAL_H_
