#include "program/run_loop.h"

#include <stdlib.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "program/atomic_file.h"
#include "program/filters.h"
#include "program/progress.h"

namespace torchbench {
namespace {

// What an isolating parent does itself, so its children are not told.
constexpr const char* kParentOnlyFlags[] = {
    "--torchbench_isolate",
    "--torchbench_journal",
    "--torchbench_resume",
    "--torchbench_shard",
    "--torchbench_instance_timeout",
    "--torchbench_child_result",
    "--benchmark_filter",
    "--benchmark_out",
    "--benchmark_format",
    "--benchmark_color",
    "--benchmark_list_tests",
    "--benchmark_display_aggregates_only",
    "--benchmark_report_aggregates_only"};

bool ParentOnly(const std::string& arg) {
  for (const char* prefix : kParentOnlyFlags) {
    if (arg.compare(0, std::strlen(prefix), prefix) == 0) return true;
  }
  return false;
}

void Report(benchmark::BenchmarkReporter* reporter,
            const InstanceRecord& record) {
  if (reporter == nullptr) return;
  std::vector<BenchmarkRun> iterations;
  std::vector<BenchmarkRun> aggregates;
  for (const auto& run : record.runs) {
    (run.run_type == BenchmarkRun::RT_Aggregate ? aggregates : iterations)
        .push_back(run);
  }
  if (!iterations.empty()) reporter->ReportRuns(iterations);
  if (!aggregates.empty()) reporter->ReportRuns(aggregates);
}

// The caller's own benchmarks that `filter` selects, run by Google Benchmark
// before any of the harness's is registered; one record per benchmark.
std::vector<InstanceRecord> RunCallerBenchmarks(const std::string& filter) {
  class Collecting : public benchmark::BenchmarkReporter {
   public:
    Collecting() { SetErrorStream(&discarded); }
    bool ReportContext(const Context&) override { return true; }
    void ReportRuns(const std::vector<Run>& runs) override {
      for (const Run& run : runs) {
        const std::string name = run.run_name.str();
        if (records.empty() || records.back().instance != name) {
          records.push_back({name, {}});
        }
        records.back().runs.push_back(run);
      }
    }
    std::ostringstream discarded;  // "Failed to match any benchmarks ..."
    std::vector<InstanceRecord> records;
  } collected;
  benchmark::RunSpecifiedBenchmarks(&collected, filter);
  return std::move(collected.records);
}

// A scratch directory for the children's one-record journals.
absl::StatusOr<std::string> MakeScratch() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      absl::StrCat(tmp != nullptr && *tmp ? tmp : "/tmp", "/torchbench-XXXXXX");
  if (::mkdtemp(pattern.data()) == nullptr) {
    return absl::InternalError(
        absl::StrCat("cannot create a temporary directory in ", pattern));
  }
  return pattern;
}

// One instance in a child process; its record, or one error run saying how
// the child ended. Cancelled when the run was interrupted meanwhile.
absl::StatusOr<InstanceRecord> RunIsolated(const PlannedInstance& p,
                                           const LoopOptions& options,
                                           const std::string& scratch,
                                           int64_t index) {
  ChildOptions child = options.child;
  child.result_path = absl::StrCat(scratch, "/instance-", index, ".jsonl");
  child.args = ChildArgs(options.program_args, p.name, child.result_path);
  auto record = RunChild(p.name, child);
  if (!record.ok() && !absl::IsCancelled(record.status())) {
    return ErrorRecord(p.name, std::string(record.status().message()));
  }
  return record;
}

// --benchmark_out, written to a temporary file and renamed over the old one
// when the run ends: a kill or a full disk leaves the old file whole.
class OutFile {
 public:
  absl::Status Open(const std::string& path) {
    auto created = AtomicFile::Create(path);
    if (created.ok()) out_.open(created->temp_path());
    if (!created.ok() || !out_.is_open()) {
      return absl::InternalError(
          absl::StrCat("cannot write --benchmark_out='", path, "': ",
                       created.ok() ? ErrnoText(errno)
                                    : std::string(created.status().message())));
    }
    file_ = *std::move(created);
    return absl::OkStatus();
  }
  std::ostream& stream() { return out_; }

  // Renames the written file over the old one. A failed write (the file
  // reporter's output_status() says which) keeps the old file whole, and
  // ExitStatus reports it.
  absl::Status Commit() {
    if (!file_) return absl::OkStatus();
    out_.close();
    if (out_.fail()) return absl::OkStatus();
    return file_->Commit();
  }

 private:
  std::ofstream out_;
  std::optional<AtomicFile> file_;
};

}  // namespace

std::vector<std::string> ChildArgs(const std::vector<std::string>& program_args,
                                   const std::string& instance,
                                   const std::string& result_path) {
  std::vector<std::string> args;
  for (size_t i = 1; i < program_args.size(); ++i) {
    if (ParentOnly(program_args[i])) continue;
    args.push_back(program_args[i]);
  }
  args.push_back(
      absl::StrCat("--benchmark_filter=^", EscapeRegex(instance), "$"));
  for (const char* fixed :
       {"--benchmark_format=console", "--benchmark_color=false",
        "--torchbench_shard=0/1"}) {
    args.emplace_back(fixed);
  }
  args.push_back(absl::StrCat("--torchbench_child_result=", result_path));
  return args;
}

bool RunLoop(const std::vector<PlannedInstance>& todo,
             const LoopOptions& options, RunState* state,
             benchmark::BenchmarkReporter* display,
             benchmark::BenchmarkReporter* file) {
  display->SetOutputStream(&std::cout);
  display->SetErrorStream(&std::cerr);
  OutFile out;
  if (file != nullptr) {
    if (absl::Status s = out.Open(options.out_path); !s.ok()) {
      std::cerr << "torchbench: " << s.message() << "\n";
      return false;
    }
    file->SetOutputStream(&out.stream());
    file->SetErrorStream(&out.stream());
  }
  std::string scratch;
  if (options.isolate && !todo.empty()) {
    auto made = MakeScratch();
    if (!made.ok()) {
      std::cerr << "torchbench: " << made.status().message() << "\n";
      return false;
    }
    scratch = *made;
  }
  benchmark::BenchmarkReporter::Context context;
  context.name_field_width = options.name_width;
  display->ReportContext(context);
  if (file != nullptr) file->ReportContext(context);

  int64_t index = 0;
  if (!options.caller_filter.empty()) {
    for (InstanceRecord& record : RunCallerBenchmarks(options.caller_filter)) {
      for (auto& r : record.runs) r.family_index = index;
      Report(display, record);
      Report(file, record);
      state->CountReported();
      ++index;
    }
  }
  Progress progress(static_cast<int64_t>(todo.size()));
  for (const PlannedInstance& p : todo) {
    if (Interrupted()) break;
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<InstanceRecord> record =
        options.isolate ? RunIsolated(p, options, scratch, index)
                        : RunInProcess(p, state);
    if (!record.ok()) break;  // Interrupted while a child ran.
    for (auto& r : record->runs) {
      r.family_index = index;
      r.per_family_instance_index = 0;
    }
    Report(display, *record);
    Report(file, *record);
    state->CountReported();
    ++index;
    std::cout << std::flush;
    if (options.progress) {
      const std::chrono::duration<double> took =
          std::chrono::steady_clock::now() - start;
      std::cerr << progress.Finished(p.name, took.count()) << std::endl;
    }
  }
  state->live().Release();
  display->Finalize();
  if (file != nullptr) file->Finalize();
  if (!scratch.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(scratch, ignored);
  }
  if (absl::Status s = out.Commit(); !s.ok()) {
    std::cerr << "torchbench: --benchmark_out: " << s.message() << "\n";
    return false;
  }
  return true;
}

}  // namespace torchbench
