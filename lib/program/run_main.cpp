// The torchbench program from flags to exit status, in phases:
//
//   ParseArgs     the --torchbench_* flags (flags.h), then Google Benchmark's
//   Setup         process-wide settings: host malloc, memory counter, ...
//   Plan          filter, shard, notes, context, resume (plan.h)
//   OpenOutputs   the coverage file's registry line, the journal
//   MakeChain     the reporter chain, for the console and --benchmark_out
//   RunLoop       each instance in this process or a child (run_loop.h)
//   ExitStatus    interrupted (130), errored (1) or 0
//
// The same phases serve the program, an isolated child (which runs its one
// instance in process and reports only to its journal) and an embedder's
// RunBenchmarks (whose own benchmarks run first).
#include "program/run_main.h"

#include <benchmark/benchmark.h>
#include <torch/version.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "memory_internal.h"
#include "program/atomic_file.h"
#include "program/benchmark_runner.h"
#include "program/context.h"
#include "program/filters.h"
#include "program/host_malloc.h"
#include "program/isolation.h"
#include "program/journal.h"
#include "program/list_models.h"
#include "program/machine_peak.h"
#include "program/op_coverage.h"
#include "program/plan.h"
#include "program/reporter.h"
#include "program/run_loop.h"
#include "program/shard.h"
#include "program/slow_op.h"
#include "torchbench/device.h"
#include "torchbench/memory.h"
#include "torchbench/vision_ops.h"

namespace torchbench {
namespace {

// An early end of the program: its exit status, and a line for stderr
// (without "torchbench: "; empty when already printed or none is due).
struct Exit {
  int status = 2;
  std::string message;
};

int Finish(const Exit& exit) {
  if (!exit.message.empty())
    std::cerr << "torchbench: " << exit.message << "\n";
  return exit.status;
}

Exit NoMatch(const std::string& filter) {
  return {2, absl::StrCat("no benchmark matches --benchmark_filter='", filter,
                          "' (--benchmark_list_tests lists them; names are "
                          "<model>/<Train|Eval>/batch_size:<N>)")};
}

// ---- ParseArgs -------------------------------------------------------------

// The program's arguments, parsed.
struct ProgramArgs {
  HarnessFlags flags;
  bool caller_benchmarks = false;         // torchbench::RunBenchmarks.
  bool child = false;                     // An isolated child.
  std::vector<std::string> program_args;  // As given, for the children.
  // Google Benchmark's output flags, for MakeReporters.
  std::vector<std::string> output_args;
  std::string out_path;
  int64_t repetitions = 1;
  bool list_tests = false;
  bool display_aggregates_only = false;
  bool report_aggregates_only = false;
  std::string filter;
  c10::Device device = c10::kCPU;
  std::optional<Shard> shard;
};

// The flags an embedder's RunBenchmarks refuses: the program's own.
bool HasProgramOnlyFlags(const HarnessFlags& flags) {
  return flags.isolate || !flags.child_result.empty() ||
         !flags.journal.empty() || !flags.resume.empty() || flags.shard ||
         !flags.shard_costs.empty();
}

// Google Benchmark's flags, once the harness's are out of argv. The journal
// needs every repetition whatever is shown, so the aggregates-only flags are
// applied by ResultsReporter, and --benchmark_out is written by the run loop:
// Google Benchmark sees neither.
absl::Status ParseBenchmarkArgs(int argc, char** argv, ProgramArgs* args) {
  if (!args->caller_benchmarks) {
    args->display_aggregates_only =
        IsTrue(TakeFlag(&argc, argv, "benchmark_display_aggregates_only"));
    args->report_aggregates_only =
        IsTrue(TakeFlag(&argc, argv, "benchmark_report_aggregates_only"));
  }
  args->output_args.assign(argv, argv + argc);
  args->out_path = TakeFlag(&argc, argv, "benchmark_out");
  args->repetitions = std::max<int64_t>(
      1,
      std::atoll(FlagValue(argc, argv, "benchmark_repetitions", "1").c_str()));
  args->list_tests =
      IsTrue(FlagValue(argc, argv, "benchmark_list_tests", "false"));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
    return absl::InvalidArgumentError("");  // Google Benchmark said why.
  }
  args->filter = benchmark::GetBenchmarkFilter();
  if (const std::string error = FilterError(args->filter); !error.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--benchmark_filter='", args->filter,
                     "' is not a valid regular expression: ", error));
  }
  return absl::OkStatus();
}

// The device and the shard, from the flags or the environment.
absl::Status ResolveDeviceAndShard(ProgramArgs* args) {
  args->device = DefaultDevice();
  if (!args->flags.device.empty()) {
    auto parsed = ParseDevice(args->flags.device);
    if (!parsed.ok()) return parsed.status();
    args->device = *parsed;
  }
  args->shard = args->flags.shard;
  if (!args->shard && !args->caller_benchmarks) {
    auto from_env = ShardFromEnvironment(
        [](const char* name) -> const char* { return std::getenv(name); });
    if (!from_env.ok()) return from_env.status();
    args->shard = *from_env;
  }
  return absl::OkStatus();
}

// ---- Setup -----------------------------------------------------------------

// Process-wide settings every instance runs under; returns the host malloc
// policy applied, for the context.
absl::StatusOr<std::string> Setup(const HarnessFlags& flags) {
  // Under a file-size limit a write fails with EFBIG, which each writer
  // reports, instead of the signal killing the run.
  IgnoreFileSizeSignal();
  const std::string host_malloc = ApplyHostMalloc(flags.host_malloc);
  if (flags.cpu_memory_counter) InstallCpuMemoryCounter();
  if (!flags.testonly_slow_op.empty()) {
    const absl::Status installed =
        InstallSlowOp(*ParseSlowOp(flags.testonly_slow_op));
    if (!installed.ok()) return installed;
  }
  return host_malloc;
}

// ---- Plan ------------------------------------------------------------------

struct RunPlan {
  RunOptions options;
  std::vector<PlannedInstance> todo;
  std::vector<InstanceRecord> replay;  // From a resumed journal.
  ContextPairs context;
  bool selected_any = false;  // Before sharding: did the filter select any?
};

std::string ModelOf(const std::string& instance) {
  return instance.substr(0, instance.find('/'));
}

// Prints the notes about the instances this process runs (the children's
// parent already printed theirs).
void PrintNotes(const ProgramArgs& args,
                const std::vector<RegistrationNote>& notes,
                const std::vector<PlannedInstance>& planned) {
  if (args.child) return;
  std::set<std::string> models;
  for (const auto& p : planned) models.insert(p.entry->spec.name);
  for (const auto& note : notes) {
    if (FilterSelects(args.filter, note.benchmark) &&
        (!args.shard || models.count(ModelOf(note.benchmark)) > 0)) {
      std::cerr << "torchbench: note: " << note.text << "\n";
    }
  }
}

// Drops what --torchbench_resume's journal holds from the plan, to be
// reported from the journal instead.
absl::Status ApplyResume(const std::string& path, RunPlan* plan,
                         std::optional<MachinePeaks>* journal_peaks) {
  auto journal = ReadJournal(path);
  if (absl::IsNotFound(journal.status())) {
    std::cerr << "torchbench: note: --torchbench_resume=" << path
              << " does not exist yet; starting it\n";
    return absl::OkStatus();
  }
  if (!journal.ok()) return journal.status();
  if (!journal->warning.empty()) {
    std::cerr << "torchbench: note: " << journal->warning << "\n";
  }
  if (const std::string diff = JournalMismatch(journal->context, plan->context);
      !diff.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("--torchbench_resume=", path,
                     " was written by a different setup (", diff,
                     "); resume with the same build and flags, or start a new "
                     "journal"));
  }
  *journal_peaks = PeaksFromContext(journal->context);
  ResumeSplit split = SplitResumed(plan->todo, std::move(journal->records));
  std::cerr << "torchbench: resuming " << path << ": " << split.replay.size()
            << " instance(s) done, " << split.todo.size() << " to run\n";
  plan->replay = std::move(split.replay);
  plan->todo = std::move(split.todo);
  return absl::OkStatus();
}

// The yardstick of --torchbench_flops: the flag's, a resumed journal's (so
// one result divides by one set of peaks), or measured now, before any
// instance (a child always has its parent's, by the flag).
void SetPeaks(const ProgramArgs& args,
              const std::optional<MachinePeaks>& journal_peaks, RunPlan* plan) {
  MachinePeaks& peaks = plan->options.peaks;
  if (!args.flags.peaks.empty()) {
    peaks = *ParsePeaks(args.flags.peaks);  // Checked by ParseHarnessFlags.
  } else if (journal_peaks) {
    peaks = *journal_peaks;
  } else {
    std::cerr << "torchbench: measuring this machine's GEMM and copy peaks "
                 "(--torchbench_flops)\n";
    peaks = MeasurePeaks(args.device, GemmDtypes(plan->todo),
                         plan->options.precision == Precision::kTf32);
  }
  AddPeaksContext(peaks, &plan->context);
}

// Whether the profiled instances run in children: a profiler session leaves
// its mark on the process (CUPTI's callbacks stay subscribed on a GPU, and
// Kineto's threads), so no timed loop may follow one in the same process.
// Each instance's own profile comes after its timed loop, so one instance
// needs no child.
bool ProfilesInChildren(const RunPlan& plan) {
  return plan.options.profile_steps > 0 && plan.todo.size() > 1;
}

absl::StatusOr<RunPlan> Plan(const ProgramArgs& args,
                             const std::string& host_malloc) {
  RunPlan plan;
  plan.options = RunOptionsFrom(args.flags, args.device, args.filter);
  std::vector<RegistrationNote> notes;
  plan.todo = PlanInstances(Registry::Global(), plan.options, &notes);
  plan.selected_any = !plan.todo.empty();
  plan.context = RunContext(args.device, args.flags);
  plan.context.emplace_back("host_malloc", host_malloc);
  plan.context.emplace_back("torchbench_model_domains",
                            ModelDomains(plan.todo));
  // A shard asked for, even 1/1, is named in the context, so `tools/tb merge`
  // can check a one-shard run like any other; children (always 0/1) skip it.
  if (args.shard && (args.shard->count > 1 || !args.child)) {
    auto selected = SelectShard(plan.todo, *args.shard, args.flags.shard_costs,
                                &plan.context);
    if (!selected.ok()) return selected.status();
    plan.todo = *std::move(selected);
  }
  PrintNotes(args, notes, plan.todo);
  std::optional<MachinePeaks> journal_peaks;
  if (!args.flags.resume.empty() && !args.list_tests) {
    if (absl::Status s = ApplyResume(args.flags.resume, &plan, &journal_peaks);
        !s.ok()) {
      return s;
    }
  }
  if (plan.options.count_flops && !args.list_tests) {
    SetPeaks(args, journal_peaks, &plan);
  }
  if (args.caller_benchmarks && ProfilesInChildren(plan) && !args.list_tests) {
    return absl::InvalidArgumentError(
        "--torchbench_profile runs each of several instances in a process of "
        "its own (no timed loop may follow a profiler session), which only "
        "the torchbench program starts: select one instance, or run them "
        "with the torchbench program");
  }
  return plan;
}

// Lists what the plan runs (the caller's own benchmarks first, as Google
// Benchmark lists them: its listing would show "/manual_time" on the
// harness's names).
int ListTests(const ProgramArgs& args, const RunPlan& plan) {
  size_t listed = 0;
  if (args.caller_benchmarks) {
    benchmark::ConsoleReporter lister;
    std::ostringstream discarded;  // "Failed to match any benchmarks ..."
    lister.SetOutputStream(&std::cout);
    lister.SetErrorStream(&discarded);
    listed = benchmark::RunSpecifiedBenchmarks(&lister, args.filter);
  }
  for (const auto& p : plan.todo) std::cout << p.name << "\n";
  listed += plan.todo.size();
  if (listed > 0 || (args.shard && plan.selected_any)) return 0;
  return Finish(NoMatch(args.filter));
}

// ---- OpenOutputs -----------------------------------------------------------

// The coverage file starts with the registry, the denominator; isolated
// children append their instances, and a resumed run keeps what is there.
absl::Status StartCoverageFile(const ProgramArgs& args) {
  const std::string& path = args.flags.op_coverage;
  if (path.empty() || args.child) return absl::OkStatus();
  std::error_code ec;
  const bool keep = !args.flags.resume.empty() &&
                    std::filesystem::file_size(path, ec) > 0 && !ec;
  if (keep) return absl::OkStatus();
  // torchvision's operators register when their library loads, which the
  // models that use them do lazily: loaded now, they are in the registry too
  // (a library that cannot load leaves them out, and those models fail with
  // its message).
  (void)vision_ops::Load();
  return AppendCoverageLine(
      path,
      CoverageRegistryLine(TORCH_VERSION, args.device.str(),
                           RegisteredOperators()),
      /*truncate=*/true);
}

// The journal this process appends to: a child's result file, or the
// program's --torchbench_journal / --torchbench_resume; none without.
absl::StatusOr<std::unique_ptr<JournalWriter>> OpenJournal(
    const ProgramArgs& args, const RunPlan& plan) {
  const HarnessFlags& f = args.flags;
  const std::string path =
      args.child ? f.child_result : (!f.journal.empty() ? f.journal : f.resume);
  if (path.empty()) return std::unique_ptr<JournalWriter>();
  auto journal = JournalWriter::Open(path, plan.context);
  // A resumed journal's reader already said what it skipped.
  if (journal.ok() && f.resume.empty() && !(*journal)->repair_note().empty()) {
    std::cerr << "torchbench: note: " << (*journal)->repair_note() << "\n";
  }
  return journal;
}

// ---- MakeChain -------------------------------------------------------------

// A child's console: its parent reports for it.
class NullReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

// The reporters, each a chain: ExactNameReporter (drops "/manual_time") ->
// ResultsReporter (resume's replay, the journal, aggregates-only) ->
// Google Benchmark's console, JSON or CSV reporter. A child reports only to
// its journal. `display` and `file` point at the ResultsReporters.
struct Chain {
  Reporters reporters;
  ResultsReporter* display = nullptr;
  ResultsReporter* file = nullptr;
};

Chain MakeChain(const ProgramArgs& args, RunPlan* plan, JournalWriter* journal,
                const std::set<std::string>& owned) {
  Chain chain;
  auto wrap =
      [&](std::unique_ptr<benchmark::BenchmarkReporter> inner,
          bool is_file) -> std::unique_ptr<benchmark::BenchmarkReporter> {
    if (args.child && !is_file) inner = std::make_unique<NullReporter>();
    auto results = std::make_unique<ResultsReporter>(
        std::move(inner),
        ResultsReporter::Options{
            .journal = is_file ? nullptr : journal,
            .replay = plan->replay,
            .aggregates_only = args.report_aggregates_only ||
                               (!is_file && args.display_aggregates_only)});
    (is_file ? chain.file : chain.display) = results.get();
    return results;
  };
  std::vector<char*> argv;
  for (const auto& a : args.output_args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  chain.reporters = MakeReporters(
      static_cast<int>(args.output_args.size()), argv.data(),
      [owned](const std::string& name) { return owned.count(name) > 0; }, wrap);
  return chain;
}

LoopOptions MakeLoopOptions(const ProgramArgs& args, const RunPlan& plan) {
  LoopOptions loop;
  loop.out_path = args.out_path;
  loop.isolate =
      (args.flags.isolate || ProfilesInChildren(plan)) && !args.child;
  loop.progress = loop.isolate;
  loop.child.executable = "/proc/self/exe";
  loop.child.timeout_seconds = args.flags.instance_timeout;
  loop.program_args = args.program_args;
  if (plan.options.count_flops && loop.isolate) {
    loop.program_args.push_back(
        absl::StrCat("--torchbench_peaks=", PeaksText(plan.options.peaks)));
  }
  for (const auto& p : plan.todo) {
    loop.name_width = std::max(loop.name_width, p.name.size());
  }
  if (args.repetitions > 1) loop.name_width += 7;  // "_median"
  if (args.caller_benchmarks) {
    loop.caller_filter = args.filter.empty() ? "all" : args.filter;
  }
  return loop;
}

// ---- ExitStatus ------------------------------------------------------------

int ExitStatus(const ProgramArgs& args, const Chain& chain,
               const RunState& state) {
  if (Interrupted()) {
    std::cerr << "torchbench: interrupted after " << chain.display->finished()
              << " finished instance(s)";
    if (!args.out_path.empty())
      std::cerr << "; " << args.out_path << " has them";
    const std::string& journal =
        args.flags.journal.empty() ? args.flags.resume : args.flags.journal;
    if (!journal.empty() && !args.child) {
      std::cerr << "; continue with --torchbench_resume=" << journal;
    }
    std::cerr << "\n";
    return 130;
  }
  // Results a file lacks: one line each, and a non-zero exit even when
  // every instance ran (a failed journal write was said when it failed).
  bool lost = !chain.display->journal_status().ok();
  if (chain.file != nullptr && !chain.file->output_status().ok()) {
    std::cerr << "torchbench: writing --benchmark_out '" << args.out_path
              << "' failed: " << chain.file->output_status().message()
              << "; it keeps what it held before this run\n";
    lost = true;
  }
  if (lost) return 1;
  // An embedder's own benchmarks' errors are its own to judge.
  const int errored =
      args.caller_benchmarks ? state.errored() : chain.display->errored();
  if (errored == 0) return 0;
  std::cerr << "torchbench: " << errored
            << " benchmark run(s) errored (see error_message above)";
  if (args.flags.fail_on_error) {
    std::cerr << "; exiting 1 (--torchbench_fail_on_error=false to exit 0)\n";
    return 1;
  }
  std::cerr << "\n";
  return 0;
}

// Everything after the flags: plan, outputs, reporters, the loop.
int Run(const ProgramArgs& args, const std::string& host_malloc) {
  auto plan = Plan(args, host_malloc);
  if (!plan.ok()) return Finish({2, std::string(plan.status().message())});
  if (args.list_tests) return ListTests(args, *plan);
  if (!plan->selected_any && !args.caller_benchmarks) {
    return Finish(NoMatch(args.filter));
  }
  for (const auto& [key, value] : plan->context) {
    benchmark::AddCustomContext(key, value);
  }
  if (absl::Status s = StartCoverageFile(args); !s.ok()) {
    return Finish({2, std::string(s.message())});
  }
  auto journal = OpenJournal(args, *plan);
  if (!journal.ok())
    return Finish({2, std::string(journal.status().message())});
  InstallInterruptHandler(/*announce=*/!args.child);

  const std::vector<std::string> names = InstanceNames(plan->todo);
  const Chain chain =
      MakeChain(args, &*plan, journal->get(),
                std::set<std::string>(names.begin(), names.end()));
  RunState state(plan->options);
  if (!RunLoop(plan->todo, MakeLoopOptions(args, *plan), &state,
               chain.reporters.display.get(), chain.reporters.file.get())) {
    return 1;
  }
  benchmark::Shutdown();
  // An embedder's filter that matched none of its benchmarks nor the
  // harness's.
  if (state.reported() == 0 && !plan->selected_any && !Interrupted()) {
    return Finish(NoMatch(args.filter));
  }
  return ExitStatus(args, chain, state);
}

}  // namespace

int RunMain(int argc, char** argv, bool caller_benchmarks) {
  ProgramArgs args;
  args.caller_benchmarks = caller_benchmarks;
  args.program_args.assign(argv, argv + argc);
  auto flags = ParseHarnessFlags(&argc, argv);
  if (!flags.ok()) return Finish({2, std::string(flags.status().message())});
  args.flags = *std::move(flags);
  if (args.flags.help == "text") std::cout << HarnessFlagsHelp();
  if (args.flags.help == "markdown") std::cout << HarnessFlagsMarkdown();
  if (!args.flags.help.empty()) return 0;
  args.child = !args.flags.child_result.empty();
  if (caller_benchmarks && HasProgramOnlyFlags(args.flags)) {
    return Finish({2,
                   "--torchbench_isolate, _journal, _resume and _shard are "
                   "flags of the torchbench program, not of "
                   "torchbench::RunBenchmarks"});
  }
  auto host_malloc = Setup(args.flags);
  if (!host_malloc.ok()) {
    return Finish({2, std::string(host_malloc.status().message())});
  }
  if (args.flags.list_models) {
    return ListModels(Registry::Global(), *args.flags.list_models, std::cout)
               ? 0
               : 1;
  }
  if (absl::Status s = ResolveDeviceAndShard(&args); !s.ok()) {
    return Finish({2, std::string(s.message())});
  }
  if (absl::Status s = ParseBenchmarkArgs(argc, argv, &args); !s.ok()) {
    return Finish({2, std::string(s.message())});
  }
  return Run(args, *host_malloc);
}

}  // namespace torchbench
