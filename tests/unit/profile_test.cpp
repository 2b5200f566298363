#include "program/profile.h"

#include <ATen/record_function.h>
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "json.h"
#include "program/op_counter.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace {

// A train step with a forward, a backward, an optimizer scope and one
// item() (a host-device sync on a GPU).
class TinyTrain final : public Model {
 public:
  explicit TinyTrain(const ModelConfig& config)
      : linear_(4, 2), x_(torch::ones({config.batch_size, 4})) {}
  torch::Tensor Step() override {
    torch::Tensor loss = linear_->forward(x_).relu().sum();
    loss.backward();
    {
      RECORD_USER_SCOPE("Optimizer.step#Tiny.step");
      torch::NoGradGuard no_grad;
      for (auto& p : linear_->parameters()) {
        p.sub_(p.grad() * 0.01);
        p.grad().zero_();
      }
    }
    if (loss.item<float>() < -1) loss = loss * 2;
    return loss.detach();
  }
  torch::nn::Module& module() override { return *linear_; }

 private:
  torch::nn::Linear linear_;
  torch::Tensor x_;
};

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ProfileTest, SafeFileName) {
  EXPECT_EQ(SafeFileName("resnet18/Train/batch_size:1"),
            "resnet18_Train_batch_size_1");
  EXPECT_EQ(SafeFileName("a.b-c_d"), "a.b-c_d");
}

// The GPU side of the counters and tables, from a hand-made summary (no GPU
// here): two steps, each a 100 ns window with 70 busy, 10 of them memcpy.
TEST(ProfileTest, GpuCountersAndTablesFromASummary) {
  TraceSummary s;
  s.steps = 2;
  s.aten_ops = 10;
  s.would_sync = 2;
  s.has_device = true;
  s.window_ns = 200;
  s.busy_ns = 140;
  s.memcpy_ns = 20;
  s.idle_ns = 60;
  s.idle_host_wait_ns = 40;
  s.idle_kernel_wait_ns = 5;
  s.idle_other_ns = 15;
  s.kernel_count = 8;
  s.memcpy_count = 2;
  s.sync_count = 1;
  s.kernel_median_ns = 2500;
  s.kernels = {{"gemm", 4, 100, 0}, {"relu", 4, 20, 0}};
  s.ops_by_device = {{"aten::mm", 4, 100, 0}};
  s.ops_by_host = {{"aten::mm", 4, 1000, 1200}};
  s.forward = {6, 3000, 120};
  const auto c = CountersFromSummary(s, /*device_is_gpu=*/true);
  EXPECT_DOUBLE_EQ(c.at("aten_ops_per_step"), 5);
  EXPECT_DOUBLE_EQ(c.at("would_sync_per_step"), 1);
  EXPECT_DOUBLE_EQ(c.at("gpu_busy_pct"), 70);
  EXPECT_DOUBLE_EQ(c.at("gpu_memcpy_pct"), 10);
  EXPECT_DOUBLE_EQ(c.at("gpu_active_pct"), 60);
  EXPECT_DOUBLE_EQ(c.at("gpu_idle_pct"), 30);
  EXPECT_DOUBLE_EQ(c.at("gpu_idle_host_wait_pct") +
                       c.at("gpu_idle_kernel_wait_pct") +
                       c.at("gpu_idle_other_pct"),
                   c.at("gpu_idle_pct"));
  EXPECT_DOUBLE_EQ(c.at("kernels_per_step"), 4);
  EXPECT_DOUBLE_EQ(c.at("memcpy_per_step"), 1);
  EXPECT_DOUBLE_EQ(c.at("syncs_per_step"), 0.5);
  EXPECT_DOUBLE_EQ(c.at("kernel_median_us"), 2.5);
  // aten::mm launched 100 of the 200 ns window.
  EXPECT_DOUBLE_EQ(c.at("matmul_conv_share"), 0.5);
  // The same summary on a CPU run: no GPU counters at all.
  EXPECT_EQ(CountersFromSummary(s, false).count("gpu_busy_pct"), 0u);
  // A GPU run whose profiler saw no device event (no CUPTI): the GPU
  // counters are absent, never a 0 % busy GPU.
  TraceSummary unseen = s;
  unseen.has_device = false;
  const auto blind = CountersFromSummary(unseen, /*device_is_gpu=*/true);
  for (const char* key : {"gpu_busy_pct", "gpu_idle_pct", "kernels_per_step",
                          "syncs_per_step", "kernel_median_us"}) {
    EXPECT_EQ(blind.count(key), 0u) << key;
  }
  EXPECT_DOUBLE_EQ(blind.at("aten_ops_per_step"), 5);

  const std::string table = ProfileTable("m/Train/batch_size:1", s, 1);
  EXPECT_NE(table.find("top kernels"), std::string::npos);
  EXPECT_NE(table.find("gemm"), std::string::npos);
  EXPECT_EQ(table.find("relu"), std::string::npos);  // top 1 only
  EXPECT_NE(table.find("device ms"), std::string::npos);
  auto doc = json::Parse(ProfileJson("m/Train/batch_size:1", s, c, 1));
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  ASSERT_TRUE(doc->contains("top_kernels"));
  EXPECT_EQ(doc->at("top_kernels").size(), 1u);
  EXPECT_DOUBLE_EQ(json::NumberOr(doc->at("counters"), "gpu_idle_pct", -1), 30);
}

TEST(ProfileTest, CpuCountersTraceAndTables) {
  Registry registry;
  ModelSpec spec;
  spec.name = "tiny";
  spec.domain = "test";
  spec.train_batch_size = 2;
  spec.eval_batch_size = 2;
  ASSERT_TRUE(registry.Add(spec, MakeModel<TinyTrain>(), "f", 1).ok());
  ModelConfig config;
  config.mode = Mode::kTrain;
  config.batch_size = 2;
  Instance instance(*registry.Find("tiny"), config);
  instance.Step();

  int64_t counted = 0;
  {
    OpCounter ops;
    instance.Step();
    counted = ops.top_level_ops();
  }

  const auto dir = std::filesystem::temp_directory_path() /
                   ("tb_profile_test_" + std::to_string(::getpid()));
  ProfileOptions options;
  options.steps = 2;
  options.trace_dir = dir.string();
  const InstanceProfile p =
      ProfileInstance(instance, "tiny/Train/batch_size:2", options);

  EXPECT_EQ(p.summary.steps, 2);
  EXPECT_EQ(p.counters.at("profile_steps"), 2);
  // The profiler sees the operators OpCounter counts.
  EXPECT_EQ(p.counters.at("aten_ops_per_step"), static_cast<double>(counted));
  EXPECT_EQ(p.counters.at("would_sync_per_step"), 1);  // item()
  // The linear layer's addmm and its backward's mms: some of each step.
  EXPECT_GT(p.counters.at("matmul_conv_share"), 0);
  EXPECT_LT(p.counters.at("matmul_conv_share"), 1);
  EXPECT_GT(p.summary.forward.ops, 0);
  EXPECT_GT(p.summary.backward.ops, 0);
  // mul, sub_, zero_ per parameter, per step.
  EXPECT_EQ(p.summary.optimizer.ops, 6 * options.steps);
  // No GPU: its counters are absent, not zero.
  EXPECT_EQ(p.counters.count("gpu_idle_pct"), 0u);
  EXPECT_EQ(p.counters.count("kernels_per_step"), 0u);

  const std::string base = (dir / "tiny_Train_batch_size_2").string();
  auto trace = json::Parse(ReadFile(base + ".pt.trace.json"));
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_TRUE(trace->contains("traceEvents"));
  int steps = 0;
  for (const nlohmann::ordered_json& e : trace->at("traceEvents")) {
    if (json::StringOr(e, "name", "").rfind("ProfilerStep#", 0) == 0) ++steps;
  }
  EXPECT_EQ(steps, 3);  // K analyzed + the one HTA drops
  auto profile = json::Parse(ReadFile(base + ".profile.json"));
  ASSERT_TRUE(profile.ok()) << profile.status().message();
  EXPECT_EQ(json::NumberOr(*profile, "steps", 0), 2);
  ASSERT_TRUE(profile->contains("top_ops_host"));
  EXPECT_FALSE(profile->at("top_ops_host").empty());
  const std::string table = ReadFile(base + ".profile.txt");
  EXPECT_NE(table.find("top ops by self host time"), std::string::npos);
  EXPECT_NE(table.find("optimizer"), std::string::npos);
  if (!std::getenv("TB_KEEP")) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace torchbench
