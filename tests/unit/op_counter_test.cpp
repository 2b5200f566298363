#include "program/op_counter.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <thread>
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

// On a GPU the autograd engine runs backward on its device threads: a
// counter must see what other threads dispatch.
TEST(OpCounterTest, CountsOpsOfOtherThreads) {
  OpCounter ops;
  std::thread worker([] {
    torch::Tensor t = torch::ones({4});
    t.add_(1);
  });
  worker.join();
  EXPECT_EQ(ops.top_level_ops(), 2);
}

// Operators an intra-op parallel region dispatches are inside another
// thread's operator: the top-level count must not depend on the threads.
TEST(OpCounterTest, OpsInsideParallelRegionsAreNotTopLevel) {
  const torch::Tensor t = torch::ones({64});
  OpCounter ops;
  at::parallel_for(0, 64, 1, [&](int64_t begin, int64_t end) {
    t.slice(0, begin, end).sum();
  });
  EXPECT_EQ(ops.top_level_ops(), 0);
  EXPECT_GT(ops.all_ops(), 0);
}

TEST(OpCounterTest, NestedCounterCountsOnceAndHandsBack) {
  OpCounter outer;
  torch::ones({2}).add_(1);
  int64_t inner_count = 0;
  {
    OpCounter inner;
    torch::ones({2}).add_(1);
    inner_count = inner.top_level_ops();
  }
  torch::ones({2}).add_(1);
  EXPECT_EQ(inner_count, 2);
  EXPECT_EQ(outer.top_level_ops(), 4);
}

}  // namespace
}  // namespace torchbench
