#include "program/benchmark_runner.h"

#include <benchmark/benchmark.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/torch.h>

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "memory_internal.h"
#include "program/filters.h"
#include "program/flop_counter.h"
#include "program/list_models.h"
#include "program/machine_peak.h"
#include "program/plan.h"
#include "program/run_loop.h"
#include "torchbench/memory.h"

namespace torchbench {
namespace {

class GoodModel final : public Model {
 public:
  explicit GoodModel(const ModelConfig& config)
      : x_(torch::ones({config.batch_size, 4})) {}
  torch::Tensor Step() override { return x_ * 2; }
  torch::nn::Module& module() override { return module_; }

 private:
  torch::nn::Module module_;
  torch::Tensor x_;
};

class ThrowsInSetup final : public Model {
 public:
  explicit ThrowsInSetup(const ModelConfig&) {
    throw std::runtime_error("cannot build this model");
  }
  torch::Tensor Step() override { return {}; }
  torch::nn::Module& module() override { return module_; }

 private:
  torch::nn::Module module_;
};

// Fails on the step after warm-up, like an out-of-memory error mid-run.
class ThrowsInStep final : public Model {
 public:
  explicit ThrowsInStep(const ModelConfig&) {}
  torch::Tensor Step() override {
    TORCH_CHECK(++steps_ <= 1, "CUDA out of memory (simulated)");
    return torch::ones({1});
  }
  torch::nn::Module& module() override { return module_; }

 private:
  int steps_ = 0;
  torch::nn::Module module_;
};

class NanLoss final : public Model {
 public:
  explicit NanLoss(const ModelConfig&) {}
  torch::Tensor Step() override {
    return torch::full({1}, std::numeric_limits<float>::quiet_NaN());
  }
  torch::nn::Module& module() override { return module_; }

 private:
  torch::nn::Module module_;
};

// Logs, for every step, whether the Kineto profiler was on.
std::vector<bool>& ProfiledSteps() {
  static std::vector<bool> steps;
  return steps;
}

class LogsProfiledSteps final : public Model {
 public:
  explicit LogsProfiledSteps(const ModelConfig&) {}
  torch::Tensor Step() override {
    ProfiledSteps().push_back(
        torch::autograd::profiler::isProfilerEnabledInMainThread());
    return torch::ones({1}) * 2;
  }
  torch::nn::Module& module() override { return module_; }

 private:
  torch::nn::Module module_;
};

// Logs, for every step, whether a FlopCounter was installed; one 8x8 mm.
std::vector<bool>& FlopCountedSteps() {
  static std::vector<bool> steps;
  return steps;
}

class LogsFlopCountedSteps final : public Model {
 public:
  explicit LogsFlopCountedSteps(const ModelConfig&) {}
  torch::Tensor Step() override {
    FlopCountedSteps().push_back(FlopCounter::Active());
    return torch::mm(a_, a_);
  }
  torch::nn::Module& module() override { return module_; }

 private:
  torch::nn::Module module_;
  torch::Tensor a_ = torch::ones({8, 8});
};

ModelSpec Spec(const std::string& name, bool fixed = false) {
  ModelSpec spec;
  spec.name = name;
  spec.domain = "test";
  spec.train_batch_size = 4;
  spec.eval_batch_size = 8;
  spec.fixed_batch_size = fixed;
  return spec;
}

// Collects every run reported.
class CollectingReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& run : runs) by_name[run.run_name.function_name] = run;
  }
  std::map<std::string, Run> by_name;
};

// Plans `registry` with `options` and runs the plan through the program's
// run loop in this process (the caller's own benchmarks first when
// `caller_filter` is set); returns every run by name.
std::map<std::string, BenchmarkRun> RunPlanned(
    const Registry& registry, const RunOptions& options, int* errored = nullptr,
    const std::string& caller_filter = "") {
  const auto planned = PlanInstances(registry, options, nullptr);
  RunState state(options);
  LoopOptions loop;
  loop.caller_filter = caller_filter;
  CollectingReporter reporter;
  EXPECT_TRUE(RunLoop(planned, loop, &state, &reporter, nullptr));
  if (errored != nullptr) *errored = state.errored();
  return reporter.by_name;
}

class BenchmarkRunnerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    static char arg0[] = "test";
    static char arg1[] = "--benchmark_min_time=0.001";
    static char* argv[] = {arg0, arg1, nullptr};
    int argc = 2;
    benchmark::Initialize(&argc, argv);
    InstallCpuMemoryCounter();  // As RunMain does.
  }
  void TearDown() override { benchmark::ClearRegisteredBenchmarks(); }
};

TEST(PlanTest, NamesEveryModelModeAndBatchSize) {
  Registry registry;
  ASSERT_TRUE(registry.Add(Spec("free"), MakeModel<GoodModel>(), "f", 1).ok());
  ModelSpec eval_only = Spec("fixed", /*fixed=*/true);
  eval_only.modes = {Mode::kEval};
  ASSERT_TRUE(registry.Add(eval_only, MakeModel<GoodModel>(), "f", 2).ok());

  RunOptions defaults;
  auto names = InstanceNames(PlanInstances(registry, defaults, nullptr));
  EXPECT_EQ(names, (std::vector<std::string>{"fixed/Eval/batch_size:8",
                                             "free/Train/batch_size:4",
                                             "free/Eval/batch_size:8"}));

  RunOptions sized;
  sized.batch_sizes = {1, 32};
  std::vector<RegistrationNote> notes;
  names = InstanceNames(PlanInstances(registry, sized, &notes));
  EXPECT_EQ(names, (std::vector<std::string>{
                       "fixed/Eval/batch_size:8", "free/Train/batch_size:1",
                       "free/Train/batch_size:32", "free/Eval/batch_size:1",
                       "free/Eval/batch_size:32"}));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].benchmark, "fixed/Eval/batch_size:8");
  EXPECT_NE(notes[0].text.find("fixed batch size"), std::string::npos);
}

// The flags reach every instance's options through one function.
TEST(PlanTest, RunOptionsComeFromTheFlags) {
  HarnessFlags flags;
  flags.precision = Precision::kBf16;
  flags.profile_steps = 7;
  flags.warmup_steps = 0;
  flags.batch_sizes = {2};
  RunOptions options = RunOptionsFrom(flags, c10::kCPU, "^x$");
  EXPECT_EQ(options.precision, Precision::kBf16);
  EXPECT_EQ(options.profile_steps, 0) << "profiling is off until asked for";
  EXPECT_EQ(options.warmup_steps, 0);
  EXPECT_EQ(options.batch_sizes, std::vector<int64_t>{2});
  EXPECT_EQ(options.filter, "^x$");
  flags.profile = true;
  EXPECT_EQ(RunOptionsFrom(flags, c10::kCPU, "").profile_steps, 7);
}

// A resumed journal's instances are reported from it, in plan order; the
// rest runs.
TEST(PlanTest, SplitResumedKeepsPlanOrder) {
  Registry registry;
  ASSERT_TRUE(registry.Add(Spec("a"), MakeModel<GoodModel>(), "f", 1).ok());
  ASSERT_TRUE(registry.Add(Spec("b"), MakeModel<GoodModel>(), "f", 2).ok());
  const auto planned = PlanInstances(registry, RunOptions{}, nullptr);
  ResumeSplit split =
      SplitResumed(planned, {ErrorRecord("b/Eval/batch_size:8", "x"),
                             ErrorRecord("a/Train/batch_size:4", "y"),
                             ErrorRecord("gone/Eval/batch_size:1", "z")});
  ASSERT_EQ(split.replay.size(), 2u);
  EXPECT_EQ(split.replay[0].instance, "a/Train/batch_size:4");
  EXPECT_EQ(split.replay[1].instance, "b/Eval/batch_size:8");
  EXPECT_EQ(InstanceNames(split.todo),
            (std::vector<std::string>{"a/Eval/batch_size:8",
                                      "b/Train/batch_size:4"}));
}

TEST(ResolveBatchSizesTest, RaisesRequestsBelowTheSmallestValidBatch) {
  ModelSpec spec = Spec("bn");
  spec.min_train_batch_size = 2;
  spec.min_batch_size_reason = "BatchNorm over a 1x1 map";
  std::vector<RegistrationNote> notes;
  EXPECT_EQ(ResolveBatchSizes(spec, Mode::kTrain, {1, 2, 8}, &notes),
            (std::vector<int64_t>{2, 8}));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].benchmark, "bn/Train/batch_size:2");
  EXPECT_NE(notes[0].text.find("BatchNorm over a 1x1 map"), std::string::npos)
      << notes[0].text;
  EXPECT_NE(notes[0].text.find("instead of 1"), std::string::npos);
  notes.clear();
  EXPECT_EQ(ResolveBatchSizes(spec, Mode::kEval, {1}, &notes),
            (std::vector<int64_t>{1}));
  EXPECT_TRUE(notes.empty());
  EXPECT_EQ(ResolveBatchSizes(spec, Mode::kTrain, {}, &notes),
            (std::vector<int64_t>{4}));
  EXPECT_TRUE(notes.empty());
}

TEST(FilterSelectsTest, FollowsGoogleBenchmarkRules) {
  EXPECT_TRUE(FilterSelects("", "resnet50/Eval/batch_size:1"));
  EXPECT_TRUE(FilterSelects("all", "resnet50/Eval/batch_size:1"));
  EXPECT_TRUE(FilterSelects("resnet.*Eval", "resnet50/Eval/batch_size:1"));
  EXPECT_FALSE(
      FilterSelects("resnet.*Eval", "resnext50_32x4d/Eval/batch_size:1"));
  EXPECT_FALSE(
      FilterSelects("BERT.*Train", "soft_actor_critic/Train/batch_size:256"));
  EXPECT_FALSE(
      FilterSelects("-soft", "soft_actor_critic/Train/batch_size:256"));
  EXPECT_TRUE(FilterSelects("-soft", "dlrm/Train/batch_size:2"));
}

TEST(FilterErrorTest, NamesBadPatterns) {
  EXPECT_EQ(FilterError(""), "");
  EXPECT_EQ(FilterError("^resnet50/Eval/batch_size:1$"), "");
  EXPECT_NE(FilterError("resnet(50"), "");
  EXPECT_NE(FilterError("-[a"), "");
}

void UsersOwnBenchmark(benchmark::State& state) {
  for (auto _ : state) state.SetIterationTime(1e-6);
}

// Runs what `filter` selects among the fake models and two benchmarks of a
// user's own, the way RunBenchmarks does; returns the reported names.
std::vector<std::string> RunSelected(const Registry& registry,
                                     const std::string& filter) {
  benchmark::RegisterBenchmark("users_own", UsersOwnBenchmark)->UseManualTime();
  benchmark::RegisterBenchmark("users_other", UsersOwnBenchmark);
  RunOptions options;
  options.warmup_steps = 0;
  options.filter = filter;
  const auto runs =
      RunPlanned(registry, options, nullptr, filter.empty() ? "all" : filter);
  benchmark::ClearRegisteredBenchmarks();
  std::vector<std::string> ran;
  for (const auto& [name, run] : runs) ran.push_back(name);
  return ran;
}

TEST_F(BenchmarkRunnerTest, ExactFiltersSelectExactlyTheNamesPrinted) {
  Registry registry;
  ASSERT_TRUE(registry.Add(Spec("free"), MakeModel<GoodModel>(), "f", 1).ok());
  ASSERT_TRUE(registry.Add(Spec("free2"), MakeModel<GoodModel>(), "f", 2).ok());
  using Names = std::vector<std::string>;
  EXPECT_EQ(RunSelected(registry, "^free/Eval/batch_size:8$"),
            Names{"free/Eval/batch_size:8"});
  EXPECT_EQ(RunSelected(registry, "^free/Train/batch_size:4$|^users_own"),
            (Names{"free/Train/batch_size:4", "users_own"}));
  EXPECT_EQ(RunSelected(registry, "free2"),
            (Names{"free2/Eval/batch_size:8", "free2/Train/batch_size:4"}));
  EXPECT_EQ(RunSelected(registry, "-free|users_other"), (Names{"users_own"}));
  EXPECT_EQ(RunSelected(registry, "-^free/|users"),
            (Names{"free2/Eval/batch_size:8", "free2/Train/batch_size:4"}));
  EXPECT_EQ(RunSelected(registry, "").size(), 6u);
}

// An isolated child is told its one instance and where to journal it, and
// none of what its parent does itself.
TEST(RunLoopTest, ChildArgsDropWhatTheParentDoes) {
  const std::vector<std::string> args =
      ChildArgs({"torchbench", "--torchbench_isolate=process",
                 "--torchbench_journal=j", "--torchbench_shard=1/4",
                 "--benchmark_filter=resnet", "--benchmark_out=o.json",
                 "--torchbench_batch_sizes=1", "--benchmark_repetitions=3"},
                "hf_T5/Eval/batch_size:1", "/tmp/r.jsonl");
  EXPECT_EQ(args, (std::vector<std::string>{
                      "--torchbench_batch_sizes=1", "--benchmark_repetitions=3",
                      "--benchmark_filter=^hf_T5/Eval/batch_size:1$",
                      "--benchmark_format=console", "--benchmark_color=false",
                      "--torchbench_shard=0/1",
                      "--torchbench_child_result=/tmp/r.jsonl"}));
}

TEST_F(BenchmarkRunnerTest, ErrorsSkipTheirInstanceAndTheRunGoesOn) {
  Registry registry;
  ASSERT_TRUE(
      registry.Add(Spec("a_setup"), MakeModel<ThrowsInSetup>(), "f", 1).ok());
  ASSERT_TRUE(
      registry.Add(Spec("b_step"), MakeModel<ThrowsInStep>(), "f", 2).ok());
  ASSERT_TRUE(registry.Add(Spec("c_nan"), MakeModel<NanLoss>(), "f", 3).ok());
  ASSERT_TRUE(
      registry.Add(Spec("d_good"), MakeModel<GoodModel>(), "f", 4).ok());
  RunOptions options;
  options.warmup_steps = 1;
  int errored = 0;
  const auto runs = RunPlanned(registry, options, &errored);

  ASSERT_EQ(runs.size(), 8u);
  for (const char* mode : {"Train", "Eval"}) {
    const std::string suffix = std::string("/") + mode + "/batch_size:" +
                               (std::string(mode) == "Train" ? "4" : "8");
    const auto& setup = runs.at("a_setup" + suffix);
    EXPECT_TRUE(setup.error_occurred);
    EXPECT_NE(setup.error_message.find("cannot build this model"),
              std::string::npos);
    const auto& step = runs.at("b_step" + suffix);
    EXPECT_TRUE(step.error_occurred);
    EXPECT_NE(step.error_message.find("out of memory"), std::string::npos)
        << step.error_message;
    EXPECT_EQ(step.error_message.find("Exception raised from"),
              std::string::npos)
        << "the C++ backtrace belongs in logs, not in the error line";
    const auto& nan = runs.at("c_nan" + suffix);
    EXPECT_TRUE(nan.error_occurred);
    EXPECT_NE(nan.error_message.find("not finite"), std::string::npos);
    const auto& good = runs.at("d_good" + suffix);
    EXPECT_FALSE(good.error_occurred) << good.error_message;
    EXPECT_GT(good.iterations, 0);
    EXPECT_GT(good.counters.at("items_per_second").value, 0);
    EXPECT_EQ(good.counters.at("batch_size").value,
              std::string(mode) == "Train" ? 4 : 8);
    EXPECT_GE(good.counters.at("peak_mem").value, 0);
  }
  EXPECT_EQ(errored, 6);
}

TEST_F(BenchmarkRunnerTest, ProfileCountersJoinEachRepetition) {
  Registry registry;
  ASSERT_TRUE(registry.Add(Spec("prof"), MakeModel<GoodModel>(), "f", 1).ok());
  RunOptions options;
  options.warmup_steps = 0;
  options.profile_steps = 2;
  options.filter = "^prof/Eval/";
  const auto runs = RunPlanned(registry, options);
  ASSERT_EQ(runs.size(), 1u);
  const auto& run = runs.at("prof/Eval/batch_size:8");
  ASSERT_FALSE(run.error_occurred) << run.error_message;
  EXPECT_EQ(run.counters.at("aten_ops_per_step").value, 1);  // x * 2
  EXPECT_EQ(run.counters.at("would_sync_per_step").value, 0);
  EXPECT_EQ(run.counters.at("profile_steps").value, 2);
  EXPECT_EQ(run.counters.count("gpu_idle_pct"), 0u);  // CPU: absent
}

// The profiling pass follows the measured repetitions: a CUPTI session
// before them would shift what they measure.
TEST_F(BenchmarkRunnerTest, ProfilesAfterTheLastRepetition) {
  Registry registry;
  ASSERT_TRUE(
      registry.Add(Spec("log"), MakeModel<LogsProfiledSteps>(), "f", 1).ok());
  RunOptions options;
  options.warmup_steps = 0;
  options.profile_steps = 2;
  options.filter = "^log/Eval/";
  static char arg0[] = "test";
  static char three[] = "--benchmark_repetitions=3";
  static char one[] = "--benchmark_repetitions=1";
  char* with_repetitions[] = {arg0, three, nullptr};
  int argc = 2;
  benchmark::Initialize(&argc, with_repetitions);
  ProfiledSteps().clear();
  const auto runs = RunPlanned(registry, options);
  char* without[] = {arg0, one, nullptr};
  argc = 2;
  benchmark::Initialize(&argc, without);

  const std::vector<bool>& steps = ProfiledSteps();
  const auto first_profiled = std::find(steps.begin(), steps.end(), true);
  ASSERT_NE(first_profiled, steps.end());
  // Every unprofiled step (three measured repetitions) comes first, then
  // the discarded step and the 2 + 1 profiled ones.
  EXPECT_EQ(std::count(first_profiled, steps.end(), false), 0);
  EXPECT_EQ(steps.end() - first_profiled, 1 + 2 + 1);
  EXPECT_GE(first_profiled - steps.begin(), 3);
  // The last run reported (an aggregate) carries the counters too.
  const auto& last = runs.at("log/Eval/batch_size:8");
  EXPECT_EQ(last.counters.count("profile_steps"), 1u);
}

// The FLOP pass is one untimed step in Prepare: no timed step of any
// repetition runs with the counter's callback installed.
TEST_F(BenchmarkRunnerTest, FlopsAreNeverCountedInATimedStep) {
  Registry registry;
  ASSERT_TRUE(
      registry.Add(Spec("mm"), MakeModel<LogsFlopCountedSteps>(), "f", 1).ok());
  RunOptions options;
  options.warmup_steps = 1;
  options.count_flops = true;
  options.peaks = *ParsePeaks("float32=1e9,copy=1e9,threads=1");
  options.filter = "^mm/Eval/";
  static char arg0[] = "test";
  static char three[] = "--benchmark_repetitions=3";
  static char one[] = "--benchmark_repetitions=1";
  char* with_repetitions[] = {arg0, three, nullptr};
  int argc = 2;
  benchmark::Initialize(&argc, with_repetitions);
  FlopCountedSteps().clear();
  RunPlanned(registry, options);
  char* without[] = {arg0, one, nullptr};
  argc = 2;
  benchmark::Initialize(&argc, without);

  // Warm-up, the counted step, then only uncounted (timed) ones.
  const std::vector<bool>& steps = FlopCountedSteps();
  ASSERT_GE(steps.size(), 2u + 3u);
  EXPECT_FALSE(steps[0]);
  EXPECT_TRUE(steps[1]);
  EXPECT_EQ(std::count(steps.begin(), steps.end(), true), 1);

  const auto runs = RunPlanned(registry, options);
  const auto& run = runs.at("mm/Eval/batch_size:8");
  EXPECT_EQ(run.counters.at("flops_per_step").value, 2 * 8 * 8 * 8);
  EXPECT_EQ(run.counters.at("flops_forward").value, 2 * 8 * 8 * 8);
  EXPECT_EQ(run.counters.count("flops_backward"), 0u);  // Eval
  const double rate = run.counters.at("flop_rate").value;
  ASSERT_GT(rate, 0);
  // Both divide by the step time: share / rate is 1 / the 1e9 FLOP/s peak.
  EXPECT_NEAR(run.counters.at("peak_share").value / rate * 1e9, 1.0, 1e-9);
  // The mm reads two 8x8 float32 matrices and writes one: 768 bytes, at
  // 1e9 B/s 0.77 us against 1.02 us of FLOPs: compute-bound.
  EXPECT_EQ(run.counters.at("product_bytes").value, 3 * 8 * 8 * 4);
  EXPECT_EQ(run.counters.at("memory_bound_share").value, 0);
  EXPECT_NEAR(run.counters.at("roofline_share").value,
              run.counters.at("peak_share").value, 1e-12);
}

TEST_F(BenchmarkRunnerTest,
       PrecisionsResolvePerModelAndUnrunnableOnesAreSkipped) {
  Registry registry;
  ModelSpec half_eval = Spec("a_half_eval");
  half_eval.default_cuda_eval_precision = Precision::kFp16;
  ASSERT_TRUE(registry.Add(half_eval, MakeModel<GoodModel>(), "f", 1).ok());
  ModelSpec no_bf16 = Spec("b_no_bf16");
  no_bf16.unsupported_precisions = {
      {.precision = Precision::kBf16, .reason = "no bf16 kernels"}};
  ASSERT_TRUE(registry.Add(no_bf16, MakeModel<GoodModel>(), "f", 2).ok());

  RunOptions options;
  options.precision = Precision::kBf16;
  options.count_ops = true;
  options.warmup_steps = 1;
  std::vector<RegistrationNote> notes;
  EXPECT_EQ(InstanceNames(PlanInstances(registry, options, &notes)),
            (std::vector<std::string>{"a_half_eval/Train/batch_size:4",
                                      "a_half_eval/Eval/batch_size:8"}));
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0].benchmark, "b_no_bf16/Train/batch_size:4");
  EXPECT_NE(notes[0].text.find("does not run bf16 (no bf16 kernels)"),
            std::string::npos)
      << notes[0].text;

  const auto runs = RunPlanned(registry, options);
  const auto& eval = runs.at("a_half_eval/Eval/batch_size:8");
  ASSERT_FALSE(eval.error_occurred) << eval.error_message;
  EXPECT_EQ(eval.report_label, "precision:bf16");
  EXPECT_EQ(eval.counters.at("aten_ops").value, 1);  // x * 2
  EXPECT_EQ(eval.counters.at("optimizer_ops").value, 0);
  EXPECT_EQ(runs.at("a_half_eval/Train/batch_size:4").report_label,
            "precision:bf16 optimizer:none");

  const c10::Device cuda(c10::kCUDA, 0);
  EXPECT_EQ(half_eval.ResolvePrecision(Precision::kDefault, Mode::kEval, cuda),
            Precision::kFp16);
  EXPECT_EQ(half_eval.ResolvePrecision(Precision::kDefault, Mode::kTrain, cuda),
            Precision::kFp32);
  EXPECT_EQ(
      half_eval.ResolvePrecision(Precision::kDefault, Mode::kEval, c10::kCPU),
      Precision::kFp32);
  EXPECT_EQ(half_eval.ResolvePrecision(Precision::kAmpBf16, Mode::kEval, cuda),
            Precision::kAmpBf16);
}

// The list reports each spec's reference counts (CountsTest proves the built
// port equals them) and builds nothing: a model that throws when built is
// listed all the same; a spec without counts is the error.
TEST_F(BenchmarkRunnerTest, ListModelsJsonHasCountsAndErrors) {
  Registry registry;
  ModelSpec uncounted = Spec("uncounted");
  uncounted.reference_parameters = -1;
  ASSERT_TRUE(registry.Add(uncounted, MakeModel<GoodModel>(), "f", 1).ok());
  ModelSpec good = Spec("good");
  good.reference_parameters = 12;
  good.reference_buffers = 3;
  ASSERT_TRUE(registry.Add(good, MakeModel<ThrowsInSetup>(), "f", 2).ok());
  std::ostringstream out;
  EXPECT_FALSE(ListModels(registry, "json", out));
  const std::string json = out.str();
  EXPECT_NE(json.find("\"name\": \"good\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"modes\": [\"Train\", \"Eval\"]"), std::string::npos);
  EXPECT_NE(json.find("\"parameters\": 12, \"buffers\": 3"), std::string::npos)
      << json;
  EXPECT_NE(json.find("\"error\": \"the spec records no reference element "
                      "counts\""),
            std::string::npos)
      << json;
}

// detectron2's names run past the table's 26-character name column: the
// column widens so that every name is followed by at least two spaces.
TEST_F(BenchmarkRunnerTest, ListModelsTableFitsLongNames) {
  Registry registry;
  ModelSpec long_name = Spec("detectron2_fasterrcnn_r_101_fpn_long");
  long_name.reference_parameters = 1;
  long_name.reference_buffers = 0;
  ASSERT_TRUE(registry.Add(long_name, MakeModel<GoodModel>(), "f", 1).ok());
  std::ostringstream out;
  EXPECT_TRUE(ListModels(registry, "table", out));
  const std::string table = out.str();
  EXPECT_NE(table.find("detectron2_fasterrcnn_r_101_fpn_long  "),
            std::string::npos)
      << table;
  // The header's columns move with it.
  const size_t domain = table.find("domain");
  const size_t row = table.find('\n') + 1;
  EXPECT_EQ(table.compare(row + domain, 4, "test"), 0) << table;
}

}  // namespace
}  // namespace torchbench
