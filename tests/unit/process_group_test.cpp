#include "torchbench/process_group.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

namespace torchbench {
namespace {

TEST(ProcessGroupTest, GlooWorldOfOneGathersAndBroadcasts) {
  auto pg = CreateWorldOfOne(torch::kCPU);
  ASSERT_TRUE(pg.ok()) << pg.status();
  EXPECT_EQ((*pg)->getBackendName(), "gloo");
  EXPECT_EQ((*pg)->getRank(), 0);
  EXPECT_EQ((*pg)->getSize(), 1);

  const torch::Tensor x = torch::arange(6, torch::kFloat).reshape({2, 3});
  std::vector<std::vector<torch::Tensor>> gathered{{torch::ones_like(x)}};
  std::vector<torch::Tensor> input{x};
  ASSERT_TRUE((*pg)->allgather(gathered, input)->wait());
  EXPECT_TRUE(torch::equal(gathered[0][0], x));
  EXPECT_NE(gathered[0][0].data_ptr(), x.data_ptr());  // a real copy

  std::vector<torch::Tensor> perm{torch::randperm(8, torch::kLong)};
  const torch::Tensor before = perm[0].clone();
  ASSERT_TRUE((*pg)->broadcast(perm)->wait());
  EXPECT_TRUE(torch::equal(perm[0], before));

  // A second group is independent of the first (each model instance owns
  // one).
  auto second = CreateWorldOfOne(torch::kCPU);
  ASSERT_TRUE(second.ok()) << second.status();
  std::vector<torch::Tensor> grads{torch::full({4}, 3.0)};
  ASSERT_TRUE((*second)->allreduce(grads)->wait());
  EXPECT_TRUE(torch::equal(grads[0], torch::full({4}, 3.0)));
}

}  // namespace
}  // namespace torchbench
