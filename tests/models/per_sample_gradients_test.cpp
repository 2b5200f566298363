// models/common/per_sample_gradients: both per-sample gradient paths
// (LibTorch's vmap(grad) and the Opacus-style layer hooks) against a loop of
// single-sample backward passes on a tiny conv / GroupNorm / Linear net, and
// the DP-SGD clipping against its definition.
#include "common/per_sample_gradients.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

namespace torchbench::common {
namespace {

namespace F = torch::nn::functional;

// params: conv1 weight and bias (4x3x3x3), GroupNorm(2, 4) weight and bias,
// conv2 weight (4x4x3x3, stride 2, no bias), Linear(4, 5) weight and bias.
// The ReLUs run in place on the hooked GroupNorm output, as torchvision's.
torch::Tensor TinyNet(const std::vector<torch::Tensor>& p,
                      const torch::Tensor& x, GradSampleHooks* hooks) {
  torch::Tensor h =
      F::conv2d(x, p[0], F::Conv2dFuncOptions().bias(p[1]).padding(1));
  if (hooks != nullptr) {
    hooks->Conv2d(x, h, p[0], p[1], {.kernel_size = {3, 3}, .padding = {1, 1}});
  }
  torch::Tensor g =
      F::group_norm(h, F::GroupNormFuncOptions(2).weight(p[2]).bias(p[3]));
  if (hooks != nullptr) hooks->GroupNorm(h, g, p[2], p[3], 2, 1e-5);
  g.relu_();
  torch::Tensor c =
      F::conv2d(g, p[4], F::Conv2dFuncOptions().stride(2).padding(1));
  if (hooks != nullptr) {
    hooks->Conv2d(g, c, p[4], {},
                  {.kernel_size = {3, 3}, .stride = {2, 2}, .padding = {1, 1}});
  }
  torch::Tensor pooled =
      torch::adaptive_avg_pool2d(c.relu(), {1, 1}).flatten(1);
  torch::Tensor logits = F::linear(pooled, p[5], p[6]);
  if (hooks != nullptr) hooks->Linear(pooled, logits, p[5], p[6]);
  return logits;
}

struct Case {
  std::vector<torch::Tensor> params;
  torch::Tensor x;
  torch::Tensor y;
};

Case MakeCase() {
  torch::manual_seed(0);
  Case c;
  const auto f64 = torch::TensorOptions().dtype(torch::kDouble);
  for (auto shape : std::vector<std::vector<int64_t>>{
           {4, 3, 3, 3}, {4}, {4}, {4}, {4, 4, 3, 3}, {5, 4}, {5}}) {
    c.params.push_back(torch::randn(shape, f64).requires_grad_());
  }
  c.x = torch::randn({6, 3, 8, 8}, f64);
  c.y = torch::randint(0, 5, {6});
  return c;
}

// The definition: one backward per sample.
std::vector<torch::Tensor> LoopReference(const Case& c) {
  std::vector<std::vector<torch::Tensor>> per_param(c.params.size());
  for (int64_t i = 0; i < c.x.size(0); ++i) {
    torch::Tensor loss =
        F::cross_entropy(TinyNet(c.params, c.x.slice(0, i, i + 1), nullptr),
                         c.y.slice(0, i, i + 1));
    auto grads = torch::autograd::grad({loss}, c.params);
    for (size_t k = 0; k < grads.size(); ++k) per_param[k].push_back(grads[k]);
  }
  std::vector<torch::Tensor> out;
  for (auto& g : per_param) out.push_back(torch::stack(g));
  return out;
}

TEST(PerSampleGradientsTest, VmapGradMatchesSingleSampleLoop) {
  Case c = MakeCase();
  std::vector<torch::Tensor> expected = LoopReference(c);
  std::vector<torch::Tensor> got = VmapGrad(
      [](const std::vector<torch::Tensor>& p,
         const std::vector<torch::Tensor>& s) {
        return F::cross_entropy(TinyNet(p, s[0].unsqueeze(0), nullptr),
                                s[1].unsqueeze(0));
      },
      c.params, {c.x, c.y});
  ASSERT_EQ(got.size(), expected.size());
  for (size_t k = 0; k < got.size(); ++k) {
    EXPECT_TRUE(torch::allclose(got[k], expected[k], 1e-9, 1e-11))
        << "param " << k;
  }
}

TEST(PerSampleGradientsTest, HooksMatchSingleSampleLoopForAMeanLoss) {
  Case c = MakeCase();
  std::vector<torch::Tensor> expected = LoopReference(c);
  GradSampleHooks hooks;
  torch::Tensor loss = F::cross_entropy(TinyNet(c.params, c.x, &hooks), c.y);
  loss.backward();
  for (size_t k = 0; k < c.params.size(); ++k) {
    EXPECT_TRUE(torch::allclose(hooks.GradSample(c.params[k]), expected[k],
                                1e-9, 1e-11))
        << "param " << k;
  }
  hooks.Clear();
  EXPECT_THROW(hooks.GradSample(c.params[0]), c10::Error);
}

TEST(PerSampleGradientsTest, ClipAndAccumulateClipsEachSampleToTheNorm) {
  Case c = MakeCase();
  std::vector<torch::Tensor> samples = LoopReference(c);
  torch::Tensor norms;
  std::vector<torch::Tensor> summed = ClipAndAccumulate(samples, 0.5, &norms);
  for (int64_t i = 0; i < c.x.size(0); ++i) {
    double sq = 0;
    for (const auto& g : samples) sq += g[i].pow(2).sum().item<double>();
    EXPECT_NEAR(norms[i].item<double>(), std::sqrt(sq), 1e-9);
  }
  torch::Tensor factor = (0.5 / (norms + 1e-6)).clamp_max(1.0);
  for (size_t k = 0; k < samples.size(); ++k) {
    torch::Tensor expected = torch::zeros_like(samples[k][0]);
    for (int64_t i = 0; i < c.x.size(0); ++i)
      expected += factor[i] * samples[k][i];
    EXPECT_TRUE(torch::allclose(summed[k], expected, 1e-12, 1e-12)) << k;
  }
}

}  // namespace
}  // namespace torchbench::common
