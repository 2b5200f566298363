#include "torchbench/amp.h"

#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>
#include <vector>

#include "amp_internal.h"
#include "torchbench/optim.h"

namespace torchbench {
namespace {

TEST(AutocastScopeTest, CastsMatmulsInsideAndRestoresOutside) {
  const torch::Tensor a = torch::randn({4, 4});
  {
    AutocastScope amp(torch::kCPU, /*enabled=*/true, torch::kBFloat16);
    EXPECT_EQ(torch::mm(a, a).scalar_type(), torch::kBFloat16);
    {
      AutocastScope off(torch::kCPU, /*enabled=*/false, torch::kBFloat16);
      EXPECT_EQ(torch::mm(a, a).scalar_type(), torch::kFloat);
    }
    EXPECT_EQ(torch::mm(a, a).scalar_type(), torch::kBFloat16);
  }
  EXPECT_FALSE(at::autocast::is_autocast_enabled(torch::kCPU));
  EXPECT_EQ(torch::mm(a, a).scalar_type(), torch::kFloat);
}

TEST(GradScalerTest, ScalesTheLossAndUnscalesTheGradients) {
  torch::Tensor w = torch::full({3}, 2.0).requires_grad_();
  GradScaler scaler;
  torch::Tensor scaled = scaler.Scale((w * w).sum());
  scaled.backward();
  EXPECT_TRUE(torch::allclose(w.grad(), torch::full({3}, 4.0 * 65536.0)));
  ASSERT_TRUE(scaler.UnscaleAndCheck({w.grad()}));
  EXPECT_TRUE(torch::allclose(w.grad(), torch::full({3}, 4.0)));
  scaler.Update();
  EXPECT_EQ(scaler.scale(), 65536.0);
}

TEST(GradScalerTest, SkipsTheStepAndBacksOffOnInfThenGrows) {
  GradScaler scaler({.init_scale = 1024.0, .growth_interval = 2});
  torch::Tensor w = torch::ones({2}).requires_grad_();
  auto step = [&](double factor) {
    w.mutable_grad().reset();
    scaler.Scale((w * factor).sum()).backward();
    const bool ok = scaler.UnscaleAndCheck({w.grad()});
    scaler.Update();
    return ok;
  };
  EXPECT_FALSE(step(std::numeric_limits<double>::infinity()));
  EXPECT_TRUE(scaler.last_step_skipped());
  EXPECT_EQ(scaler.scale(), 512.0);
  EXPECT_TRUE(step(1.0));
  EXPECT_EQ(scaler.scale(), 512.0);
  EXPECT_TRUE(step(1.0));
  EXPECT_EQ(scaler.scale(), 1024.0);  // Two clean steps: growth.
}

TEST(GradScalerTest, RefusesToUnscaleWithoutAScaledLoss) {
  GradScaler scaler;
  torch::Tensor g = torch::ones({2});
  EXPECT_THROW(scaler.UnscaleAndCheck({g}), c10::Error);
}

ModelConfig AmpTrain(Precision precision) {
  ModelConfig config;
  config.mode = Mode::kTrain;
  config.precision = precision;
  return config;
}

TEST(StepPrecisionTest, Fp16TrainStepScalesUnscalesAndSkipsOnInf) {
  const ModelConfig config = AmpTrain(Precision::kAmpFp16);
  GradScaler scaler;
  torch::Tensor w = torch::ones({2}).requires_grad_();
  optim::Sgd sgd({w}, {.lr = 1.0}, OptimizerPath::kSingle);
  {
    StepPrecision step(config, &scaler);
    EXPECT_TRUE(at::autocast::is_autocast_enabled(torch::kCPU));
    sgd.ZeroGrad();
    Backward((w * 3.0).sum());
    sgd.Step();
    step.Finish();
  }
  EXPECT_FALSE(at::autocast::is_autocast_enabled(torch::kCPU));
  EXPECT_TRUE(torch::allclose(w.detach(), torch::full({2}, -2.0)));
  {
    StepPrecision step(config, &scaler);
    sgd.ZeroGrad();
    Backward((w * std::numeric_limits<double>::infinity()).sum());
    sgd.Step();  // Skipped: Inf gradients.
    step.Finish();
  }
  EXPECT_TRUE(torch::allclose(w.detach(), torch::full({2}, -2.0)));
  EXPECT_EQ(scaler.scale(), 32768.0);
}

// Clipping reads the gradients before the optimizer steps: they must be
// unscaled (GradScaler.unscale_), and the step must not unscale them again.
TEST(StepPrecisionTest, GradientsUnscaledForClippingAreUnscaledOnce) {
  const ModelConfig config = AmpTrain(Precision::kAmpFp16);
  GradScaler scaler;
  torch::Tensor w = torch::ones({2}).requires_grad_();
  optim::Sgd sgd({w}, {.lr = 1.0}, OptimizerPath::kSingle);
  StepPrecision step(config, &scaler);
  Backward((w * 3.0).sum());
  EXPECT_TRUE(torch::allclose(w.grad(), torch::full({2}, 3.0 * 65536)));
  UnscaleGradients({w.grad()});
  EXPECT_TRUE(torch::allclose(w.grad(), torch::full({2}, 3.0)));
  UnscaleGradients({w.grad()});  // unscale_ runs once per step
  EXPECT_TRUE(torch::allclose(w.grad(), torch::full({2}, 3.0)));
  sgd.Step();
  EXPECT_TRUE(torch::allclose(w.detach(), torch::full({2}, -2.0)));
  step.Finish();
}

TEST(StepPrecisionTest, AScaledLossNothingUnscaledIsAnError) {
  const ModelConfig config = AmpTrain(Precision::kAmpFp16);
  GradScaler scaler;
  torch::Tensor w = torch::ones({2}).requires_grad_();
  StepPrecision step(config, &scaler);
  Backward((w * 3.0).sum());  // then an update by hand, no unscaling
  EXPECT_THROW(step.Finish(), c10::Error);
}

// TorchBench's amp Train has no GradScaler unless the model adds one: the
// harness passes none (ModelSpec::amp_grad_scaler).
TEST(StepPrecisionTest, Fp16AmpTrainWithoutAScalerLeavesGradientsAlone) {
  const ModelConfig config = AmpTrain(Precision::kAmpFp16);
  torch::Tensor w = torch::ones({2}).requires_grad_();
  optim::Sgd sgd({w}, {.lr = 1.0}, OptimizerPath::kSingle);
  StepPrecision step(config, /*scaler=*/nullptr);
  EXPECT_TRUE(at::autocast::is_autocast_enabled(torch::kCPU));
  EXPECT_EQ(ActiveGradScaler(), nullptr);
  Backward((w * 3.0).sum());
  UnscaleGradients({w.grad()});  // nothing to do
  EXPECT_TRUE(torch::allclose(w.grad(), torch::full({2}, 3.0)));
  sgd.Step();
  EXPECT_TRUE(torch::allclose(w.detach(), torch::full({2}, -2.0)));
  step.Finish();
}

TEST(StepPrecisionTest, Bf16AmpNeedsNoScalerAndBackwardRunsOutsideAutocast) {
  const ModelConfig config = AmpTrain(Precision::kAmpBf16);
  GradScaler scaler;
  torch::Tensor w = torch::randn({4, 4}).requires_grad_();
  StepPrecision step(config, &scaler);
  EXPECT_EQ(ActiveGradScaler(), nullptr);
  torch::Tensor y = torch::mm(w, w);
  EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
  Backward(y.sum());
  EXPECT_EQ(w.grad().scalar_type(), torch::kFloat);
  step.Finish();
}

// What a reference computes after its autocast block runs in the input's
// own dtype; autocast is back on after the scope, and outside a step the
// scope does nothing.
TEST(StepPrecisionTest, OutsideAutocastTurnsItOffForItsScopeOnly) {
  const ModelConfig config = AmpTrain(Precision::kAmpBf16);
  GradScaler scaler;
  torch::Tensor w = torch::randn({4, 4}).requires_grad_();
  {
    OutsideAutocast before_any_step;
    EXPECT_EQ(torch::mm(w, w).scalar_type(), torch::kFloat);
  }
  StepPrecision step(config, &scaler);
  torch::Tensor y = torch::mm(w, w);
  EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
  {
    OutsideAutocast outside;
    EXPECT_FALSE(at::autocast::is_autocast_enabled(c10::DeviceType::CPU));
    EXPECT_EQ(torch::mm(w, w).scalar_type(), torch::kFloat);
    // cross_entropy on the bf16 output stays bf16, as after the block.
    torch::Tensor loss = torch::nn::functional::cross_entropy(
        y, torch::zeros({4}, torch::kLong));
    EXPECT_EQ(loss.scalar_type(), torch::kBFloat16);
    Backward(loss.to(torch::kFloat));
  }
  EXPECT_TRUE(at::autocast::is_autocast_enabled(c10::DeviceType::CPU));
  EXPECT_EQ(torch::mm(w, w).scalar_type(), torch::kBFloat16);
  step.Finish();
}

TEST(StepPrecisionTest, AmpTrainWithoutBackwardIsAnError) {
  const ModelConfig config = AmpTrain(Precision::kAmpBf16);
  GradScaler scaler;
  StepPrecision step(config, &scaler);
  EXPECT_THROW(step.Finish(), c10::Error);
}

TEST(StepPrecisionTest, AStepDeclaredWithoutBackwardFinishes) {
  const ModelConfig config = AmpTrain(Precision::kAmpBf16);
  GradScaler scaler;
  {
    StepPrecision step(config, &scaler);
    StepHasNoBackward();
    EXPECT_NO_THROW(step.Finish());
  }
  // The waiver ends with its step.
  StepPrecision next(config, &scaler);
  EXPECT_THROW(next.Finish(), c10::Error);
}

TEST(StepPrecisionTest, Fp32StepsAreUntouched) {
  const ModelConfig config = AmpTrain(Precision::kFp32);
  GradScaler scaler;
  torch::Tensor w = torch::ones({2}).requires_grad_();
  StepPrecision step(config, &scaler);
  EXPECT_FALSE(at::autocast::is_autocast_enabled(torch::kCPU));
  EXPECT_EQ(ActiveGradScaler(), nullptr);
  Backward((w * 2.0).sum());
  EXPECT_TRUE(torch::allclose(w.grad(), torch::full({2}, 2.0)));
  step.Finish();
}

}  // namespace
}  // namespace torchbench
