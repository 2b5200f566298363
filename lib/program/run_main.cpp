// The torchbench program's main loop: flags, planning (filter, shard,
// resume), then either Google Benchmark's own loop in this process or one
// child process per instance, with every result passing through the
// journal-aware reporters.
#include "program/run_main.h"

#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <torch/version.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "program/benchmark_runner.h"
#include "program/context.h"
#include "program/filters.h"
#include "program/host_malloc.h"
#include "program/isolation.h"
#include "program/journal.h"
#include "program/list_models.h"
#include "program/op_coverage.h"
#include "program/progress.h"
#include "program/reporter.h"
#include "program/shard.h"
#include "program/slow_op.h"
#include "torchbench/device.h"
#include "torchbench/memory.h"
#include "torchbench/vision_ops.h"

namespace torchbench {
namespace {

int NoMatch(const std::string& filter) {
  std::cerr << "torchbench: no benchmark matches --benchmark_filter='" << filter
            << "' (--benchmark_list_tests lists them; names are "
               "<model>/<Train|Eval>/batch_size:<N>)\n";
  return 2;
}

// Lists the caller's own benchmarks as Google Benchmark would (called before
// the TorchBench ones are registered). Returns how many it listed.
size_t ListCallerBenchmarks(const std::string& filter) {
  benchmark::ConsoleReporter lister;
  std::ostringstream discarded;  // "Failed to match any benchmarks ..."
  lister.SetOutputStream(&std::cout);
  lister.SetErrorStream(&discarded);
  return benchmark::RunSpecifiedBenchmarks(&lister, filter);
}

// A child's console: its parent reports for it.
class NullReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

bool StartsWithAny(const std::string& arg,
                   std::initializer_list<const char*> prefixes) {
  for (const char* p : prefixes) {
    if (arg.rfind(p, 0) == 0) return true;
  }
  return false;
}

// Removes --<name> and --<name>=... from argv; returns its value as
// FlagValue would.
std::string TakeFlag(int* argc, char** argv, const std::string& name) {
  const std::string value = FlagValue(*argc, argv, name, "false");
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

std::string ModelOf(const std::string& instance) {
  return instance.substr(0, instance.find('/'));
}

// Keeps the planned instances of `shard`; adds the plan's context keys.
absl::StatusOr<std::vector<PlannedInstance>> SelectShard(
    const std::vector<PlannedInstance>& planned, const Shard& shard,
    const std::string& costs_path, ContextPairs* context) {
  std::map<std::string, ShardUnit> units;
  for (const auto& p : planned) {
    ShardUnit& unit = units[p.entry->spec.name];
    unit.model = p.entry->spec.name;
    unit.instances.push_back(p.name);
    // Without measured times: parameter count as the proxy (a model with
    // none, like pyhpc, still costs a setup), per instance.
    const double params = static_cast<double>(
        std::max<int64_t>(p.entry->spec.reference_parameters, 0));
    unit.cost += params + 1e6;
  }
  std::string basis = "parameter counts";
  if (!costs_path.empty()) {
    auto costs = ReadModelCosts(costs_path);
    if (!costs.ok()) return costs.status();
    std::vector<double> known;
    for (const auto& [model, cost] : *costs) known.push_back(cost);
    std::sort(known.begin(), known.end());
    const double median = known.empty() ? 1.0 : known[known.size() / 2];
    for (auto& [model, unit] : units) {
      auto it = costs->find(model);
      unit.cost = it != costs->end() ? it->second : median;
    }
    basis = absl::StrCat("times in ",
                         std::filesystem::path(costs_path).filename().string());
  }
  std::vector<ShardUnit> list;
  for (auto& [model, unit] : units) list.push_back(std::move(unit));
  const ShardPlan plan = PlanShards(std::move(list), shard.count);
  const auto& mine = plan.assignment[static_cast<size_t>(shard.index)];
  const std::set<std::string> models(mine.begin(), mine.end());
  std::vector<PlannedInstance> selected;
  std::vector<std::string> names;
  for (const auto& p : planned) {
    if (models.count(p.entry->spec.name) > 0) {
      selected.push_back(p);
      names.push_back(p.name);
    }
  }
  context->emplace_back("torchbench_shard",
                        absl::StrCat(shard.index, "/", shard.count));
  context->emplace_back("torchbench_shard_plan", plan.hash);
  context->emplace_back("torchbench_shard_basis", basis);
  context->emplace_back("torchbench_shard_instances",
                        absl::StrJoin(names, ","));
  size_t total_models = 0;
  for (const auto& models_of_shard : plan.assignment) {
    total_models += models_of_shard.size();
  }
  std::cerr << "torchbench: shard " << shard.index << "/" << shard.count << ": "
            << models.size() << " of " << total_models << " models, "
            << names.size() << " instances (plan " << plan.hash
            << ", balanced by " << basis << ")\n";
  return selected;
}

// An isolated child's arguments: the parent's own, minus what the parent
// does itself (filtering, sharding, journaling, output), plus its one
// instance and the file to journal it to.
std::vector<std::string> ChildArgs(const std::vector<std::string>& original,
                                   const std::string& instance,
                                   const std::string& result_path) {
  std::vector<std::string> args;
  for (size_t i = 1; i < original.size(); ++i) {
    if (StartsWithAny(
            original[i],
            {"--torchbench_isolate", "--torchbench_journal",
             "--torchbench_resume", "--torchbench_shard",
             "--torchbench_instance_timeout", "--torchbench_child_result",
             "--benchmark_filter", "--benchmark_out", "--benchmark_format",
             "--benchmark_color", "--benchmark_list_tests",
             "--benchmark_display_aggregates_only",
             "--benchmark_report_aggregates_only"})) {
      continue;
    }
    args.push_back(original[i]);
  }
  args.push_back(
      absl::StrCat("--benchmark_filter=^", EscapeRegex(instance), "$"));
  args.push_back("--benchmark_format=console");
  args.push_back("--benchmark_color=false");
  args.push_back("--torchbench_shard=0/1");
  args.push_back(absl::StrCat("--torchbench_child_result=", result_path));
  return args;
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

struct DirectRun {
  std::string out_path;  // --benchmark_out, or "".
  size_t name_width = 0;
  bool isolate = false;
  ChildOptions child;  // executable and timeout.
  std::vector<std::string> original_args;
};

// Reports without Google Benchmark's loop: each remaining instance in a
// child process (or none left to run: a resumed run that is complete, an
// empty shard). Returns false when --benchmark_out cannot be written.
bool RunDirect(const DirectRun& run, const std::vector<PlannedInstance>& todo,
               benchmark::BenchmarkReporter* display,
               benchmark::BenchmarkReporter* file) {
  std::ofstream out;
  display->SetOutputStream(&std::cout);
  display->SetErrorStream(&std::cerr);
  if (file != nullptr) {
    out.open(run.out_path);
    if (!out.is_open()) {
      std::cerr << "torchbench: cannot write --benchmark_out='" << run.out_path
                << "'\n";
      return false;
    }
    file->SetOutputStream(&out);
    file->SetErrorStream(&out);
  }
  benchmark::BenchmarkReporter::Context context;
  context.name_field_width = run.name_width;
  display->ReportContext(context);
  if (file != nullptr) file->ReportContext(context);

  std::string scratch;
  if (!todo.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = absl::StrCat(tmp != nullptr && *tmp ? tmp : "/tmp",
                                       "/torchbench-XXXXXX");
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::cerr << "torchbench: cannot create a temporary directory in "
                << pattern << "\n";
      return false;
    }
    scratch = pattern;
  }
  int64_t index = 0;
  Progress progress(static_cast<int64_t>(todo.size()));
  for (const PlannedInstance& p : todo) {
    if (Interrupted()) break;
    const auto start = std::chrono::steady_clock::now();
    ChildOptions child = run.child;
    child.result_path = absl::StrCat(scratch, "/instance-", index, ".jsonl");
    child.args = ChildArgs(run.original_args, p.name, child.result_path);
    auto record = RunChild(p.name, child);
    if (!record.ok() && absl::IsCancelled(record.status())) break;
    if (!record.ok()) {
      record = ErrorRecord(p.name, std::string(record.status().message()));
    }
    for (auto& r : record->runs) {
      r.family_index = index;
      r.per_family_instance_index = 0;
    }
    Report(display, *record);
    Report(file, *record);
    ++index;
    std::cout << std::flush;
    std::cerr << progress.Finished(p.name,
                                   std::chrono::duration<double>(
                                       std::chrono::steady_clock::now() - start)
                                       .count())
              << std::endl;
  }
  display->Finalize();
  if (file != nullptr) file->Finalize();
  if (!scratch.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(scratch, ignored);
  }
  return true;
}

// The torchbench program and RunBenchmarks. `caller_benchmarks`: other
// benchmarks may be registered beside TorchBench's.
}  // namespace

int RunMain(int argc, char** argv, bool caller_benchmarks) {
  const std::vector<std::string> original_args(argv, argv + argc);
  auto flags = ParseHarnessFlags(&argc, argv);
  if (!flags.ok()) {
    std::cerr << "torchbench: " << flags.status().message() << "\n";
    return 2;
  }
  if (flags->help) {
    std::cout << HarnessFlagsHelp();
    return 0;
  }
  const bool child = !flags->child_result.empty();
  if (caller_benchmarks &&
      (flags->isolate || child || !flags->journal.empty() ||
       !flags->resume.empty() || flags->shard || !flags->shard_costs.empty())) {
    std::cerr << "torchbench: --torchbench_isolate, _journal, _resume and "
                 "_shard are flags of the torchbench program, not of "
                 "torchbench::RunBenchmarks\n";
    return 2;
  }
  const std::string host_malloc = ApplyHostMalloc(flags->host_malloc);
  if (flags->cpu_memory_counter) InstallCpuMemoryCounter();
  if (!flags->testonly_slow_op.empty()) {
    const absl::Status installed =
        InstallSlowOp(*ParseSlowOp(flags->testonly_slow_op));
    if (!installed.ok()) {
      std::cerr << "torchbench: " << installed.message() << "\n";
      return 2;
    }
  }
  if (flags->list_models) {
    return ListModels(Registry::Global(), *flags->list_models, std::cout) ? 0
                                                                          : 1;
  }
  std::optional<Shard> shard = flags->shard;
  if (!shard && !caller_benchmarks) {
    auto from_env = ShardFromEnvironment(
        [](const char* name) -> const char* { return std::getenv(name); });
    if (!from_env.ok()) {
      std::cerr << "torchbench: " << from_env.status().message() << "\n";
      return 2;
    }
    shard = *from_env;
  }

  c10::Device device = DefaultDevice();
  if (!flags->device.empty()) {
    auto parsed = ParseDevice(flags->device);
    if (!parsed.ok()) {
      std::cerr << "torchbench: " << parsed.status().message() << "\n";
      return 2;
    }
    device = *parsed;
  }

  // The journal needs every repetition whatever is shown, so the
  // aggregates-only flags are applied by ResultsReporter, not by Google
  // Benchmark.
  bool display_aggregates_only = false;
  bool report_aggregates_only = false;
  if (!caller_benchmarks) {
    display_aggregates_only =
        IsTrue(TakeFlag(&argc, argv, "benchmark_display_aggregates_only"));
    report_aggregates_only =
        IsTrue(TakeFlag(&argc, argv, "benchmark_report_aggregates_only"));
  }
  const std::string out_path = FlagValue(argc, argv, "benchmark_out", "");
  const int64_t repetitions = std::max<int64_t>(
      1,
      std::atoll(FlagValue(argc, argv, "benchmark_repetitions", "1").c_str()));

  // Google Benchmark's output flags, read from argv before Initialize()
  // consumes them; the reporters are made once the journal is known.
  const std::vector<std::string> benchmark_args(argv, argv + argc);
  bool list_tests = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--benchmark_list_tests" ||
        arg == "--benchmark_list_tests=true") {
      list_tests = true;
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  const std::string filter = benchmark::GetBenchmarkFilter();
  if (const std::string error = FilterError(filter); !error.empty()) {
    std::cerr << "torchbench: --benchmark_filter='" << filter
              << "' is not a valid regular expression: " << error << "\n";
    return 2;
  }

  // Google Benchmark's listing would show "/manual_time" on TorchBench's
  // names, so the caller's are listed first, by Google Benchmark, and
  // TorchBench's after them, by the harness.
  size_t listed = 0;
  if (list_tests && caller_benchmarks) listed = ListCallerBenchmarks(filter);

  RunOptions options;
  options.device = device;
  options.precision = flags->precision;
  options.optimizer = flags->optimizer;
  options.count_ops = flags->count_ops;
  options.profile_steps = flags->profile ? flags->profile_steps : 0;
  options.trace_dir = flags->trace_dir;
  options.profile_shapes = flags->profile_shapes;
  options.channels_last = flags->channels_last;
  SetLiveInstanceWeights(flags->weights);
  options.warmup_steps = flags->warmup_steps;
  options.seed = flags->seed;
  options.batch_sizes = flags->batch_sizes;
  options.filter = filter;
  options.op_coverage_file = flags->op_coverage;
  std::vector<RegistrationNote> notes;
  std::vector<PlannedInstance> planned =
      PlanInstances(Registry::Global(), options, &notes);
  const bool selected_any = !planned.empty();
  ContextPairs context = RunContext(device, *flags);
  context.emplace_back("host_malloc", host_malloc);
  // Each selected model's domain, for reports grouping results by domain;
  // taken before sharding so every shard (and a merge of them) names all.
  {
    std::map<std::string, std::string> domains;
    for (const auto& p : planned) {
      domains[p.entry->spec.name] = p.entry->spec.domain;
    }
    std::vector<std::string> pairs;
    for (const auto& [model, domain] : domains) {
      pairs.push_back(absl::StrCat(model, ":", domain));
    }
    context.emplace_back("torchbench_model_domains", absl::StrJoin(pairs, ","));
  }
  // A shard asked for, even 1/1, is named in the context, so `tools/tb merge`
  // can check a one-shard run like any other; children (always 0/1) skip it.
  if (shard && (shard->count > 1 || flags->child_result.empty())) {
    auto selected = SelectShard(planned, *shard, flags->shard_costs, &context);
    if (!selected.ok()) {
      std::cerr << "torchbench: " << selected.status().message() << "\n";
      return 2;
    }
    planned = *std::move(selected);
  }
  std::set<std::string> models;
  for (const auto& p : planned) models.insert(p.entry->spec.name);
  for (const auto& note : notes) {
    if (!child && FilterSelects(filter, note.benchmark) &&
        (!shard || models.count(ModelOf(note.benchmark)) > 0)) {
      std::cerr << "torchbench: note: " << note.text << "\n";
    }
  }
  if (list_tests) {
    for (const auto& p : planned) std::cout << p.name << "\n";
    listed += planned.size();
    return listed > 0 || (shard && selected_any) ? 0 : NoMatch(filter);
  }
  if (!selected_any && !caller_benchmarks) return NoMatch(filter);
  for (const auto& [key, value] : context) {
    benchmark::AddCustomContext(key, value);
  }

  // Resume: report what the journal holds, run the rest.
  std::vector<InstanceRecord> replay;
  if (!flags->resume.empty()) {
    auto journal = ReadJournal(flags->resume);
    if (absl::IsNotFound(journal.status())) {
      std::cerr << "torchbench: note: --torchbench_resume=" << flags->resume
                << " does not exist yet; starting it\n";
    } else if (!journal.ok()) {
      std::cerr << "torchbench: " << journal.status().message() << "\n";
      return 2;
    } else {
      if (!journal->warning.empty()) {
        std::cerr << "torchbench: note: " << journal->warning << "\n";
      }
      if (const std::string diff = JournalMismatch(journal->context, context);
          !diff.empty()) {
        std::cerr << "torchbench: --torchbench_resume=" << flags->resume
                  << " was written by a different setup (" << diff
                  << "); resume with the same build and flags, or start a "
                     "new journal\n";
        return 2;
      }
      std::map<std::string, InstanceRecord*> held;
      for (auto& record : journal->records) held[record.instance] = &record;
      std::vector<PlannedInstance> todo;
      for (const auto& p : planned) {
        if (auto it = held.find(p.name); it != held.end()) {
          replay.push_back(std::move(*it->second));
        } else {
          todo.push_back(p);
        }
      }
      std::cerr << "torchbench: resuming " << flags->resume << ": "
                << replay.size() << " instance(s) done, " << todo.size()
                << " to run\n";
      planned = std::move(todo);
    }
  }
  // The coverage file starts with the registry, the denominator; isolated
  // children append their instances, and a resumed run keeps what is there.
  if (!flags->op_coverage.empty() && !child && !list_tests) {
    std::error_code ec;
    const bool keep = !flags->resume.empty() &&
                      std::filesystem::file_size(flags->op_coverage, ec) > 0 &&
                      !ec;
    if (!keep) {
      // torchvision's operators register when their library loads, which
      // the models that use them do lazily: loaded now, they are in the
      // registry too (a library that cannot load leaves them out, and those
      // models fail with its message).
      (void)vision_ops::Load();
      const absl::Status written =
          AppendCoverageLine(flags->op_coverage,
                             CoverageRegistryLine(TORCH_VERSION, device.str(),
                                                  RegisteredOperators()),
                             /*truncate=*/true);
      if (!written.ok()) {
        std::cerr << "torchbench: " << written.message() << "\n";
        return 2;
      }
    }
  }
  std::unique_ptr<JournalWriter> journal;
  const std::string journal_path =
      child ? flags->child_result
            : (!flags->journal.empty() ? flags->journal : flags->resume);
  if (!journal_path.empty()) {
    auto opened = JournalWriter::Open(journal_path, context);
    if (!opened.ok()) {
      std::cerr << "torchbench: " << opened.status().message() << "\n";
      return 2;
    }
    journal = *std::move(opened);
  }
  InstallInterruptHandler(/*announce=*/!child);

  // Reporter chain: ExactNameReporter (drops "/manual_time") ->
  // ProfilingReporter (the profiling pass, after an instance's repetitions)
  // -> ResultsReporter (resume, journal, aggregates-only) -> console/JSON. A
  // child reports only to its journal.
  ResultsReporter* display = nullptr;
  ResultsReporter* file = nullptr;
  auto wrap =
      [&](std::unique_ptr<benchmark::BenchmarkReporter> inner,
          bool is_file) -> std::unique_ptr<benchmark::BenchmarkReporter> {
    if (child && !is_file) inner = std::make_unique<NullReporter>();
    auto results = std::make_unique<ResultsReporter>(
        std::move(inner),
        ResultsReporter::Options{
            .journal = is_file ? nullptr : journal.get(),
            .replay = replay,
            .aggregates_only = report_aggregates_only ||
                               (!is_file && display_aggregates_only)});
    (is_file ? file : display) = results.get();
    return std::make_unique<ProfilingReporter>(std::move(results));
  };
  auto owned = std::make_shared<std::set<std::string>>();
  std::vector<char*> bargv;
  for (const auto& a : benchmark_args)
    bargv.push_back(const_cast<char*>(a.c_str()));
  bargv.push_back(nullptr);
  Reporters reporters = MakeReporters(
      static_cast<int>(benchmark_args.size()), bargv.data(),
      [owned](const auto& name) { return owned->count(name) > 0; }, wrap);

  if ((flags->isolate && !child) || (planned.empty() && !caller_benchmarks)) {
    DirectRun run;
    run.out_path = out_path;
    run.isolate = flags->isolate;
    run.original_args = original_args;
    run.child.executable = "/proc/self/exe";
    run.child.timeout_seconds = flags->instance_timeout;
    for (const auto& p : planned) {
      run.name_width = std::max(run.name_width, p.name.size());
    }
    if (repetitions > 1) run.name_width += 7;  // "_median"
    if (!RunDirect(run, planned, reporters.display.get(),
                   reporters.file.get())) {
      return 1;
    }
  } else {
    RegisterInstances(planned, options);
    std::vector<std::string> names;
    for (const auto& p : planned) names.push_back(p.name);
    owned->insert(names.begin(), names.end());
    const std::string spec =
        caller_benchmarks ? GoogleBenchmarkFilter(filter, names) : "all";
    const size_t ran = benchmark::RunSpecifiedBenchmarks(
        reporters.display.get(), reporters.file.get(), spec);
    ReleaseLiveInstance();
    if (ran == 0 && !Interrupted()) return NoMatch(filter);
  }
  benchmark::Shutdown();

  if (Interrupted()) {
    std::cerr << "torchbench: interrupted after " << display->finished()
              << " finished instance(s)";
    if (!out_path.empty()) std::cerr << "; " << out_path << " has them";
    if (!journal_path.empty() && !child) {
      std::cerr << "; continue with --torchbench_resume=" << journal_path;
    }
    std::cerr << "\n";
    return 130;
  }
  const int errored =
      caller_benchmarks ? ErroredInstances() : display->errored();
  if (errored > 0) {
    std::cerr << "torchbench: " << errored
              << " benchmark run(s) errored (see error_message above)";
    if (flags->fail_on_error) {
      std::cerr << "; exiting 1 (--torchbench_fail_on_error=false to exit 0)\n";
      return 1;
    }
    std::cerr << "\n";
  }
  return 0;
}

}  // namespace torchbench
