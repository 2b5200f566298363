// A downstream GoogleTest suite: creates registered models by name, runs
// steps and reads their metadata through the public header.
#include <gtest/gtest.h>
#include <torchbench/torchbench.h>

TEST(EmbedTest, RegistryReachesThisExecutable) {
  // The models are linked as object files, so every registrar ran.
  EXPECT_GE(torchbench::Registry::Global().size(), 5u);
  EXPECT_NE(torchbench::Registry::Global().Find("resnet50"), nullptr);
}

TEST(EmbedTest, TrainsAndEvaluatesAModelByName) {
  torchbench::ModelConfig config;
  config.mode = torchbench::Mode::kTrain;
  config.batch_size = 2;
  config.device = torch::kCPU;
  auto instance = torchbench::CreateInstance("resnet50", config);
  ASSERT_TRUE(instance.ok()) << instance.status();
  const torchbench::ModelSpec& spec = (*instance)->spec();
  EXPECT_EQ(spec.domain, "vision");
  EXPECT_EQ((*instance)->counts().parameters, 25557032);
  torch::Tensor loss = (*instance)->Step();
  EXPECT_TRUE(torch::isfinite(loss).all().item<bool>());

  config.mode = torchbench::Mode::kEval;
  auto eval = torchbench::CreateInstance("resnet50", config);
  ASSERT_TRUE(eval.ok()) << eval.status();
  EXPECT_EQ((*eval)->Step().size(0), 2);
}

TEST(EmbedTest, BadRequestsAreStatusesNotCrashes) {
  torchbench::ModelConfig config;
  EXPECT_EQ(torchbench::CreateInstance("no_such_model", config).status().code(),
            absl::StatusCode::kNotFound);
  config.batch_size = 0;
  EXPECT_EQ(torchbench::CreateInstance("resnet50", config).status().code(),
            absl::StatusCode::kInvalidArgument);
}
