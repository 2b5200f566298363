#include "program/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "json.h"
#include "program/atomic_file.h"

namespace torchbench {
namespace {

// Lines are read with json::Parse: RunToJson writes NaN and infinite
// doubles as Google Benchmark does (the bare tokens NaN, Infinity,
// -Infinity), which JSON lacks but json::Parse reads.
using Json = nlohmann::ordered_json;
using json::NumberOr;
using json::Quote;
using json::StringOr;

const char* UnitName(benchmark::TimeUnit unit) {
  return benchmark::GetTimeUnitString(unit);
}

bool ParseUnit(const std::string& text, benchmark::TimeUnit* unit) {
  for (auto u : {benchmark::kNanosecond, benchmark::kMicrosecond,
                 benchmark::kMillisecond, benchmark::kSecond}) {
    if (text == UnitName(u)) {
      *unit = u;
      return true;
    }
  }
  return false;
}

absl::StatusOr<BenchmarkRun> RunFromJson(const Json& j) {
  auto bad = [](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat("run: ", what));
  };
  if (!j.is_object()) return bad("not an object");
  BenchmarkRun run;
  run.run_name.function_name = StringOr(j, "run_name", "");
  if (run.run_name.function_name.empty()) return bad("no run_name");
  const std::string type = StringOr(j, "run_type", "iteration");
  if (type != "iteration" && type != "aggregate") return bad("bad run_type");
  run.run_type = type == "aggregate" ? BenchmarkRun::RT_Aggregate
                                     : BenchmarkRun::RT_Iteration;
  run.aggregate_name = StringOr(j, "aggregate_name", "");
  run.aggregate_unit = StringOr(j, "aggregate_unit", "time") == "percentage"
                           ? benchmark::kPercentage
                           : benchmark::kTime;
  run.report_label = StringOr(j, "label", "");
  const auto error = j.find("error_occurred");
  run.error_occurred =
      error != j.end() && error->is_boolean() && error->get<bool>();
  run.error_message = StringOr(j, "error_message", "");
  run.family_index = static_cast<int64_t>(NumberOr(j, "family_index", 0));
  run.per_family_instance_index =
      static_cast<int64_t>(NumberOr(j, "per_family_instance_index", 0));
  run.iterations =
      static_cast<benchmark::IterationCount>(NumberOr(j, "iterations", 0));
  run.threads = static_cast<int64_t>(NumberOr(j, "threads", 1));
  run.repetition_index = static_cast<int64_t>(
      NumberOr(j, "repetition_index", BenchmarkRun::no_repetition_index));
  run.repetitions = static_cast<int64_t>(NumberOr(j, "repetitions", 1));
  if (!ParseUnit(StringOr(j, "time_unit", "ms"), &run.time_unit)) {
    return bad("bad time_unit");
  }
  run.real_accumulated_time = NumberOr(j, "real_accumulated_time", 0);
  run.cpu_accumulated_time = NumberOr(j, "cpu_accumulated_time", 0);
  if (const auto counters = j.find("counters"); counters != j.end()) {
    if (!counters->is_object()) return bad("counters not an object");
    for (const auto& [name, c] : counters->items()) {
      if (!c.is_array() || c.size() != 3) {
        return bad(absl::StrCat("counter ", name, " is not [value, flags, k]"));
      }
      auto number = [&c](size_t i) {
        return c[i].is_number() ? c[i].get<double>() : 0.0;
      };
      run.counters[name] = benchmark::Counter(
          number(0), static_cast<benchmark::Counter::Flags>(number(1)),
          number(2) == 1024 ? benchmark::Counter::kIs1024
                            : benchmark::Counter::kIs1000);
    }
  }
  return run;
}

bool IsTruncation(const absl::Status& status, const std::string& line) {
  // A writer killed mid-line leaves a prefix of a valid line: the parser
  // runs off its end, or stops at a token cut in two ("Infin").
  return !line.empty() && absl::StrContains(status.message(), "invalid JSON") &&
         (line.back() != '}' ||
          absl::StrContains(status.message(), "end of input"));
}

constexpr char kRecordStart[] = "{\"instance\": \"";

// Whose record torn bytes began, when they got that far.
std::string InstanceOf(absl::string_view torn) {
  if (!absl::StartsWith(torn, kRecordStart)) return "";
  torn.remove_prefix(sizeof(kRecordStart) - 1);
  const size_t end = torn.find('"');
  return end == absl::string_view::npos ? "" : std::string(torn.substr(0, end));
}

std::string TornBytes(size_t bytes, absl::string_view torn) {
  const std::string instance = InstanceOf(torn);
  return instance.empty()
             ? absl::StrCat(bytes, " bytes")
             : absl::StrCat(bytes, " bytes of the record of ", instance);
}

}  // namespace

InstanceRecord ErrorRecord(const std::string& instance, std::string message) {
  BenchmarkRun run;
  run.run_name.function_name = instance;
  run.family_index = 0;
  run.per_family_instance_index = 0;
  run.error_occurred = true;
  run.error_message = std::move(message);
  run.iterations = 0;
  run.repetition_index = 0;
  run.repetitions = 1;
  run.time_unit = benchmark::kMillisecond;
  run.statistics = nullptr;
  return InstanceRecord{instance, {std::move(run)}};
}

std::string RunToJson(const BenchmarkRun& run) {
  std::string out = absl::StrCat(
      "{\"run_name\": ", Quote(run.run_name.str()), ", \"run_type\": \"",
      run.run_type == BenchmarkRun::RT_Aggregate ? "aggregate" : "iteration",
      "\"");
  if (run.run_type == BenchmarkRun::RT_Aggregate) {
    absl::StrAppend(
        &out, ", \"aggregate_name\": ", Quote(run.aggregate_name),
        ", \"aggregate_unit\": \"",
        run.aggregate_unit == benchmark::kPercentage ? "percentage" : "time",
        "\"");
  }
  if (!run.report_label.empty()) {
    absl::StrAppend(&out, ", \"label\": ", Quote(run.report_label));
  }
  if (run.error_occurred) {
    absl::StrAppend(&out, ", \"error_occurred\": true, \"error_message\": ",
                    Quote(run.error_message));
  }
  absl::StrAppend(
      &out, ", \"family_index\": ", run.family_index,
      ", \"per_family_instance_index\": ", run.per_family_instance_index,
      ", \"iterations\": ", run.iterations, ", \"threads\": ", run.threads,
      ", \"repetition_index\": ", run.repetition_index,
      ", \"repetitions\": ", run.repetitions, ", \"time_unit\": \"",
      UnitName(run.time_unit), "\", \"real_accumulated_time\": ",
      json::Number(run.real_accumulated_time),
      ", \"cpu_accumulated_time\": ", json::Number(run.cpu_accumulated_time));
  std::vector<std::string> counters;
  for (const auto& [name, c] : run.counters) {
    counters.push_back(absl::StrCat(Quote(name), ": [", json::Number(c.value),
                                    ", ", static_cast<int>(c.flags), ", ",
                                    static_cast<int>(c.oneK), "]"));
  }
  absl::StrAppend(&out, ", \"counters\": {", absl::StrJoin(counters, ", "),
                  "}}");
  return out;
}

std::string RecordToJson(const InstanceRecord& record) {
  std::vector<std::string> runs;
  for (const auto& run : record.runs) runs.push_back(RunToJson(run));
  return absl::StrCat("{\"instance\": ", Quote(record.instance),
                      ", \"runs\": [", absl::StrJoin(runs, ", "), "]}");
}

absl::StatusOr<InstanceRecord> RecordFromJson(const std::string& line) {
  auto doc = json::Parse(line);
  if (!doc.ok()) return doc.status();
  const auto runs = doc->find("runs");
  InstanceRecord record;
  record.instance = StringOr(*doc, "instance", "");
  if (record.instance.empty() || runs == doc->end() || !runs->is_array()) {
    return absl::InvalidArgumentError(
        "not an instance record (no \"instance\" and \"runs\")");
  }
  for (const Json& j : *runs) {
    auto run = RunFromJson(j);
    if (!run.ok()) return run.status();
    record.runs.push_back(*std::move(run));
  }
  return record;
}

namespace {

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::NotFoundError(
        absl::StrCat("cannot read the journal '", path, "'"));
  }
  std::stringstream buffer;
  buffer << file.rdbuf();
  if (file.bad()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read the journal '", path, "'"));
  }
  return buffer.str();
}

// The first line, the run's context. Returns false when the line was cut
// short (killed while writing it: the journal holds nothing yet).
absl::StatusOr<bool> ReadContextLine(const std::string& path,
                                     const std::string& line, bool last,
                                     JournalContents* contents) {
  auto doc = json::Parse(line);
  if (!doc.ok() && last &&
      (absl::StartsWith(line, "{\"torchbench_journal\"") ||
       absl::StartsWith("{\"torchbench_journal\"", line))) {
    contents->warning =
        absl::StrCat("journal '", path,
                     "' line 1 (its context) was cut short (the run "
                     "writing it died; ",
                     line.size(), " bytes); it holds no result");
    return false;
  }
  if (!doc.ok() || !doc->contains("torchbench_journal") ||
      !doc->contains("context") || !(*doc)["context"].is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path,
                     "' is not a torchbench journal (its first line is "
                     "not {\"torchbench_journal\": 1, \"context\": ...})"));
  }
  for (const auto& [key, value] : (*doc)["context"].items()) {
    contents->context.emplace_back(
        key, value.is_string() ? value.get<std::string>() : "");
  }
  return true;
}

// A record line: its record, or nullopt (and a note in `torn`) for one a
// dying writer cut short; a torn prefix glued to a whole record keeps the
// record. InvalidArgument for a corrupt whole line.
absl::StatusOr<std::optional<InstanceRecord>> ReadRecordLine(
    const std::string& path, const std::string& line, int number,
    std::vector<std::string>* torn) {
  auto record = RecordFromJson(line);
  if (record.ok()) return *std::move(record);
  if (const size_t glued = line.rfind(kRecordStart);
      glued != std::string::npos && glued > 0) {
    auto rest = RecordFromJson(line.substr(glued));
    if (rest.ok()) {
      torn->push_back(absl::StrCat(
          "line ", number, " begins with ",
          TornBytes(glued, absl::string_view(line).substr(0, glued)),
          ", cut short when the run writing it died, and then a whole "
          "record, which is kept"));
      return *std::move(rest);
    }
  }
  if (IsTruncation(record.status(), line)) {
    torn->push_back(absl::StrCat("line ", number,
                                 " was cut short (the run writing it died; ",
                                 TornBytes(line.size(), line), ")"));
    return std::nullopt;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "journal '", path, "' line ", number, ": ", record.status().message()));
}

}  // namespace

absl::StatusOr<JournalContents> ReadJournal(const std::string& path) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) return text.status();
  JournalContents contents;
  std::map<std::string, size_t> index;  // Instance -> its record.
  std::vector<std::string> torn;        // One note per torn line.
  int number = 0;
  for (size_t at = 0; at < text->size();) {
    size_t end = text->find('\n', at);
    const bool last = end == std::string::npos;
    if (last) end = text->size();
    const std::string line = text->substr(at, end - at);
    at = end + 1;
    ++number;
    if (line.empty()) continue;
    if (number == 1) {
      auto whole = ReadContextLine(path, line, last, &contents);
      if (!whole.ok()) return whole.status();
      if (!*whole) return contents;
      continue;
    }
    auto record = ReadRecordLine(path, line, number, &torn);
    if (!record.ok()) return record.status();
    if (!record->has_value()) continue;
    // A later record of an instance replaces an earlier one.
    InstanceRecord& r = **record;
    if (auto it = index.find(r.instance); it != index.end()) {
      contents.records[it->second] = std::move(r);
    } else {
      index[r.instance] = contents.records.size();
      contents.records.push_back(std::move(r));
    }
  }
  if (number == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("journal '", path, "' is empty"));
  }
  if (!torn.empty()) {
    contents.warning = absl::StrCat(
        "journal '", path, "' ", absl::StrJoin(torn, "; "),
        "; ignoring the cut-short bytes (a resumed run repeats their "
        "instance)");
  }
  return contents;
}

std::string JournalMismatch(const ContextPairs& journal,
                            const ContextPairs& current) {
  // Whatever changes the numbers: a resumed run mixing two of these would
  // publish incomparable results under one context.
  static const char* const kKeys[] = {"torchbench_git_commit",
                                      "libtorch_version",
                                      "torchbench_device",
                                      "device_name",
                                      "precision",
                                      "optimizer_path",
                                      "channels_last",
                                      "weights_file",
                                      "seed",
                                      "warmup_steps",
                                      "intra_op_threads",
                                      "host_malloc",
                                      "backend",
                                      "compiled_dir"};
  auto find = [](const ContextPairs& pairs, const std::string& key) {
    for (const auto& [k, v] : pairs) {
      if (k == key) return v;
    }
    return std::string("(absent)");
  };
  if (journal.empty()) return "";
  std::vector<std::string> diffs;
  for (const char* key : kKeys) {
    const std::string a = find(journal, key);
    const std::string b = find(current, key);
    if (a != b) diffs.push_back(absl::StrCat(key, " ", a, " vs ", b));
  }
  return absl::StrJoin(diffs, ", ");
}

absl::StatusOr<std::unique_ptr<JournalWriter>> JournalWriter::Open(
    const std::string& path, const ContextPairs& context) {
  // EFBIG must be an error this writer reports, not a signal that kills the
  // run between a record's bytes.
  IgnoreFileSizeSignal();
  // Read-write: a torn tail is found by reading back from the end.
  const int fd =
      ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot open the journal '", path, "': ", ErrnoText(errno)));
  }
  auto locked = LockFile(fd, path, /*wait=*/false);
  if (!locked.ok()) {
    ::close(fd);
    if (absl::IsFailedPrecondition(locked.status())) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the journal '", path,
          "' is being written by another run (it holds the journal's lock); "
          "give each run, each Slurm array task, its own journal, or wait "
          "for that run to end"));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("the journal: ", locked.status().message()));
  }
  std::unique_ptr<JournalWriter> writer(new JournalWriter(fd, path, *locked));
  // Appended straight after torn bytes, a record would share their line and
  // make the whole line unreadable: the torn tail goes first.
  auto tail = CutTornTail(fd, path, [](const std::string& line) {
    return RecordFromJson(line).ok();
  });
  if (!tail.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the journal: ", tail.status().message()));
  }
  if (tail->bytes > 0) {
    writer->repair_note_ = absl::StrCat(
        "journal '", path, "': cut off its last ",
        TornBytes(tail->bytes, tail->beginning),
        ", a line cut short when the run writing it died; that instance runs "
        "again");
  }
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (tail->size == 0 && (!regular || st.st_size == 0)) {
    std::vector<std::string> kv;
    for (const auto& [k, v] : context) {
      kv.push_back(absl::StrCat(Quote(k), ": ", Quote(v)));
    }
    const std::string line =
        absl::StrCat("{\"torchbench_journal\": 1, \"context\": {",
                     absl::StrJoin(kv, ", "), "}}\n");
    const absl::Status written =
        WriteWholeLine(fd, path, line, *locked, /*sync=*/true);
    if (!written.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot start the journal: ", written.message()));
    }
  }
  return writer;
}

JournalWriter::~JournalWriter() { ::close(fd_); }

absl::Status JournalWriter::Append(const InstanceRecord& record) {
  const std::string line = RecordToJson(record) + "\n";
  const absl::Status written =
      WriteWholeLine(fd_, path_, line, locked_, /*sync=*/true);
  if (written.ok()) return written;
  return absl::InternalError(
      absl::StrCat("journal: the record of ", record.instance,
                   " was not written (", written.message(),
                   "); the journal keeps the records before it, and a "
                   "resumed run repeats this instance"));
}

ResultsReporter::ResultsReporter(
    std::unique_ptr<benchmark::BenchmarkReporter> inner, Options options)
    : inner_(std::move(inner)), options_(std::move(options)) {}

void ResultsReporter::ShareStreams() {
  inner_->SetOutputStream(&GetOutputStream());
  inner_->SetErrorStream(&GetErrorStream());
}

void ResultsReporter::CheckOutput() {
  // Read errno at once: the write that failed is the stream's last call.
  const int error = errno;
  if (!output_status_.ok() || GetOutputStream().good()) return;
  output_status_ = absl::InternalError(
      error != 0 ? ErrnoText(error) : "the stream failed (errno unknown)");
}

bool ResultsReporter::ReportContext(const Context& context) {
  ShareStreams();
  errno = 0;
  const bool ok = inner_->ReportContext(context);
  CheckOutput();
  for (const InstanceRecord& record : options_.replay) {
    std::vector<Run> iterations;
    std::vector<Run> aggregates;
    for (const Run& run : record.runs) {
      (run.run_type == Run::RT_Aggregate ? aggregates : iterations)
          .push_back(run);
    }
    if (!iterations.empty()) Forward(iterations);
    if (!aggregates.empty()) Forward(aggregates);
    for (const Run& run : record.runs) {
      if (run.error_occurred) {
        ++errored_;
        break;
      }
    }
  }
  return ok;
}

void ResultsReporter::Forward(const std::vector<Run>& runs) {
  if (runs.empty()) return;
  const bool hide = options_.aggregates_only && runs[0].repetitions > 1 &&
                    runs[0].run_type == Run::RT_Iteration;
  if (hide) return;
  errno = 0;
  inner_->ReportRuns(runs);
  CheckOutput();
}

void ResultsReporter::ReportRuns(const std::vector<Run>& runs) {
  ShareStreams();
  std::vector<Run> kept;
  for (const Run& run : runs) {
    if (!(run.error_occurred && run.error_message == kInterruptedMessage)) {
      kept.push_back(run);
    }
  }
  if (kept.empty()) return;
  const std::string name = kept[0].run_name.str();
  if (kept[0].run_type == Run::RT_Aggregate) {
    if (pending_.instance == name) {
      pending_.runs.insert(pending_.runs.end(), kept.begin(), kept.end());
      Forward(kept);
      Complete();
    } else {
      Forward(kept);  // Aggregates of an instance already completed.
    }
    return;
  }
  if (!pending_.instance.empty()) Complete();
  pending_ = {name, kept};
  Forward(kept);
  // Google Benchmark adds aggregates only for >= 2 repetitions without an
  // error (statistics.cc); otherwise the instance is complete now.
  int good = 0;
  for (const Run& run : kept) good += run.error_occurred ? 0 : 1;
  if (kept[0].repetitions < 2 || good < 2) Complete();
}

void ResultsReporter::Complete() {
  if (pending_.instance.empty()) return;
  bool error = false;
  for (const Run& run : pending_.runs) error = error || run.error_occurred;
  ++(error ? errored_ : finished_);
  if (options_.journal != nullptr) {
    if (absl::Status s = options_.journal->Append(pending_);
        !s.ok() && journal_status_.ok()) {
      journal_status_ = s;
      GetErrorStream() << "torchbench: " << s.message() << "\n";
    }
  }
  pending_ = InstanceRecord();
}

void ResultsReporter::Finalize() {
  ShareStreams();
  Complete();
  errno = 0;
  inner_->Finalize();
  GetOutputStream().flush();
  CheckOutput();
}

}  // namespace torchbench
