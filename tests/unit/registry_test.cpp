#include "torchbench/registry.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace torchbench {
namespace {

class TinyModel final : public Model {
 public:
  explicit TinyModel(const ModelConfig& config)
      : linear_(torch::nn::Linear(3, 2)) {
    module_.register_module("linear", linear_);
    x_ = torch::randn({config.batch_size, 3});
  }
  torch::Tensor Step() override { return linear_(x_); }
  torch::nn::Module& module() override { return module_; }

 private:
  torch::nn::Module module_;
  torch::nn::Linear linear_;
  torch::Tensor x_;
};

ModelSpec Spec(const std::string& name) {
  ModelSpec spec;
  spec.name = name;
  spec.domain = "test";
  spec.train_batch_size = 4;
  spec.eval_batch_size = 8;
  return spec;
}

TEST(RegistryTest, FindsAndListsSorted) {
  Registry registry;
  ASSERT_TRUE(
      registry.Add(Spec("zeta"), MakeModel<TinyModel>(), "z.cpp", 1).ok());
  ASSERT_TRUE(
      registry.Add(Spec("alpha"), MakeModel<TinyModel>(), "a.cpp", 2).ok());
  EXPECT_EQ(registry.size(), 2u);
  ASSERT_NE(registry.Find("alpha"), nullptr);
  EXPECT_EQ(registry.Find("alpha")->file, "a.cpp");
  EXPECT_EQ(registry.Find("missing"), nullptr);
  auto list = registry.List();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0]->spec.name, "alpha");
  EXPECT_EQ(list[1]->spec.name, "zeta");
}

TEST(RegistryTest, DuplicateNameNamesBothPlaces) {
  Registry registry;
  ASSERT_TRUE(
      registry.Add(Spec("dup"), MakeModel<TinyModel>(), "first.cpp", 10).ok());
  absl::Status status =
      registry.Add(Spec("dup"), MakeModel<TinyModel>(), "second.cpp", 20);
  EXPECT_EQ(status.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(status.message().find("first.cpp:10"), std::string::npos) << status;
  EXPECT_NE(status.message().find("second.cpp:20"), std::string::npos)
      << status;
  EXPECT_EQ(registry.size(), 1u);
}

TEST(RegistryTest, RejectsIncompleteSpecs) {
  Registry registry;
  EXPECT_FALSE(registry.Add(Spec(""), MakeModel<TinyModel>(), "f", 1).ok());
  ModelSpec no_modes = Spec("no_modes");
  no_modes.modes.clear();
  EXPECT_FALSE(registry.Add(no_modes, MakeModel<TinyModel>(), "f", 1).ok());
  ModelSpec no_batch = Spec("no_batch");
  no_batch.train_batch_size = 0;
  EXPECT_FALSE(registry.Add(no_batch, MakeModel<TinyModel>(), "f", 1).ok());
  EXPECT_FALSE(registry.Add(Spec("no_factory"), nullptr, "f", 1).ok());
  EXPECT_EQ(registry.size(), 0u);
}

TEST(RegistryTest, RejectsUnexplainedOrImpossibleSmallestBatch) {
  Registry registry;
  ModelSpec no_reason = Spec("no_reason");
  no_reason.min_train_batch_size = 2;
  EXPECT_FALSE(registry.Add(no_reason, MakeModel<TinyModel>(), "f", 1).ok());
  ModelSpec above_default = Spec("above_default");
  above_default.min_eval_batch_size = 16;  // The default is 8.
  above_default.min_batch_size_reason = "why";
  EXPECT_FALSE(
      registry.Add(above_default, MakeModel<TinyModel>(), "f", 1).ok());
  ModelSpec fine = Spec("fine");
  fine.min_train_batch_size = 2;
  fine.min_batch_size_reason = "BatchNorm over a 1x1 map";
  EXPECT_TRUE(registry.Add(fine, MakeModel<TinyModel>(), "f", 1).ok());
  EXPECT_EQ(registry.Find("fine")->spec.MinBatchSize(Mode::kTrain), 2);
  EXPECT_EQ(registry.Find("fine")->spec.MinBatchSize(Mode::kEval), 1);
}

TEST(RegistryTest, CreateSeedsSoBuildsRepeat) {
  Registry registry;
  ASSERT_TRUE(registry.Add(Spec("tiny"), MakeModel<TinyModel>(), "f", 1).ok());
  ModelConfig config;
  config.batch_size = 2;
  auto a = registry.Find("tiny")->Create(config);
  auto b = registry.Find("tiny")->Create(config);
  EXPECT_TRUE(torch::equal(a->Step(), b->Step()));
}

TEST(ModelSpecTest, DefaultBatchSizeFollowsModes) {
  ModelSpec spec = Spec("m");
  spec.modes = {Mode::kEval};
  EXPECT_TRUE(spec.Supports(Mode::kEval));
  EXPECT_FALSE(spec.Supports(Mode::kTrain));
  EXPECT_EQ(spec.DefaultBatchSize(Mode::kEval), 8);
  EXPECT_EQ(spec.DefaultBatchSize(Mode::kTrain), 0);
}

TEST(ModelTest, CountElementsCountsParametersAndBuffers) {
  torch::nn::Module root;
  root.register_module("linear", torch::nn::Linear(3, 2));  // 6 + 2
  root.register_module("bn", torch::nn::BatchNorm1d(4));    // 4 + 4
  ElementCounts counts = CountElements(root);
  EXPECT_EQ(counts.parameters, 16);
  EXPECT_EQ(counts.buffers, 4 + 4 + 1);  // running mean, var, num_batches
}

}  // namespace
}  // namespace torchbench
