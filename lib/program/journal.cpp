#include "program/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "json.h"

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
  // runs off its end.
  return !line.empty() && line.back() != '}' &&
         absl::StrContains(status.message(), "invalid JSON");
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

absl::StatusOr<JournalContents> ReadJournal(const std::string& path) {
  std::ifstream file(path);
  if (!file) {
    return absl::NotFoundError(
        absl::StrCat("cannot read the journal '", path, "'"));
  }
  JournalContents contents;
  std::map<std::string, size_t> index;
  std::string line;
  int number = 0;
  bool last_cut = false;
  while (std::getline(file, line)) {
    ++number;
    if (line.empty()) continue;
    if (last_cut) {
      return absl::InvalidArgumentError(absl::StrCat(
          "journal '", path, "' line ", number - 1, " is not valid JSON"));
    }
    if (number == 1) {
      auto doc = json::Parse(line);
      if (!doc.ok() || !doc->contains("torchbench_journal") ||
          !doc->contains("context") || !(*doc)["context"].is_object()) {
        return absl::InvalidArgumentError(
            absl::StrCat("'", path,
                         "' is not a torchbench journal (its first line is "
                         "not {\"torchbench_journal\": 1, \"context\": ...})"));
      }
      for (const auto& [key, value] : (*doc)["context"].items()) {
        contents.context.emplace_back(
            key, value.is_string() ? value.get<std::string>() : "");
      }
      continue;
    }
    auto record = RecordFromJson(line);
    if (!record.ok()) {
      if (IsTruncation(record.status(), line)) {
        last_cut = true;
        contents.warning = absl::StrCat(
            "journal '", path, "' line ", number,
            " was cut short (the run writing it died); ignoring it");
        continue;
      }
      return absl::InvalidArgumentError(
          absl::StrCat("journal '", path, "' line ", number, ": ",
                       record.status().message()));
    }
    if (auto it = index.find(record->instance); it != index.end()) {
      contents.records[it->second] = *std::move(record);
    } else {
      index[record->instance] = contents.records.size();
      contents.records.push_back(*std::move(record));
    }
  }
  if (number == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("journal '", path, "' is empty"));
  }
  return contents;
}

std::string JournalMismatch(const ContextPairs& journal,
                            const ContextPairs& current) {
  // Whatever changes the numbers: a resumed run mixing two of these would
  // publish incomparable results under one context.
  static const char* const kKeys[] = {
      "torchbench_git_commit", "libtorch_version", "torchbench_device",
      "device_name",           "precision",        "optimizer_path",
      "channels_last",         "weights_file",     "seed",
      "warmup_steps",          "intra_op_threads", "host_malloc"};
  auto find = [](const ContextPairs& pairs, const std::string& key) {
    for (const auto& [k, v] : pairs) {
      if (k == key) return v;
    }
    return std::string("(absent)");
  };
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
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot open the journal '", path, "': ", std::strerror(errno)));
  }
  std::unique_ptr<JournalWriter> writer(new JournalWriter(fd, path));
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_size == 0) {
    std::vector<std::string> kv;
    for (const auto& [k, v] : context) {
      kv.push_back(absl::StrCat(Quote(k), ": ", Quote(v)));
    }
    const std::string line =
        absl::StrCat("{\"torchbench_journal\": 1, \"context\": {",
                     absl::StrJoin(kv, ", "), "}}\n");
    if (::write(fd, line.data(), line.size()) !=
        static_cast<ssize_t>(line.size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot write the journal '", path, "': ", std::strerror(errno)));
    }
  }
  return writer;
}

JournalWriter::~JournalWriter() { ::close(fd_); }

absl::Status JournalWriter::Append(const InstanceRecord& record) {
  const std::string line = RecordToJson(record) + "\n";
  // O_APPEND and one write: whole lines, even with two writers.
  if (::write(fd_, line.data(), line.size()) !=
          static_cast<ssize_t>(line.size()) ||
      ::fsync(fd_) != 0) {
    return absl::InternalError(absl::StrCat(
        "writing the journal '", path_, "' failed: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

ResultsReporter::ResultsReporter(
    std::unique_ptr<benchmark::BenchmarkReporter> inner, Options options)
    : inner_(std::move(inner)), options_(std::move(options)) {}

void ResultsReporter::ShareStreams() {
  inner_->SetOutputStream(&GetOutputStream());
  inner_->SetErrorStream(&GetErrorStream());
}

bool ResultsReporter::ReportContext(const Context& context) {
  ShareStreams();
  const bool ok = inner_->ReportContext(context);
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
  if (!hide) inner_->ReportRuns(runs);
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
  inner_->Finalize();
}

}  // namespace torchbench
