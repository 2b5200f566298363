#include "program/flags.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"

namespace torchbench {
namespace {

// Owns argv storage for one parse.
struct Args {
  explicit Args(std::vector<std::string> args) : strings(std::move(args)) {
    for (auto& s : strings) pointers.push_back(s.data());
    pointers.push_back(nullptr);
    argc = static_cast<int>(strings.size());
  }
  std::vector<std::string> strings;
  std::vector<char*> pointers;
  int argc;
};

TEST(FlagsTest, ParsesAndRemovesOwnFlags) {
  Args args({"tb", "--benchmark_filter=BERT", "--torchbench_batch_sizes=1,8,32",
             "--torchbench_device=cpu", "--torchbench_precision=tf32",
             "--torchbench_channels_last", "--torchbench_warmup_steps=0",
             "--benchmark_min_time=0.05"});
  auto flags = ParseHarnessFlags(&args.argc, args.pointers.data());
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(flags->batch_sizes, (std::vector<int64_t>{1, 8, 32}));
  EXPECT_EQ(flags->device, "cpu");
  EXPECT_EQ(flags->precision, Precision::kTf32);
  EXPECT_TRUE(flags->channels_last);
  EXPECT_EQ(flags->warmup_steps, 0);
  ASSERT_EQ(args.argc, 3);
  EXPECT_STREQ(args.pointers[1], "--benchmark_filter=BERT");
  EXPECT_STREQ(args.pointers[2], "--benchmark_min_time=0.05");
  EXPECT_EQ(args.pointers[3], nullptr);
}

TEST(FlagsTest, ListModelsFormats) {
  Args table({"tb", "--torchbench_list_models"});
  auto t = ParseHarnessFlags(&table.argc, table.pointers.data());
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->list_models, "table");
  Args json({"tb", "--torchbench_list_models=json"});
  auto j = ParseHarnessFlags(&json.argc, json.pointers.data());
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(j->list_models, "json");
  Args bad({"tb", "--torchbench_list_models=xml"});
  EXPECT_FALSE(ParseHarnessFlags(&bad.argc, bad.pointers.data()).ok());
}

TEST(FlagsTest, PrecisionOptimizerPathAndOpCounting) {
  for (const char* name :
       {"fp32", "tf32", "fp16", "bf16", "amp_fp16", "amp_bf16", "default"}) {
    Args args({"tb", std::string("--torchbench_precision=") + name});
    auto flags = ParseHarnessFlags(&args.argc, args.pointers.data());
    ASSERT_TRUE(flags.ok()) << name;
    EXPECT_STREQ(PrecisionName(flags->precision), name);
  }
  Args args({"tb", "--torchbench_optimizer=foreach", "--torchbench_count_ops"});
  auto flags = ParseHarnessFlags(&args.argc, args.pointers.data());
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(flags->optimizer, OptimizerPath::kForeach);
  EXPECT_TRUE(flags->count_ops);
  Args defaults({"tb"});
  auto d = ParseHarnessFlags(&defaults.argc, defaults.pointers.data());
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->optimizer, OptimizerPath::kDefault);
  EXPECT_FALSE(d->count_ops);
}

TEST(FlagsTest, RejectsBadValuesWithTheFlagName) {
  for (const char* arg :
       {"--torchbench_batch_sizes=0", "--torchbench_batch_sizes=-4",
        "--torchbench_batch_sizes=8,x", "--torchbench_batch_sizes=",
        "--torchbench_precision=fp8", "--torchbench_precision=amp",
        "--torchbench_optimizer=fused", "--torchbench_warmup_steps=-1",
        "--torchbench_fail_on_error=maybe", "--torchbench_nope=1",
        "--torchbench_weights=/nonexistent/w.safetensors",
        "--torchbench_weights="}) {
    Args args({"tb", arg});
    auto flags = ParseHarnessFlags(&args.argc, args.pointers.data());
    ASSERT_FALSE(flags.ok()) << arg;
    EXPECT_EQ(flags.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(flags.status().message().find("--torchbench_"), std::string::npos)
        << flags.status();
  }
}

TEST(FlagsTest, IsolationJournalAndShardFlags) {
  Args args({"tb", "--torchbench_isolate=process",
             "--torchbench_instance_timeout=90.5", "--torchbench_journal=j",
             "--torchbench_resume=r", "--torchbench_shard=1/4",
             "--torchbench_shard_costs=c.json"});
  auto flags = ParseHarnessFlags(&args.argc, args.pointers.data());
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_TRUE(flags->isolate);
  EXPECT_DOUBLE_EQ(flags->instance_timeout, 90.5);
  EXPECT_EQ(flags->journal, "j");
  EXPECT_EQ(flags->resume, "r");
  EXPECT_EQ(flags->shard, (Shard{1, 4}));
  EXPECT_EQ(flags->shard_costs, "c.json");
  EXPECT_EQ(args.argc, 1);
  for (const auto& [arg, message] :
       std::vector<std::pair<std::string, std::string>>{
           {"--torchbench_isolate=thread", "expected process or none"},
           {"--torchbench_instance_timeout=-1", "expected seconds >= 0"},
           {"--torchbench_shard=4/4", "--torchbench_shard=4/4: expected I/N"},
           {"--torchbench_journal", "needs a value"}}) {
    Args bad({"tb", arg});
    auto parsed = ParseHarnessFlags(&bad.argc, bad.pointers.data());
    ASSERT_FALSE(parsed.ok()) << arg;
    EXPECT_NE(std::string(parsed.status().message()).find(message),
              std::string::npos)
        << parsed.status();
  }
}

TEST(FlagsTest, ProfileFlags) {
  Args args({"tb", "--torchbench_profile", "--torchbench_profile_steps=3"});
  auto flags = ParseHarnessFlags(&args.argc, args.pointers.data());
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_TRUE(flags->profile);
  EXPECT_EQ(flags->profile_steps, 3);
  EXPECT_TRUE(flags->trace_dir.empty());
  // A trace directory implies the profiling pass.
  Args traced({"tb", "--torchbench_trace_dir=t"});
  auto t = ParseHarnessFlags(&traced.argc, traced.pointers.data());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(t->profile);
  EXPECT_EQ(t->profile_steps, 5);
  EXPECT_EQ(t->trace_dir, "t");
  Args steps({"tb", "--torchbench_profile_steps=2"});
  auto k = ParseHarnessFlags(&steps.argc, steps.pointers.data());
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_TRUE(k->profile);
  // Recording shapes implies the pass; a test-only slowdown is validated here.
  Args shapes({"tb", "--torchbench_profile_shapes",
               "--torchbench_testonly_slow_op=aten::addmm:0.5"});
  auto s = ParseHarnessFlags(&shapes.argc, shapes.pointers.data());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->profile && s->profile_shapes);
  EXPECT_EQ(s->testonly_slow_op, "aten::addmm:0.5");
  for (const char* arg :
       {"--torchbench_profile_steps=0", "--torchbench_profile_steps=x",
        "--torchbench_trace_dir", "--torchbench_profile=2",
        "--torchbench_testonly_slow_op=addmm",
        "--torchbench_profile_shapes=x"}) {
    Args bad({"tb", arg});
    auto parsed = ParseHarnessFlags(&bad.argc, bad.pointers.data());
    EXPECT_FALSE(parsed.ok()) << arg;
  }
}

TEST(FlagsTest, DefaultsMatchTorchBench) {
  Args args({"tb"});
  auto flags = ParseHarnessFlags(&args.argc, args.pointers.data());
  ASSERT_TRUE(flags.ok());
  EXPECT_EQ(flags->seed, 1337u);
  EXPECT_EQ(flags->warmup_steps, 3);
  EXPECT_TRUE(flags->fail_on_error);
  EXPECT_TRUE(flags->batch_sizes.empty());
  EXPECT_FALSE(flags->profile);
}

// --torchbench_help, the README's table and the parser are one table: every
// flag a user may give is listed in both, the internal one in neither.
TEST(FlagsTest, HelpAndDocsComeFromTheTable) {
  const std::string help = HarnessFlagsHelp();
  const std::string markdown = HarnessFlagsMarkdown();
  std::set<std::string> names;
  for (const FlagSpec& flag : FlagTable()) {
    const std::string name = std::string("--torchbench_") + flag.name;
    EXPECT_TRUE(names.insert(name).second) << name << " twice";
    EXPECT_EQ(help.find(name) != std::string::npos, !flag.internal) << name;
    EXPECT_EQ(markdown.find("`" + name) != std::string::npos, !flag.internal)
        << name;
    EXPECT_NE(flag.parse, nullptr) << name;
  }
  EXPECT_NE(help.find("(default: 1337)"), std::string::npos) << help;
  // A value's alternatives would split the Markdown table's columns.
  EXPECT_NE(markdown.find("`--torchbench_device=cpu\\|cuda[:i]`"),
            std::string::npos)
      << markdown;
  for (absl::string_view line : absl::StrSplit(help, '\n')) {
    EXPECT_LE(line.size(), 100u) << line;
  }
}

TEST(FlagsTest, HelpFormats) {
  Args text({"tb", "--torchbench_help"});
  auto t = ParseHarnessFlags(&text.argc, text.pointers.data());
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->help, "text");
  Args markdown({"tb", "--torchbench_help=markdown"});
  auto m = ParseHarnessFlags(&markdown.argc, markdown.pointers.data());
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->help, "markdown");
  Args bad({"tb", "--torchbench_help=man"});
  EXPECT_FALSE(ParseHarnessFlags(&bad.argc, bad.pointers.data()).ok());
}

TEST(FlagsTest, CompiledBackendNeedsItsPackagesAndFp32) {
  const std::string dir = ::testing::TempDir();
  Args ok({"tb", "--torchbench_backend=aoti", "--torchbench_compiled=" + dir});
  auto flags = ParseHarnessFlags(&ok.argc, ok.pointers.data());
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(flags->backend, Backend::kAoti);
  EXPECT_EQ(flags->compiled, dir);
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"tb", "--torchbench_backend=aoti"}, "needs --torchbench_compiled"},
      {{"tb", "--torchbench_backend=jit"},
       "expected eager, aoti or torchscript"},
      {{"tb", "--torchbench_compiled=" + dir}, "needs --torchbench_backend"},
      {{"tb", "--torchbench_backend=torchscript",
        "--torchbench_compiled=/nonexistent"},
       "no readable directory"},
      {{"tb", "--torchbench_backend=aoti", "--torchbench_compiled=" + dir,
        "--torchbench_precision=bf16"},
       "runs fp32 packages"}};
  for (const auto& [argv, message] : bad) {
    Args args(argv);
    auto parsed = ParseHarnessFlags(&args.argc, args.pointers.data());
    ASSERT_FALSE(parsed.ok()) << argv.back();
    EXPECT_NE(parsed.status().message().find(message), std::string::npos)
        << parsed.status();
  }
}

}  // namespace
}  // namespace torchbench
