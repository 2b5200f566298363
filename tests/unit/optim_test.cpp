#include "torchbench/optim.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "program/op_counter.h"
#include "support/golden_file.h"
#include "torchbench/golden.h"

namespace torchbench::optim {
namespace {

// `n` parameters of assorted shapes with fixed values, a few with no
// gradient in some steps (PyTorch skips them).
std::vector<torch::Tensor> MakeParams(int n) {
  std::vector<torch::Tensor> params;
  for (int i = 0; i < n; ++i) {
    const int64_t rows = 2 + i % 3;
    const int64_t cols = 3 + i % 4;
    torch::Tensor p =
        torch::sin(torch::arange(rows * cols, torch::kFloat) * 0.37 + i)
            .view({rows, cols});
    params.push_back(p.requires_grad_());
  }
  return params;
}

// Gradients from a fixed loss, so both paths see the same gradients when
// their parameters agree; parameter 1 gets none on odd steps.
void Backward(const std::vector<torch::Tensor>& params, int step) {
  torch::Tensor loss = torch::zeros({});
  for (size_t i = 0; i < params.size(); ++i) {
    if (i == 1 && step % 2 == 1) continue;
    loss = loss + (params[i] * params[i]).sum() * (0.5 + 0.1 * i) +
           params[i].sin().sum() * (step + 1);
  }
  loss.backward();
}

using MakeOptimizer = std::function<std::unique_ptr<Optimizer>(
    std::vector<torch::Tensor>, OptimizerPath)>;

struct Case {
  std::string name;
  MakeOptimizer make;
};

std::vector<Case> Cases() {
  auto adam = [](AdamOptions o) -> MakeOptimizer {
    return [o](auto params, OptimizerPath path) {
      return std::make_unique<Adam>(std::move(params), o, path);
    };
  };
  auto sgd = [](SgdOptions o) -> MakeOptimizer {
    return [o](auto params, OptimizerPath path) {
      return std::make_unique<Sgd>(std::move(params), o, path);
    };
  };
  auto rmsprop = [](RmspropOptions o) -> MakeOptimizer {
    return [o](auto params, OptimizerPath path) {
      return std::make_unique<Rmsprop>(std::move(params), o, path);
    };
  };
  auto radam = [](RadamOptions o) -> MakeOptimizer {
    return [o](auto params, OptimizerPath path) {
      return std::make_unique<Radam>(std::move(params), o, path);
    };
  };
  return {
      {"Adam", adam({})},
      {"AdamWeightDecay", adam({.lr = 1e-2, .weight_decay = 0.1})},
      {"AdamAmsgrad", adam({.lr = 1e-2, .beta2 = 0.9, .amsgrad = true})},
      {"AdamW",
       adam(
           {.lr = 1e-2, .weight_decay = 1e-2, .decoupled_weight_decay = true})},
      {"Sgd", sgd({.lr = 0.1})},
      {"SgdMomentum", sgd({.lr = 0.1, .momentum = 0.9, .dampening = 0.1})},
      {"SgdNesterovWeightDecay", sgd({.lr = 0.1,
                                      .momentum = 0.9,
                                      .weight_decay = 1e-4,
                                      .nesterov = true})},
      {"Rmsprop", rmsprop({})},
      {"RmspropMomentumCenteredWeightDecay", rmsprop({.lr = 1e-3,
                                                      .weight_decay = 1e-2,
                                                      .momentum = 0.9,
                                                      .centered = true})},
      {"Radam", radam({})},
      {"RadamDecoupledWeightDecay",
       radam(
           {.lr = 1e-2, .weight_decay = 0.1, .decoupled_weight_decay = true})},
  };
}

class OptimizerPathsTest : public ::testing::TestWithParam<Case> {};

TEST_P(OptimizerPathsTest, ForeachAndSingleAgreeAfterFiveSteps) {
  const Case& c = GetParam();
  std::vector<torch::Tensor> single_params = MakeParams(5);
  std::vector<torch::Tensor> foreach_params = MakeParams(5);
  auto single = c.make(single_params, OptimizerPath::kSingle);
  auto foreach = c.make(foreach_params, OptimizerPath::kForeach);
  ASSERT_EQ(single->path(), OptimizerPath::kSingle);
  ASSERT_EQ(foreach->path(), OptimizerPath::kForeach);
  const std::vector<torch::Tensor> initial = MakeParams(5);
  for (int step = 0; step < 5; ++step) {
    single->ZeroGrad();
    foreach
      ->ZeroGrad();
    Backward(single_params, step);
    Backward(foreach_params, step);
    single->Step();
    foreach
      ->Step();
  }
  for (size_t i = 0; i < single_params.size(); ++i) {
    const torch::Tensor a = foreach_params[i].detach();
    const torch::Tensor b = single_params[i].detach();
    EXPECT_FALSE(torch::equal(b, initial[i].detach())) << "param " << i;
    const double rel = ((a - b).abs().max() / b.abs().max()).item<double>();
    EXPECT_LE(rel, 1e-6) << c.name << " param " << i;
  }
}

// Both paths against torch.optim's own (tests/golden/optimizers.golden,
// made by tools/golden/make_optimizer_golden.py with foreach=True and
// foreach=False on the same parameters and gradients).
TEST_P(OptimizerPathsTest, EachPathMatchesTorchOptim) {
  const Case& c = GetParam();
  auto golden = ReadGoldenFile(std::string(TORCHBENCH_TEST_GOLDEN_DIR) +
                               "/optimizers.golden");
  ASSERT_TRUE(golden.ok()) << golden.status();
  for (OptimizerPath path : {OptimizerPath::kForeach, OptimizerPath::kSingle}) {
    std::vector<torch::Tensor> params = MakeParams(5);
    auto optimizer = c.make(params, path);
    for (int step = 0; step < 5; ++step) {
      optimizer->ZeroGrad();
      Backward(params, step);
      optimizer->Step();
    }
    for (size_t i = 0; i < params.size(); ++i) {
      const std::string key =
          c.name + "/" + OptimizerPathName(path) + "/param" + std::to_string(i);
      auto it = golden->tensors.find(key);
      ASSERT_NE(it, golden->tensors.end()) << key;
      EXPECT_LE(GoldenError(it->second, params[i].detach()), 1e-6) << key;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryOptimizer, OptimizerPathsTest,
                         ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& p) {
                           return p.param.name;
                         });

TEST(OptimizerTest, ZeroGradSetsGradientsToNone) {
  std::vector<torch::Tensor> params = MakeParams(2);
  Adam adam(params, {}, OptimizerPath::kForeach);
  Backward(params, 0);
  ASSERT_TRUE(params[0].grad().defined());
  adam.ZeroGrad();
  EXPECT_FALSE(params[0].grad().defined());
  EXPECT_FALSE(params[1].grad().defined());
}

TEST(OptimizerTest, DefaultPathIsPyTorchsForTheDevice) {
  EXPECT_EQ(ResolveOptimizerPath(OptimizerPath::kDefault, torch::kCPU),
            OptimizerPath::kSingle);
  EXPECT_EQ(ResolveOptimizerPath(OptimizerPath::kDefault,
                                 torch::Device(torch::kCUDA, 0)),
            OptimizerPath::kForeach);
  EXPECT_EQ(ResolveOptimizerPath(OptimizerPath::kForeach, torch::kCPU),
            OptimizerPath::kForeach);
  Sgd sgd(MakeParams(1), {}, OptimizerPath::kDefault);
  EXPECT_EQ(sgd.path(), OptimizerPath::kSingle);  // CPU parameters.
}

TEST(OptimizerTest, GroupsKeepTheirOwnLrAndWeightDecay) {
  std::vector<torch::Tensor> a = MakeParams(1);
  std::vector<torch::Tensor> b = MakeParams(1);
  Sgd sgd({{.params = a, .lr = 0.1, .weight_decay = 0},
           {.params = b, .lr = 0.0, .weight_decay = 0}},
          {}, OptimizerPath::kForeach);
  Backward({a[0], b[0]}, 0);
  const torch::Tensor b_before = b[0].detach().clone();
  sgd.Step();
  EXPECT_TRUE(torch::equal(b[0].detach(), b_before));  // lr 0.
  sgd.SetLr(0.5);
  EXPECT_EQ(sgd.param_groups()[1].lr, 0.5);
}

TEST(OptimizerTest, SteppedPathsAreReported) {
  internal::TakeSteppedPaths();
  std::vector<torch::Tensor> params = MakeParams(2);
  Adam adam(params, {}, OptimizerPath::kForeach);
  Backward(params, 0);
  adam.Step();
  EXPECT_EQ(internal::TakeSteppedPaths(),
            1u << static_cast<unsigned>(OptimizerPath::kForeach));
  EXPECT_EQ(internal::TakeSteppedPaths(), 0u);
}

// The point of the foreach path: the ops an optimizer step issues do not
// grow with the number of parameters (on the CPU each _foreach_ op loops
// internally; on CUDA it launches a few fused kernels).
int64_t OptimizerOps(int n, OptimizerPath path) {
  std::vector<torch::Tensor> params = MakeParams(n);
  Adam adam(params, {.weight_decay = 0.1}, path);
  Backward(params, 0);
  adam.Step();  // State allocation happens on the first step.
  Backward(params, 0);
  OpCounter ops;
  adam.Step();
  return ops.optimizer_ops();
}

TEST(OptimizerTest, ForeachOpCountDoesNotGrowWithParameters) {
  const int64_t foreach_small = OptimizerOps(2, OptimizerPath::kForeach);
  const int64_t foreach_large = OptimizerOps(16, OptimizerPath::kForeach);
  const int64_t single_small = OptimizerOps(2, OptimizerPath::kSingle);
  const int64_t single_large = OptimizerOps(16, OptimizerPath::kSingle);
  EXPECT_GT(foreach_small, 0);
  EXPECT_EQ(foreach_small, foreach_large);
  EXPECT_EQ(single_large, single_small * 8);
  EXPECT_LT(foreach_large, single_large);
}

}  // namespace
}  // namespace torchbench::optim
