// TorchBench's timm_efficientnet: timm efficientnet_b0
// (timm/models/efficientnet.py, _efficientnet_blocks.py; timm 1.0.29
// and 1.0.31) under TorchBench's TimmModel steps (common/image_classifier.h).
// Drop rate and drop-path rate are timm's defaults for this model (0), so train
// and eval forwards differ only in batch norm.
#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "common/image_classifier.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace timm_efficientnet_model {
namespace {

torch::nn::Conv2d Conv(int64_t in, int64_t out, int64_t kernel,
                       int64_t stride = 1, int64_t groups = 1,
                       bool bias = false) {
  // timm's create_conv2d with padding='' is symmetric (k - 1) / 2 padding.
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel)
                               .stride(stride)
                               .padding((kernel - 1) / 2)
                               .groups(groups)
                               .bias(bias));
}

// timm's BatchNormAct2d: a BatchNorm2d (same state_dict names) followed by
// SiLU or nothing.
class BatchNormActImpl : public torch::nn::BatchNorm2dImpl {
 public:
  BatchNormActImpl(int64_t channels, bool act)
      : torch::nn::BatchNorm2dImpl(channels), act_(act) {}

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = torch::nn::BatchNorm2dImpl::forward(x);
    return act_ ? torch::silu(y) : y;
  }

 private:
  bool act_;
};
TORCH_MODULE(BatchNormAct);

// _efficientnet_blocks.SqueezeExcite with SiLU and a sigmoid gate.
class SqueezeExciteImpl : public torch::nn::Module {
 public:
  SqueezeExciteImpl(int64_t channels, int64_t reduced)
      : conv_reduce_(register_module(
            "conv_reduce", Conv(channels, reduced, 1, 1, 1, /*bias=*/true))),
        conv_expand_(register_module(
            "conv_expand", Conv(reduced, channels, 1, 1, 1, /*bias=*/true))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor s = x.mean({2, 3}, /*keepdim=*/true);
    s = conv_expand_(torch::silu(conv_reduce_(s)));
    return x * s.sigmoid();
  }

 private:
  torch::nn::Conv2d conv_reduce_;
  torch::nn::Conv2d conv_expand_;
};
TORCH_MODULE(SqueezeExcite);

// One block of the efficientnet_b0 arch string: "ds" (expansion 1,
// DepthwiseSeparableConv) or "ir" (InvertedResidual), both with SE ratio
// 0.25 of the block's input channels.
struct BlockArgs {
  int64_t in;
  int64_t out;
  int64_t kernel;
  int64_t stride;
  int64_t expand;  // 1 means the "ds" block
};

class DepthwiseSeparableConvImpl : public torch::nn::Module {
 public:
  explicit DepthwiseSeparableConvImpl(const BlockArgs& a)
      : has_skip_(a.stride == 1 && a.in == a.out),
        conv_dw_(register_module("conv_dw",
                                 Conv(a.in, a.in, a.kernel, a.stride, a.in))),
        bn1_(register_module("bn1", BatchNormAct(a.in, true))),
        se_(register_module("se", SqueezeExcite(a.in, a.in / 4))),
        conv_pw_(register_module("conv_pw", Conv(a.in, a.out, 1))),
        bn2_(register_module("bn2", BatchNormAct(a.out, false))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = bn2_(conv_pw_(se_(bn1_(conv_dw_(x)))));
    return has_skip_ ? y + x : y;
  }

 private:
  bool has_skip_;
  torch::nn::Conv2d conv_dw_;
  BatchNormAct bn1_;
  SqueezeExcite se_;
  torch::nn::Conv2d conv_pw_;
  BatchNormAct bn2_;
};
TORCH_MODULE(DepthwiseSeparableConv);

class InvertedResidualImpl : public torch::nn::Module {
 public:
  explicit InvertedResidualImpl(const BlockArgs& a)
      : has_skip_(a.stride == 1 && a.in == a.out),
        conv_pw_(register_module("conv_pw", Conv(a.in, a.in * a.expand, 1))),
        bn1_(register_module("bn1", BatchNormAct(a.in * a.expand, true))),
        conv_dw_(register_module(
            "conv_dw", Conv(a.in * a.expand, a.in * a.expand, a.kernel,
                            a.stride, a.in * a.expand))),
        bn2_(register_module("bn2", BatchNormAct(a.in * a.expand, true))),
        se_(register_module("se", SqueezeExcite(a.in * a.expand, a.in / 4))),
        conv_pwl_(register_module("conv_pwl", Conv(a.in * a.expand, a.out, 1))),
        bn3_(register_module("bn3", BatchNormAct(a.out, false))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = bn1_(conv_pw_(x));
    y = se_(bn2_(conv_dw_(y)));
    y = bn3_(conv_pwl_(y));
    return has_skip_ ? y + x : y;
  }

 private:
  bool has_skip_;
  torch::nn::Conv2d conv_pw_;
  BatchNormAct bn1_;
  torch::nn::Conv2d conv_dw_;
  BatchNormAct bn2_;
  SqueezeExcite se_;
  torch::nn::Conv2d conv_pwl_;
  BatchNormAct bn3_;
};
TORCH_MODULE(InvertedResidual);

// A stage of the arch definition: repeats, kernel, first stride, expansion,
// output channels (channel and depth multipliers 1.0 for b0).
struct StageArgs {
  int64_t repeats;
  int64_t kernel;
  int64_t stride;
  int64_t expand;
  int64_t out;
};

class EfficientNetImpl : public torch::nn::Module {
 public:
  EfficientNetImpl() {
    // timm's efficientnet_b0 arch_def:
    // ds_r1_k3_s1_e1_c16_se0.25, ir_r2_k3_s2_e6_c24_se0.25,
    // ir_r2_k5_s2_e6_c40_se0.25, ir_r3_k3_s2_e6_c80_se0.25,
    // ir_r3_k5_s1_e6_c112_se0.25, ir_r4_k5_s2_e6_c192_se0.25,
    // ir_r1_k3_s1_e6_c320_se0.25.
    const std::vector<StageArgs> stages = {{1, 3, 1, 1, 16},  {2, 3, 2, 6, 24},
                                           {2, 5, 2, 6, 40},  {3, 3, 2, 6, 80},
                                           {3, 5, 1, 6, 112}, {4, 5, 2, 6, 192},
                                           {1, 3, 1, 6, 320}};
    conv_stem_ = register_module("conv_stem", Conv(3, 32, 3, 2));
    bn1_ = register_module("bn1", BatchNormAct(32, true));
    blocks_ = register_module("blocks", torch::nn::ModuleList());
    int64_t in = 32;
    for (const StageArgs& s : stages) {
      torch::nn::Sequential stage;
      for (int64_t i = 0; i < s.repeats; ++i) {
        const BlockArgs a{in, s.out, s.kernel, i == 0 ? s.stride : 1, s.expand};
        if (s.expand == 1) {
          stage->push_back(DepthwiseSeparableConv(a));
        } else {
          stage->push_back(InvertedResidual(a));
        }
        in = s.out;
      }
      blocks_->push_back(stage);
    }
    conv_head_ = register_module("conv_head", Conv(in, 1280, 1));
    bn2_ = register_module("bn2", BatchNormAct(1280, true));
    classifier_ = register_module("classifier", torch::nn::Linear(1280, 1000));
    InitWeights();
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = bn1_(conv_stem_(x));
    for (auto& stage : *blocks_) {
      y = stage->as<torch::nn::Sequential>()->forward(y);
    }
    y = bn2_(conv_head_(y));
    // SelectAdaptivePool2d('avg', flatten=True).
    return classifier_(torch::adaptive_avg_pool2d(y, {1, 1}).flatten(1));
  }

 private:
  // timm's _init_weight_goog (fix_group_fanout=True).
  void InitWeights() {
    torch::NoGradGuard no_grad;
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* conv = m->as<torch::nn::Conv2d>()) {
        const auto& o = conv->options;
        const int64_t fan_out = o.kernel_size()->at(0) *
                                o.kernel_size()->at(1) * o.out_channels() /
                                o.groups();
        torch::nn::init::normal_(conv->weight, 0.0, std::sqrt(2.0 / fan_out));
        if (conv->bias.defined()) torch::nn::init::zeros_(conv->bias);
      } else if (auto* bn = m->as<BatchNormAct>()) {
        torch::nn::init::ones_(bn->weight);
        torch::nn::init::zeros_(bn->bias);
      } else if (auto* linear = m->as<torch::nn::Linear>()) {
        const double range = 1.0 / std::sqrt(linear->weight.size(0));
        torch::nn::init::uniform_(linear->weight, -range, range);
        torch::nn::init::zeros_(linear->bias);
      }
    }
  }

  torch::nn::Conv2d conv_stem_{nullptr};
  BatchNormAct bn1_{nullptr};
  // A ModuleList of Sequential stages (LibTorch cannot nest Sequentials).
  torch::nn::ModuleList blocks_{nullptr};
  torch::nn::Conv2d conv_head_{nullptr};
  BatchNormAct bn2_{nullptr};
  torch::nn::Linear classifier_{nullptr};
};
TORCH_MODULE(EfficientNet);

ModelSpec Spec() {
  ModelSpec spec;
  spec.name = "timm_efficientnet";
  // TimmModel: DEFAULT_EVAL_CUDA_PRECISION = "fp16" (util/framework/timm).
  spec.default_cuda_eval_precision = Precision::kFp16;
  spec.domain = "vision";
  spec.task = "image classification";
  spec.reference = "timm efficientnet_b0";
  spec.train_batch_size = 32;  // DEFAULT_TRAIN_BSIZE
  spec.eval_batch_size = 64;   // DEFAULT_EVAL_BSIZE
  spec.test_batch_size = 2;
  spec.supports_channels_last = true;
  // timm 1.0.29 (and 1.0.31) create_model("efficientnet_b0"), counted in Python
  // (sum(p.numel() for p in m.parameters())).
  spec.reference_parameters = 5288548;
  // Same model, sum over m.buffers(): 49 BatchNormAct2d layers' running
  // mean/var plus one num_batches_tracked each.
  spec.reference_buffers = 42065;
  spec.python_reference = "timm:efficientnet_b0";
  spec.reference_input_shape = {2, 3, 224, 224};
  return spec;
}

}  // namespace

TORCHBENCH_REGISTER_MODEL(Spec(), common::MakeTimmClassifier<EfficientNet>(
                                      [] { return EfficientNet(); },
                                      {.input_size = {3, 224, 224},
                                       .num_classes = 1000,
                                       .no_weight_decay = {}}));

}  // namespace timm_efficientnet_model
}  // namespace torchbench
