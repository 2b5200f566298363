// TorchBench's pytorch_unet (torchbenchmark/models/pytorch_unet/__init__.py
// at 43ca0857, with its copy of milesial/Pytorch-UNet: unet/unet_model.py,
// unet/unet_parts.py and utils/dice_score.py): UNet(n_channels=3,
// n_classes=2, bilinear=True) on Carvana-sized images (640x959, half of
// 1280x1918), whose odd width makes every Up block pad its upsampled map.
//
// One Train call is the reference's train(): a new RMSprop (lr 1e-5, weight
// decay 1e-8, momentum 0.9) on every call, so its square averages and
// momentum start from zero each step; model.train(); CrossEntropyLoss plus
// the multiclass dice loss of the softmax against the one-hot masks;
// zero_grad, backward, step. One Eval call is eval(): model.eval() and the
// one-hot of the logits' argmax.
//
// Inputs: the reference reads no dataset. Its images are rand(B, 3, 640,
// 959) drawn before the UNet is built, its masks randint(0, 1, (B, 640,
// 959)) drawn after, which are all zeros; both are drawn here on the host
// in that order and then moved, as the reference does.
#include <torch/nn/functional/loss.h>
#include <torch/nn/functional/padding.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/pooling.h>
#include <torch/nn/modules/upsampling.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <map>
#include <string>
#include <vector>

#include "torchbench/amp.h"
#include "torchbench/checks.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/golden.h"
#include "torchbench/model.h"
#include "torchbench/optim.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace pytorch_unet_model {
namespace {

namespace F = torch::nn::functional;

constexpr int64_t kNChannels = 3;
constexpr int64_t kNClasses = 2;
constexpr int64_t kHeight = 640;
constexpr int64_t kWidth = 959;
// The golden check's size (tools/golden/adapters/pytorch_unet.py), also the
// CPU tests' (ModelConfig::small_inputs): small, with an odd width so that
// every Up block pads, as at 959.
constexpr int64_t kGoldenHeight = 64;
constexpr int64_t kGoldenWidth = 95;
constexpr double kLr = 1e-5;  // _get_args()'s --learning-rate default.
constexpr double kDiceEpsilon = 1e-6;

// (convolution => BN => ReLU) * 2.
class DoubleConvImpl : public torch::nn::Module {
 public:
  DoubleConvImpl(int64_t in_channels, int64_t out_channels,
                 int64_t mid_channels = 0) {
    if (mid_channels == 0) mid_channels = out_channels;
    double_conv_ = register_module(
        "double_conv",
        torch::nn::Sequential(
            torch::nn::Conv2d(
                torch::nn::Conv2dOptions(in_channels, mid_channels, 3)
                    .padding(1)),
            torch::nn::BatchNorm2d(mid_channels),
            torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true)),
            torch::nn::Conv2d(
                torch::nn::Conv2dOptions(mid_channels, out_channels, 3)
                    .padding(1)),
            torch::nn::BatchNorm2d(out_channels),
            torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true))));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    return double_conv_->forward(x);
  }

 private:
  torch::nn::Sequential double_conv_{nullptr};
};
TORCH_MODULE(DoubleConv);

// Max-pool by 2, then DoubleConv.
class DownImpl : public torch::nn::Module {
 public:
  DownImpl(int64_t in_channels, int64_t out_channels) {
    maxpool_conv_ = register_module(
        "maxpool_conv",
        torch::nn::Sequential(
            torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2)),
            DoubleConv(in_channels, out_channels)));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    return maxpool_conv_->forward(x);
  }

 private:
  torch::nn::Sequential maxpool_conv_{nullptr};
};
TORCH_MODULE(Down);

// The bilinear Up: upsample by 2 (align_corners), pad to the skip
// connection's size, concatenate [skip, upsampled] and DoubleConv with
// in_channels / 2 middle channels.
class UpImpl : public torch::nn::Module {
 public:
  UpImpl(int64_t in_channels, int64_t out_channels) {
    up_ = register_module(
        "up", torch::nn::Upsample(torch::nn::UpsampleOptions()
                                      .scale_factor(std::vector<double>{2, 2})
                                      .mode(torch::kBilinear)
                                      .align_corners(true)));
    conv_ = register_module(
        "conv", DoubleConv(in_channels, out_channels, in_channels / 2));
  }

  torch::Tensor forward(torch::Tensor x1, const torch::Tensor& x2) {
    x1 = up_->forward(x1);
    // The skip map is at most one row or column larger (floor-halved by the
    // max-pool), so the differences are 0 or 1 and C++'s division is
    // Python's floor division here.
    const int64_t diff_y = x2.size(2) - x1.size(2);
    const int64_t diff_x = x2.size(3) - x1.size(3);
    x1 = F::pad(x1, F::PadFuncOptions({diff_x / 2, diff_x - diff_x / 2,
                                       diff_y / 2, diff_y - diff_y / 2}));
    return conv_->forward(torch::cat({x2, x1}, /*dim=*/1));
  }

 private:
  torch::nn::Upsample up_{nullptr};
  DoubleConv conv_{nullptr};
};
TORCH_MODULE(Up);

class OutConvImpl : public torch::nn::Module {
 public:
  OutConvImpl(int64_t in_channels, int64_t out_channels) {
    conv_ = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(
                                        in_channels, out_channels, 1)));
  }

  torch::Tensor forward(const torch::Tensor& x) { return conv_->forward(x); }

 private:
  torch::nn::Conv2d conv_{nullptr};
};
TORCH_MODULE(OutConv);

// UNet(n_channels, n_classes, bilinear=True): factor 2 halves the channels
// of down4 and of up1..up3, since the bilinear Up cannot reduce them.
class UNetImpl : public torch::nn::Module {
 public:
  UNetImpl(int64_t n_channels, int64_t n_classes) {
    constexpr int64_t kFactor = 2;
    inc_ = register_module("inc", DoubleConv(n_channels, 64));
    down1_ = register_module("down1", Down(64, 128));
    down2_ = register_module("down2", Down(128, 256));
    down3_ = register_module("down3", Down(256, 512));
    down4_ = register_module("down4", Down(512, 1024 / kFactor));
    up1_ = register_module("up1", Up(1024, 512 / kFactor));
    up2_ = register_module("up2", Up(512, 256 / kFactor));
    up3_ = register_module("up3", Up(256, 128 / kFactor));
    up4_ = register_module("up4", Up(128, 64));
    outc_ = register_module("outc", OutConv(64, n_classes));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor x1 = inc_->forward(x);  // (B, 64, H, W)
    torch::Tensor x2 = down1_->forward(x1);
    torch::Tensor x3 = down2_->forward(x2);
    torch::Tensor x4 = down3_->forward(x3);
    torch::Tensor x5 = down4_->forward(x4);  // (B, 512, H/16, W/16)
    torch::Tensor y = up1_->forward(x5, x4);
    y = up2_->forward(y, x3);
    y = up3_->forward(y, x2);
    y = up4_->forward(y, x1);
    return outc_->forward(y);  // (B, n_classes, H, W) logits
  }

 private:
  DoubleConv inc_{nullptr};
  Down down1_{nullptr}, down2_{nullptr}, down3_{nullptr}, down4_{nullptr};
  Up up1_{nullptr}, up2_{nullptr}, up3_{nullptr}, up4_{nullptr};
  OutConv outc_{nullptr};
};
TORCH_MODULE(UNet);

// dice_coeff(input, target, reduce_batch_first=True) on one class's (B, H,
// W) maps. The .item() is the reference's host sync, kept with its branch.
torch::Tensor DiceCoeff(const torch::Tensor& input,
                        const torch::Tensor& target) {
  torch::Tensor inter = torch::dot(input.reshape(-1), target.reshape(-1));
  torch::Tensor sets_sum = torch::sum(input) + torch::sum(target);
  if (sets_sum.item<double>() == 0) sets_sum = 2 * inter;
  return (2 * inter + kDiceEpsilon) / (sets_sum + kDiceEpsilon);
}

// dice_loss(input, target, multiclass=True): 1 - the mean over classes of
// the batch-reduced dice coefficient.
torch::Tensor DiceLoss(const torch::Tensor& input,
                       const torch::Tensor& target) {
  TORCH_CHECK(input.sizes() == target.sizes(), "dice_loss: size mismatch");
  const int64_t classes = input.size(1);
  torch::Tensor dice;
  for (int64_t c = 0; c < classes; ++c) {
    torch::Tensor d = DiceCoeff(input.select(1, c), target.select(1, c));
    // Python's `dice = 0; dice += d` adds d to 0 first.
    dice = c == 0 ? d.add(0) : dice + d;
  }
  return torch::rsub(dice / classes, 1);
}

class PytorchUnet final : public Model, public GoldenCheck {
 public:
  explicit PytorchUnet(const ModelConfig& config)
      : mode_(config.mode),
        optimizer_path_(config.optimizer),
        output_dtype_(config.dtype()) {
    const int64_t height = config.small_inputs ? kGoldenHeight : kHeight;
    const int64_t width = config.small_inputs ? kGoldenWidth : kWidth;
    // The reference's order of draws: images, the UNet's weights, masks.
    example_inputs_ =
        torch::rand({config.batch_size, kNChannels, height, width});
    net_ = UNet(kNChannels, kNClasses);
    net_->to(config.device);
    if (mode_ == Mode::kTrain) {
      sample_masks_ =
          torch::randint(0, 1, {config.batch_size, height, width}, torch::kLong)
              .to(config.device);
      net_->train();
    } else {
      net_->eval();
    }
    example_inputs_ = example_inputs_.to(config.device, config.dtype());
  }

  torch::Tensor Step() override {
    if (mode_ == Mode::kEval) return EvalStep();
    return TrainStep();
  }

  torch::nn::Module& module() override { return *net_; }

  // The reference's eval() and two train() calls on filled images at the
  // golden size, as tools/golden/adapters/pytorch_unet.py records them.
  //
  // In float64, the reference's .float() casts included: in float32 a 1e-7
  // relative change of the images moves the first conv's gradient by 9e-4
  // relative and, through RMSprop's g / sqrt(v) of near-zero gradients, its
  // weights after one step by 6e-4 (measured on the reference), beyond the
  // 1e-4 bar between machines; in float64 a 1e-13 change moves no recorded
  // value's golden error by more than 4e-14 (no element by more than 3e-13).
  std::map<std::string, torch::Tensor> GoldenOutputs() override {
    net_->to(torch::kDouble);
    cast_dtype_ = torch::kDouble;
    output_dtype_ = torch::kDouble;
    const int64_t batch = example_inputs_.size(0);
    const torch::Device device = example_inputs_.device();
    example_inputs_ =
        DeterministicTensor("images",
                            {batch, kNChannels, kGoldenHeight, kGoldenWidth})
            .to(device, torch::kDouble);
    sample_masks_ = torch::randint(
        0, 1, {batch, kGoldenHeight, kGoldenWidth},
        torch::TensorOptions().dtype(torch::kLong).device(device));
    std::map<std::string, torch::Tensor> out = recorder_.Capture([&] {
      {
        torch::NoGradGuard no_grad;
        recorder_.Record("eval_output", EvalStep());
      }
      TrainStep();
    });
    RecordEdgeParameters(*net_, "after_step:", /*gradients=*/false, &out);
    for (const auto& buffer : net_->named_buffers(/*recurse=*/true)) {
      if (buffer.key() == "inc.double_conv.1.running_mean" ||
          buffer.key() == "up4.conv.double_conv.4.running_var") {
        out["after_step:" + buffer.key()] = buffer.value().detach().clone();
      }
    }
    TrainStep();
    RecordEdgeParameters(*net_, "after_2_steps:", /*gradients=*/false, &out);
    return out;
  }

 private:
  // Model.eval(). Returns the one-hot (B, n_classes, H, W) prediction and
  // records the logits it came from.
  torch::Tensor EvalStep() {
    net_->eval();
    torch::Tensor mask_pred = net_->forward(example_inputs_);
    if (recorder_.recording()) {
      recorder_.Record("eval_logits", mask_pred.clone());
    }
    return torch::one_hot(mask_pred.argmax(/*dim=*/1), kNClasses)
        .permute({0, 3, 1, 2})
        .to(output_dtype_);
  }

  // Model.train(). Records the logits, both losses, their sum and the edge
  // gradients before the step. Returns the loss (the reference returns
  // nothing).
  torch::Tensor TrainStep() {
    optim::Rmsprop optimizer(net_->parameters(),
                             {.lr = kLr, .weight_decay = 1e-8, .momentum = 0.9},
                             optimizer_path_);
    net_->train();
    torch::Tensor masks_pred = net_->forward(example_inputs_);
    torch::Tensor ce = F::cross_entropy(masks_pred, sample_masks_);
    torch::Tensor dice =
        DiceLoss(torch::softmax(masks_pred, /*dim=*/1).to(cast_dtype_),
                 torch::one_hot(sample_masks_, kNClasses)
                     .permute({0, 3, 1, 2})
                     .to(cast_dtype_));
    torch::Tensor loss = ce + dice;
    optimizer.ZeroGrad();
    Backward(loss);
    if (recorder_.recording()) {
      recorder_.Record("output", masks_pred.clone());
      recorder_.Record("loss.ce", ce);
      recorder_.Record("loss.dice", dice);
      recorder_.Record("loss", loss);
      std::map<std::string, torch::Tensor> grads;
      RecordEdgeParameters(*net_, "grad:", /*gradients=*/true, &grads);
      for (const auto& [key, grad] : grads) recorder_.Record(key, grad);
    }
    optimizer.Step();
    return loss.detach();
  }

  Mode mode_;
  OptimizerPath optimizer_path_;
  // The dtype of the reference's .float() casts in the loss: float32, made
  // float64 only for the golden check, as the adapter does.
  torch::ScalarType cast_dtype_ = torch::kFloat;
  // The dtype of Eval's one-hot output: the reference's .float() is
  // float32 always, here config.dtype(), the same under fp32 and amp; under
  // fp16/bf16 the 0/1 values are exact either way, and an Eval output in
  // another dtype than the run's is what the precision test rejects.
  torch::ScalarType output_dtype_;
  UNet net_{nullptr};
  torch::Tensor example_inputs_;
  torch::Tensor sample_masks_;  // Train only.
  GoldenRecorder recorder_;
};

}  // namespace

TORCHBENCH_REGISTER_MODEL(
    ModelSpec(
        {.name = "pytorch_unet",
         .domain = "vision",
         .task = "segmentation",
         .reference = "TorchBench pytorch_unet (milesial Pytorch-UNet, "
                      "bilinear)",
         .train_batch_size = 1,  // DEFAULT_TRAIN_BSIZE
         .eval_batch_size = 1,   // DEFAULT_EVAL_BSIZE
         // UNet(n_channels=3, n_classes=2, bilinear=True) from the reference's
         // unet package (pinned torch), counted in Python (sum(p.numel() ...)
         // over parameters() and over buffers(); the buffers are 18 BatchNorms'
         // running statistics and num_batches_tracked).
         .reference_parameters = 17267458,
         .reference_buffers = 8850,
         // DEFAULT_TRAIN_CUDA_PRECISION = DEFAULT_EVAL_CUDA_PRECISION = "amp".
         .default_cuda_train_precision = Precision::kAmpFp16,
         .default_cuda_eval_precision = Precision::kAmpFp16,
         // eval() and two train() calls of the reference's own code on filled
         // weights and images at 64x95, in float64 (GoldenOutputs says why).
         // metadata.yaml: cuDNN deterministic in both modes; enable_amp() adds
         // a new torch.cuda.amp.GradScaler on every train() call.
         .train_cudnn = {.deterministic = true},
         .eval_cudnn = {.deterministic = true},
         .enable_amp = true,
         .amp_grad_scaler = AmpGradScaler::kPerStep,
         .checks = {.golden_file = "pytorch_unet.golden"}}),
    MakeModel<PytorchUnet>());

}  // namespace pytorch_unet_model
}  // namespace torchbench
