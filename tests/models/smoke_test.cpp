// Every model and supported mode runs on the CPU at the batch of the CPU
// default set (what `tools/tb bench` runs without a GPU), through the same
// set-up and warm-up as the program: the returned loss/output is finite, a
// Train step changes parameters and an Eval step changes no parameter or
// buffer (unless the spec says why the reference's eval() trains). With
// ModelConfig::small_inputs set: models whose full-size step is slow on one
// core shrink a size that leaves the code path unchanged.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <iostream>
#include <map>
#include <string>

#include "cpu_ci_limits.h"
#include "model_params.h"
#include "torchbench/torchbench.h"

namespace torchbench {
namespace {

std::map<std::string, torch::Tensor> Snapshot(torch::nn::Module& module) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& p : module.named_parameters(/*recurse=*/true)) {
    out[p.key()] = p.value().detach().clone();
  }
  for (const auto& b : module.named_buffers(/*recurse=*/true)) {
    out["buffer:" + b.key()] = b.value().detach().clone();
  }
  return out;
}

class SmokeTest : public ::testing::TestWithParam<testing::ModelMode> {};

TEST_P(SmokeTest, StepsAreFiniteAndTouchOnlyWhatTheyShould) {
  const auto& [name, mode] = GetParam();
  const ModelSpec& spec = Registry::Global().Find(name)->spec;
  if (const std::string& why = testing::CpuCiLimitsOf(name).skip_smoke_test;
      !why.empty()) {
    GTEST_SKIP() << why;
  }
  ModelConfig config;
  config.mode = mode;
  config.batch_size = testing::DefaultSetBatchSize(spec, mode);
  config.small_inputs = true;
  auto instance = CreateInstance(name, config);
  ASSERT_TRUE(instance.ok()) << instance.status();

  auto before = Snapshot((*instance)->model().module());
  for (int step = 0; step < 2; ++step) {
    torch::Tensor out = (*instance)->Step();
    ASSERT_TRUE(out.defined()) << "step " << step << " returned nothing";
    if (out.is_floating_point()) {
      EXPECT_TRUE(torch::isfinite(out).all().item<bool>())
          << "step " << step << " returned a non-finite value";
    }
  }
  auto after = Snapshot((*instance)->model().module());
  ASSERT_EQ(before.size(), after.size());

  int changed_parameters = 0;
  std::vector<std::string> changed_in_eval;
  for (const auto& [key, value] : before) {
    const bool same = torch::equal(value, after.at(key));
    if (!same && key.rfind("buffer:", 0) != 0) ++changed_parameters;
    if (!same) changed_in_eval.push_back(key);
  }
  if (mode == Mode::kTrain) {
    if ((*instance)->counts().parameters > 0 &&
        spec.checks.train_may_not_update.empty()) {
      EXPECT_GT(changed_parameters, 0) << "a Train step changed no parameter";
    } else if (changed_parameters == 0) {
      std::cout << "[   NOTE   ] " << name << ": parameters unchanged: "
                << spec.checks.train_may_not_update << "\n";
    }
  } else if (!spec.checks.eval_changes_state.empty()) {
    std::cout << "[   NOTE   ] " << name << ": Eval changed "
              << changed_in_eval.size()
              << " tensors, as the reference's eval() does: "
              << spec.checks.eval_changes_state << "\n";
  } else {
    EXPECT_TRUE(changed_in_eval.empty())
        << "an Eval step changed " << changed_in_eval.size()
        << " tensors, first: " << changed_in_eval.front();
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllModels, SmokeTest, ::testing::ValuesIn(testing::ModelModes()),
    [](const ::testing::TestParamInfo<testing::ModelMode>& p) {
      return p.param.name + "_" + ModeName(p.param.mode);
    });

}  // namespace
}  // namespace torchbench
