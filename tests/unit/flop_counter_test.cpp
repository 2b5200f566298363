#include "program/flop_counter.h"

#include <ATen/record_function.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <stdexcept>
#include <thread>

namespace torchbench {
namespace {

// ---- The formulas, against values worked out by hand ----------------------

TEST(FlopFormulaTest, MatrixProducts) {
  // 3x4 @ 4x5: 15 outputs, 4 multiply-adds each.
  EXPECT_EQ(MatmulFlops({3, 4}, {4, 5}), 2 * 3 * 5 * 4);
  EXPECT_EQ(BatchMatmulFlops({2, 3, 4}, {2, 4, 5}), 2 * 2 * 3 * 5 * 4);
  EXPECT_THROW(MatmulFlops({3, 4}, {5, 4}), std::invalid_argument);
}

TEST(FlopFormulaTest, ConvolutionWithStridePaddingAndGroups) {
  // [2, 8, 10, 10] * [16, 4, 3, 3], groups 2, stride 2, padding 1: a 5x5
  // output; each of its 2*16*25 values is 4*9 multiply-adds (its group's 4
  // input channels).
  const ConvParams p{.stride = {2}, .padding = {1}, .groups = 2};
  EXPECT_EQ(ConvOutputSpatial({2, 8, 10, 10}, {16, 4, 3, 3}, p), (Shape{5, 5}));
  EXPECT_EQ(ConvFlops({2, 8, 10, 10}, {16, 4, 3, 3}, p),
            2 * (2 * 16 * 25) * (4 * 9));
  // Dilation 2 and no padding: a 3x3 kernel spans 5, so 10 -> 6.
  const ConvParams dilated{.dilation = {2}};
  EXPECT_EQ(ConvOutputSpatial({1, 3, 10, 10}, {4, 3, 3, 3}, dilated),
            (Shape{6, 6}));
  // Transposed, weight [in 4, out 6, 3, 3], stride 2: each of the 25 input
  // positions of 4 channels scatters into 6 x 9 outputs.
  const ConvParams transposed{.stride = {2}, .transposed = true};
  EXPECT_EQ(ConvOutputSpatial({1, 4, 5, 5}, {4, 6, 3, 3}, transposed),
            (Shape{11, 11}));
  EXPECT_EQ(ConvFlops({1, 4, 5, 5}, {4, 6, 3, 3}, transposed),
            2 * 25 * 4 * 6 * 9);
}

TEST(FlopFormulaTest, DepthwiseConvolutionBackwardIsTwiceItsForward) {
  // mobilenet's depthwise 3x3: 32 channels, groups 32, [2, 32, 56, 56].
  // Forward: 2 * 2*32*56*56 outputs * 9 = 3,612,672. The input gradient
  // and the weight gradient are each that many products again.
  // FlopCounterMode (torch 2.14.1) counts the weight gradient as if every
  // input channel met every output channel: 32 times too many (119.2 M).
  const ConvParams p{.padding = {1}, .groups = 32};
  const Shape input{2, 32, 56, 56}, weight{32, 1, 3, 3};
  EXPECT_EQ(ConvFlops(input, weight, p), 3612672);
  EXPECT_EQ(ConvBackwardFlops(input, input, weight, p, true, true),
            2 * 3612672);
  EXPECT_EQ(ConvBackwardFlops(input, input, weight, p, false, true), 3612672);
  EXPECT_EQ(ConvBackwardFlops(input, input, weight, p, false, false), 0);
}

TEST(FlopFormulaTest, Attention) {
  // q, k, v [2, 4, 16, 8]: 8 heads in all; q k^T is 16x8 @ 8x16 and
  // (scores) v 16x16 @ 16x8, 2*16*16*8 = 4096 FLOPs each per head.
  const Shape qkv{2, 4, 16, 8};
  EXPECT_EQ(AttentionFlops(qkv, qkv, qkv), 8 * 2 * 4096);
  // Backward: the scores again, and the gradients of scores, v, q and k.
  EXPECT_EQ(AttentionBackwardFlops(qkv, qkv, qkv), 8 * 5 * 4096);
  // Grouped-query: 4 query heads over 2 key/value heads compute as 4.
  EXPECT_EQ(AttentionFlops(qkv, {2, 2, 16, 8}, {2, 2, 16, 8}), 8 * 2 * 4096);
  EXPECT_THROW(AttentionFlops(qkv, {2, 3, 16, 8}, {2, 3, 16, 8}),
               std::invalid_argument);
}

TEST(FlopFormulaTest, RecurrentLayer) {
  // An LSTM layer, input 32 -> hidden 64 (4 gates: 256 rows), 2 sequences
  // of 10 steps: each of the 20 steps multiplies by [256, 32] and [256, 64].
  EXPECT_EQ(RecurrentLayerFlops({10, 2, 32}, {256, 32}, {256, 64}),
            2 * 20 * (256 * 32 + 256 * 64));
  EXPECT_THROW(RecurrentLayerFlops({10, 2, 16}, {256, 32}, {256, 64}),
               std::invalid_argument);
}

// ---- Through the dispatcher -----------------------------------------------

TEST(FlopCounterTest, CountsAnOperatorOnceNotItsParts) {
  const torch::Tensor x = torch::randn({4, 8});
  const torch::Tensor w = torch::randn({16, 8});
  const torch::Tensor b = torch::randn({16});
  const torch::Tensor image = torch::randn({1, 3, 8, 8});
  const torch::Tensor filter = torch::randn({5, 3, 3, 3});
  FlopCounter flops;
  torch::linear(x, w, b);        // aten::linear -> aten::addmm
  torch::conv2d(image, filter);  // convolution -> _convolution -> mkldnn...
  torch::relu(x);                // no formula
  const FlopCount count = flops.count();
  EXPECT_EQ(count.by_operator.at("aten::addmm"), 2 * 4 * 16 * 8);
  EXPECT_EQ(count.by_operator.at("aten::convolution"),
            2 * (5 * 6 * 6) * (3 * 9));
  EXPECT_EQ(count.by_operator.size(), 2u);
  EXPECT_EQ(count.forward, count.total());
  EXPECT_EQ(count.by_dtype.at(c10::ScalarType::Float), count.total());
  EXPECT_TRUE(count.error.empty());
}

// Each counted call's bytes: its tensor inputs and outputs, once.
TEST(FlopCounterTest, CountsTheBytesEachProductMoves) {
  const torch::Tensor x = torch::randn({4, 8});
  const torch::Tensor w = torch::randn({16, 8});
  const torch::Tensor b = torch::randn({16});
  FlopCounter flops;
  torch::linear(x, w, b);  // addmm(b, x, w^T) -> [4, 16]
  const FlopCount count = flops.count();
  ASSERT_EQ(count.calls.size(), 1u);
  EXPECT_EQ(count.calls[0].bytes, 4 * (16 + 4 * 8 + 16 * 8 + 4 * 16));
  EXPECT_EQ(count.calls[0].flops, 2 * 4 * 8 * 16);
  EXPECT_EQ(count.bytes, count.calls[0].bytes);
}

TEST(FlopCounterTest, BackwardAndOptimizerApart) {
  const torch::Tensor image = torch::randn({2, 3, 8, 8});
  const torch::Tensor filter =
      torch::randn({4, 3, 3, 3}, torch::requires_grad());
  const torch::Tensor w = torch::randn({5, 4 * 6 * 6}, torch::requires_grad());
  FlopCounter flops;
  const torch::Tensor features = torch::conv2d(image, filter).flatten(1);
  const torch::Tensor loss = torch::mm(features, w.t()).sum();
  loss.backward();
  {
    RECORD_USER_SCOPE("Optimizer.step#Test.step");
    torch::NoGradGuard no_grad;
    torch::mm(w.grad(), w.grad().t());
  }
  const FlopCount count = flops.count();
  const int64_t conv = 2 * (2 * 4 * 6 * 6) * (3 * 9);
  const int64_t mm = 2 * 2 * 5 * (4 * 6 * 6);
  EXPECT_EQ(count.forward, conv + mm);
  // The mm's two gradients, and only the weight's of the convolution (its
  // input needs none: output_mask says so).
  EXPECT_EQ(count.backward, 2 * mm + conv);
  EXPECT_EQ(count.optimizer, 2 * 5 * 5 * (4 * 6 * 6));
}

TEST(FlopCounterTest, CountsCpuAttentionAndItsBackward) {
  const auto grad = torch::requires_grad();
  const torch::Tensor q = torch::randn({2, 4, 16, 8}, grad);
  const torch::Tensor k = torch::randn({2, 4, 16, 8}, grad);
  const torch::Tensor v = torch::randn({2, 4, 16, 8}, grad);
  FlopCounter flops;
  torch::scaled_dot_product_attention(q, k, v).sum().backward();
  const FlopCount count = flops.count();
  EXPECT_EQ(count.forward, 8 * 2 * 4096) << count.by_operator.begin()->first;
  EXPECT_EQ(count.backward, 8 * 5 * 4096);
}

TEST(FlopCounterTest, CountsAnLstmOnTheCpu) {
  torch::nn::LSTM lstm(torch::nn::LSTMOptions(32, 64).batch_first(true));
  const torch::Tensor x = torch::randn({2, 10, 32});
  FlopCounter flops;
  std::get<0>(lstm->forward(x)).sum().backward();
  const FlopCount count = flops.count();
  const int64_t forward = 2 * 20 * (256 * 32 + 256 * 64);
  // oneDNN's layer where LibTorch takes it, else the products it decomposes
  // into (the same FLOPs).
  EXPECT_EQ(count.forward, forward);
  EXPECT_EQ(count.backward, 2 * forward);
}

TEST(FlopCounterTest, CountsOtherThreadsButNotParallelRegions) {
  const torch::Tensor a = torch::randn({64, 64});
  FlopCounter flops;
  std::thread([&] { torch::mm(a, a); }).join();
  at::parallel_for(0, 2, 1, [&](int64_t, int64_t) { torch::mm(a, a); });
  // The thread's mm counts; inside a parallel region (even when it runs on
  // this thread) an mm is part of an operator of another thread.
  EXPECT_EQ(flops.count().total(), 2 * 64 * 64 * 64);
}

TEST(FlopCounterTest, ActiveOnlyWhileAlive) {
  EXPECT_FALSE(FlopCounter::Active());
  {
    FlopCounter flops;
    EXPECT_TRUE(FlopCounter::Active());
    EXPECT_THROW(FlopCounter(), std::logic_error);
    EXPECT_TRUE(FlopCounter::Active());
  }
  EXPECT_FALSE(FlopCounter::Active());
  const torch::Tensor a = torch::randn({4, 4});
  FlopCounter flops;
  torch::mm(a, a);
  EXPECT_EQ(flops.count().total(), 2 * 4 * 4 * 4);
}

TEST(FlopCounterTest, CountsTheDtypeEachProductRanIn) {
  const torch::Tensor a = torch::randn({8, 8}, torch::kBFloat16);
  const torch::Tensor b = torch::randn({8, 8});
  FlopCounter flops;
  torch::mm(a, a);
  torch::mm(b, b);
  const FlopCount count = flops.count();
  EXPECT_EQ(count.by_dtype.at(c10::ScalarType::BFloat16), 1024);
  EXPECT_EQ(count.by_dtype.at(c10::ScalarType::Float), 1024);
}

}  // namespace
}  // namespace torchbench
