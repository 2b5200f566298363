// Every model's parameter and buffer element counts equal its reference's
// figures, which each model file records (with their provenance) in its
// ModelSpec.
#include <gtest/gtest.h>

#include "model_params.h"
#include "torchbench/torchbench.h"

namespace torchbench {
namespace {

class CountsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CountsTest, EqualTheReference) {
  const RegisteredModel* entry = Registry::Global().Find(GetParam());
  ASSERT_NE(entry, nullptr);
  const ModelSpec& spec = entry->spec;
  ASSERT_GE(spec.reference_parameters, 0)
      << spec.name << " does not record its reference's parameter count";
  ASSERT_GE(spec.reference_buffers, 0)
      << spec.name << " does not record its reference's buffer count";
  ModelConfig config;
  config.mode = spec.modes.front();
  config.batch_size = testing::TestBatchSize(spec, config.mode);
  auto instance = CreateInstance(spec.name, config);
  ASSERT_TRUE(instance.ok()) << instance.status();
  EXPECT_EQ((*instance)->counts().parameters, spec.reference_parameters);
  EXPECT_EQ((*instance)->counts().buffers, spec.reference_buffers);
}

TEST(RegistryContentsTest, HoldsTheFoundationModels) {
  for (const char* name : {"BERT_pytorch", "dlrm", "pyhpc_equation_of_state",
                           "resnet50", "soft_actor_critic"}) {
    EXPECT_NE(Registry::Global().Find(name), nullptr) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(AllModels, CountsTest,
                         ::testing::ValuesIn(testing::ModelNames()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           return p.param;
                         });

}  // namespace
}  // namespace torchbench
