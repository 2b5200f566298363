// TorchBench's timm_nfnet: timm dm_nfnet_f0 (timm/models/nfnet.py,
// layers/std_conv.py; pinned timm and 1.0.31) under TorchBench's TimmModel
// steps (common/image_classifier.h). TimmModel feeds default_cfg["input_size"],
// which is 3x192x192 for dm_nfnet_f0 (its test_input_size 256 is unused).
//
// No normalisation layers: every conv standardises its weight on each
// forward (ScaledStdConv2dSame), activations carry the GELU gamma, and each
// residual branch is scaled by a learned skipinit gain (initialised to 0).
#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "common/families.h"
#include "common/image_classifier.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace timm_nfnet_model {
namespace {

// timm's _nonlin_gamma["gelu"]: rescales GELU output to unit variance.
constexpr double kGeluGamma = 1.7015043497085571;
// NfCfg defaults for the dm_nfnet family.
constexpr double kAlpha = 0.2;
constexpr double kAttnGain = 2.0;
constexpr double kStdConvEps = 1e-5;

// GammaAct('gelu', gamma).
torch::Tensor GammaGelu(const torch::Tensor& x) {
  return torch::gelu(x) * kGeluGamma;
}

// TF-style "SAME" padding amount for one spatial dimension (pad_same()).
int64_t SamePad(int64_t size, int64_t kernel, int64_t stride) {
  const int64_t out = (size + stride - 1) / stride;
  return std::max<int64_t>((out - 1) * stride + kernel - size, 0);
}

// ScaledStdConv2dSame: weight standardised per output channel (biased
// variance, eps 1e-5) and scaled by gain / sqrt(fan_in) on every forward.
// Stride-1 odd kernels pad statically; stride-2 convs pad dynamically and
// asymmetrically (extra row/column at the bottom/right) as TF does.
class ScaledStdConv2dImpl : public torch::nn::Conv2dImpl {
 public:
  ScaledStdConv2dImpl(int64_t in, int64_t out, int64_t kernel,
                      int64_t stride = 1, int64_t groups = 1,
                      double gain_init = 1.0)
      : torch::nn::Conv2dImpl(torch::nn::Conv2dOptions(in, out, kernel)
                                  .stride(stride)
                                  .padding(stride == 1 ? (kernel - 1) / 2 : 0)
                                  .groups(groups)),
        dynamic_pad_(stride != 1),
        static_pad_(stride == 1 ? (kernel - 1) / 2 : 0),
        scale_(1.0 /
               std::sqrt(static_cast<double>(in / groups * kernel * kernel))) {
    gain = register_parameter("gain", torch::full({out, 1, 1, 1}, gain_init));
  }

  torch::Tensor forward(const torch::Tensor& input) {
    torch::Tensor x = input;
    if (dynamic_pad_) {
      const int64_t k = options.kernel_size()->at(0);
      const int64_t s = options.stride()->at(0);
      const int64_t ph = SamePad(x.size(2), k, s);
      const int64_t pw = SamePad(x.size(3), k, s);
      x = torch::constant_pad_nd(x, {pw / 2, pw - pw / 2, ph / 2, ph - ph / 2},
                                 0.0);
    }
    const int64_t out = options.out_channels();
    // F.batch_norm over the flattened weight, exactly as timm computes it.
    torch::Tensor w = torch::batch_norm(weight.reshape({1, out, -1}),
                                        (gain * scale_).view(-1),
                                        /*bias=*/{}, /*running_mean=*/{},
                                        /*running_var=*/{}, /*training=*/true,
                                        /*momentum=*/0.0, kStdConvEps,
                                        /*cudnn_enabled=*/true)
                          .reshape_as(weight);
    return torch::conv2d(x, w, bias, options.stride(),
                         {static_pad_, static_pad_}, options.dilation(),
                         options.groups());
  }

  torch::Tensor gain;

 private:
  bool dynamic_pad_;
  int64_t static_pad_;
  double scale_;
};
TORCH_MODULE(ScaledStdConv2d);

// timm's SEModule(rd_ratio=0.5) with ReLU and a sigmoid gate.
class SqueezeExciteImpl : public torch::nn::Module {
 public:
  SqueezeExciteImpl(int64_t channels, int64_t reduced)
      : fc1_(register_module("fc1", torch::nn::Conv2d(torch::nn::Conv2dOptions(
                                        channels, reduced, 1)))),
        fc2_(register_module("fc2", torch::nn::Conv2d(torch::nn::Conv2dOptions(
                                        reduced, channels, 1)))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor s = x.mean({2, 3}, /*keepdim=*/true);
    return x * fc2_(torch::relu(fc1_(s))).sigmoid();
  }

 private:
  torch::nn::Conv2d fc1_;
  torch::nn::Conv2d fc2_;
};
TORCH_MODULE(SqueezeExcite);

// DownsampleAvg: 2x2 average pool (ceil_mode, count_include_pad=False) when
// strided, then a 1x1 ScaledStdConv2d.
class DownsampleAvgImpl : public torch::nn::Module {
 public:
  DownsampleAvgImpl(int64_t in, int64_t out, int64_t stride)
      : pool_(stride > 1),
        conv_(register_module("conv", ScaledStdConv2d(in, out, 1))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    if (!pool_) return conv_(x);
    return conv_(torch::avg_pool2d(x, {2, 2}, {2, 2}, {0, 0},
                                   /*ceil_mode=*/true,
                                   /*count_include_pad=*/false));
  }

 private:
  bool pool_;
  ScaledStdConv2d conv_;
};
TORCH_MODULE(DownsampleAvg);

// NormFreeBlock with extra_conv, SE after conv3 (attn_last) and skipinit.
class NormFreeBlockImpl : public torch::nn::Module {
 public:
  NormFreeBlockImpl(int64_t in, int64_t out, int64_t stride, double beta)
      : beta_(beta) {
    constexpr int64_t kGroupSize = 128;
    const int64_t mid = out / 2;  // bottle_ratio 0.5, a multiple of 128
    const int64_t groups = mid / kGroupSize;
    // Registration order follows timm's named_parameters().
    skipinit_gain = register_parameter("skipinit_gain", torch::zeros({}));
    if (in != out || stride != 1) {
      downsample_ =
          register_module("downsample", DownsampleAvg(in, out, stride));
    }
    conv1_ = register_module("conv1", ScaledStdConv2d(in, mid, 1));
    conv2_ =
        register_module("conv2", ScaledStdConv2d(mid, mid, 3, stride, groups));
    conv2b_ =
        register_module("conv2b", ScaledStdConv2d(mid, mid, 3, 1, groups));
    conv3_ = register_module("conv3", ScaledStdConv2d(mid, out, 1));
    attn_last_ = register_module("attn_last", SqueezeExcite(out, out / 2));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor out = GammaGelu(x) * beta_;
    torch::Tensor shortcut = downsample_ ? downsample_->forward(out) : x;
    out = conv1_(out);
    out = conv2_(GammaGelu(out));
    out = conv2b_(GammaGelu(out));
    out = conv3_(GammaGelu(out));
    out = kAttnGain * attn_last_(out);
    out = out * skipinit_gain;
    return out * kAlpha + shortcut;
  }

  torch::Tensor skipinit_gain;

 private:
  double beta_;
  DownsampleAvg downsample_{nullptr};
  ScaledStdConv2d conv1_{nullptr};
  ScaledStdConv2d conv2_{nullptr};
  ScaledStdConv2d conv2b_{nullptr};
  ScaledStdConv2d conv3_{nullptr};
  SqueezeExcite attn_last_{nullptr};
};
TORCH_MODULE(NormFreeBlock);

class NfNetImpl : public torch::nn::Module {
 public:
  NfNetImpl() {
    // _dm_nfnet_cfg(depths=(1, 2, 6, 3)): channels (256, 512, 1536, 1536),
    // 'deep_quad' stem of 128 channels, final conv to 2 * 1536.
    const std::vector<int64_t> depths = {1, 2, 6, 3};
    const std::vector<int64_t> channels = {256, 512, 1536, 1536};
    stem_ = register_module("stem", torch::nn::Sequential());
    stem_->push_back("conv1", ScaledStdConv2d(3, 16, 3, 2));
    stem_->push_back("conv2", ScaledStdConv2d(16, 32, 3));
    stem_->push_back("conv3", ScaledStdConv2d(32, 64, 3));
    stem_->push_back("conv4", ScaledStdConv2d(64, 128, 3, 2));
    stages_ = register_module("stages", torch::nn::ModuleList());
    int64_t in = 128;
    double expected_var = 1.0;
    for (size_t s = 0; s < depths.size(); ++s) {
      // The stem already has stride 4, so stage 0 keeps the resolution.
      const int64_t stride = s == 0 ? 1 : 2;
      torch::nn::Sequential stage;
      for (int64_t b = 0; b < depths[s]; ++b) {
        stage->push_back(NormFreeBlock(in, channels[s], b == 0 ? stride : 1,
                                       1.0 / std::sqrt(expected_var)));
        if (b == 0) expected_var = 1.0;
        expected_var += kAlpha * kAlpha;
        in = channels[s];
      }
      stages_->push_back(stage);
    }
    final_conv_ = register_module("final_conv", ScaledStdConv2d(in, 2 * in, 1));
    // ClassifierHead's Linear is head.fc.
    head_ = register_module("head", torch::nn::Sequential());
    head_->push_back("fc", torch::nn::Linear(2 * in, 1000));
    InitWeights();
  }

  torch::Tensor forward(const torch::Tensor& x) {
    // The stem's activations sit between its convs (act2..act4).
    torch::Tensor y = x;
    bool first = true;
    for (auto& conv : stem_->children()) {
      if (!first) y = GammaGelu(y);
      y = conv->as<ScaledStdConv2d>()->forward(y);
      first = false;
    }
    for (auto& stage : *stages_) {
      y = stage->as<torch::nn::Sequential>()->forward(y);
    }
    y = GammaGelu(final_conv_(y));
    y = torch::adaptive_avg_pool2d(y, {1, 1}).flatten(1);
    return head_->forward(y);
  }

 private:
  // NormFreeNet's init: Linear N(0, .01) and zero bias; every Conv2d
  // (ScaledStdConv2d and SE convs) kaiming_normal(fan_in, linear), zero bias.
  void InitWeights() {
    torch::NoGradGuard no_grad;
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* linear = m->as<torch::nn::Linear>()) {
        torch::nn::init::normal_(linear->weight, 0.0, 0.01);
        torch::nn::init::zeros_(linear->bias);
      } else if (auto* conv = m->as<torch::nn::Conv2dImpl>()) {
        torch::nn::init::kaiming_normal_(conv->weight, 0.0, torch::kFanIn,
                                         torch::kLinear);
        torch::nn::init::zeros_(conv->bias);
      }
    }
  }

  torch::nn::Sequential stem_{nullptr};
  // A ModuleList of Sequential stages (LibTorch cannot nest Sequentials).
  torch::nn::ModuleList stages_{nullptr};
  ScaledStdConv2d final_conv_{nullptr};
  torch::nn::Sequential head_{nullptr};
};
TORCH_MODULE(NfNet);

}  // namespace

TORCHBENCH_REGISTER_MODEL(
    TimmSpec({.name = "timm_nfnet",
              .train_batch_size = 128,  // DEFAULT_TRAIN_BSIZE
              .eval_batch_size = 128,   // DEFAULT_EVAL_BSIZE
              // pinned timm (and 1.0.31) create_model("dm_nfnet_f0"), counted
              // in Python (sum(p.numel() ...)); no normalisation layers, so no
              // buffers.
              .reference_parameters = 71489284,
              .reference_buffers = 0,
              .checks = {.python_reference = "timm:dm_nfnet_f0",
                         .reference_input_shape = {2, 3, 192, 192}}}),
    common::MakeTimmClassifier<NfNet>([] { return NfNet(); },
                                      {.input_size = {3, 192, 192},
                                       .num_classes = 1000,
                                       .no_weight_decay = {}}));

}  // namespace timm_nfnet_model
}  // namespace torchbench
