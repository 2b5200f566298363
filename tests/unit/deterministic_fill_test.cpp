#include "torchbench/deterministic_fill.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

namespace torchbench {
namespace {

// The same values are pinned in tools/golden/test_fill.py for the Python
// twin: a change to either side's rule fails both tests.
TEST(DeterministicFillTest, MatchesThePinnedValues) {
  torch::Tensor w = DeterministicTensor("weight", {5});
  const std::vector<float> expected = {-0x1.c8d384p-1f, -0x1.f70690p-3f,
                                       0x1.50ff38p-1f, 0x1.db85a0p-1f,
                                       0x1.06d164p-1f};
  ASSERT_EQ(w.scalar_type(), torch::kFloat);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(w[i].item<float>(), expected[i]) << i;

  torch::Tensor ids = DeterministicIntegers("tokens", {6}, 0, 30522);
  EXPECT_TRUE(torch::equal(
      ids,
      torch::tensor({23170, 8911, 10719, 4636, 6736, 26231}, torch::kLong)));

  torch::Tensor d = DeterministicTensor("x", {3}, torch::kDouble, 1.0, 0.5);
  EXPECT_EQ(d[0].item<double>(), 0.701208233833313);
  EXPECT_EQ(d[1].item<double>(), 1.3085267543792725);
  EXPECT_EQ(d[2].item<double>(), 1.1433236002922058);
}

TEST(DeterministicFillTest, ShapeIsRowMajorOverOneSequence) {
  torch::Tensor flat = DeterministicTensor("t", {12});
  torch::Tensor shaped = DeterministicTensor("t", {3, 4});
  EXPECT_TRUE(torch::equal(flat.reshape({3, 4}), shaped));
  EXPECT_FALSE(torch::equal(DeterministicTensor("u", {12}), flat));
  EXPECT_GE(flat.min().item<float>(), -1.0f);
  EXPECT_LT(flat.max().item<float>(), 1.0f);
}

TEST(DeterministicFillTest, FillFollowsNamesAndShapes) {
  torch::nn::Module root;
  auto linear = root.register_module("fc", torch::nn::Linear(48, 8));
  auto bn = root.register_module("bn", torch::nn::BatchNorm1d(8));
  DeterministicFill(root);
  const double bound = std::sqrt(3.0 / 48);
  EXPECT_LE(linear->weight.abs().max().item<double>(), bound);
  EXPECT_GT(linear->weight.abs().max().item<double>(), 0.9 * bound);
  EXPECT_TRUE(torch::equal(
      linear->weight,
      DeterministicTensor("fc.weight", {8, 48}, torch::kFloat, 0, bound)));
  EXPECT_LE(linear->bias.abs().max().item<double>(), 0.1);
  EXPECT_GE(bn->running_var.min().item<double>(), 0.5);
  EXPECT_GE(bn->weight.min().item<double>(), 0.75);
  EXPECT_TRUE(torch::equal(
      bn->running_mean,
      DeterministicTensor("bn.running_mean", {8}, torch::kFloat, 0, 0.1)));
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 0);  // Integers stay.
}

}  // namespace
}  // namespace torchbench
