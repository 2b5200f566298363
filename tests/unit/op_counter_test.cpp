#include "program/op_counter.h"

#include <ATen/record_function.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

namespace torchbench {
namespace {

TEST(OpCounterTest, CountsTopLevelOpsOnly) {
  const torch::Tensor a = torch::randn({3, 3});
  OpCounter ops;
  torch::Tensor b = a.add(1);
  b = b.mul(b);
  EXPECT_EQ(ops.top_level_ops(), 2);
  EXPECT_GE(ops.all_ops(), ops.top_level_ops());
  EXPECT_EQ(ops.optimizer_ops(), 0);
}

TEST(OpCounterTest, CountsOpsInsideOptimizerScopes) {
  std::vector<torch::Tensor> list = {torch::ones({2}), torch::ones({3})};
  OpCounter ops;
  {
    RECORD_USER_SCOPE("Optimizer.step#Test.step");
    at::_foreach_mul_(list, 2.0);
  }
  list[0].add_(1);
  EXPECT_EQ(ops.top_level_ops(), 2);
  EXPECT_EQ(ops.optimizer_ops(), 1);
}

TEST(OpCounterTest, BackwardNodeOpsAreTopLevel) {
  const torch::Tensor w = torch::ones({3}, torch::requires_grad());
  const torch::Tensor loss = (w * 2).sum();
  OpCounter ops;
  loss.backward();
  // SumBackward0 expands, MulBackward0 multiplies, AccumulateGrad hands the
  // gradient over (or adds): each a top-level op, no engine wrapper counted.
  EXPECT_GE(ops.top_level_ops(), 2);
  EXPECT_LE(ops.top_level_ops(), 5);
  EXPECT_EQ(ops.optimizer_ops(), 0);
}

TEST(OpCounterTest, StopsCountingWhenDestroyed) {
  int64_t counted = 0;
  {
    OpCounter ops;
    torch::ones({2}).add_(1);
    counted = ops.top_level_ops();
  }
  torch::ones({2}).add_(1);  // Must not crash or count anywhere.
  EXPECT_EQ(counted, 2);
}

}  // namespace
}  // namespace torchbench
