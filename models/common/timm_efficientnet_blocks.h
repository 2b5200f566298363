// timm's EfficientNet trunk (timm/models/efficientnet.py,
// _efficientnet_blocks.py, _efficientnet_builder.py; pinned timm) for the
// b0 arch string, with the options its variants differ by:
//
//   efficientnet_b0       symmetric padding, BatchNorm eps 1e-5, depth 1.0
//   tf_efficientnet_b1    TF "SAME" padding (timm's Conv2dSame where the
//                         padding depends on the input size), eps 1e-3,
//                         depth multiplier 1.1
//
// and drop path (stochastic depth) as timm's builder assigns it: block i of n
// drops its residual branch with probability drop_path_rate * i / n in
// training mode. Module names are timm's (conv_stem, bn1, blocks.S.B.*), so
// state_dicts load by name. timm_efficientnet adds the classifier head;
// timm_efficientdet reads three stage outputs (features_only).
#ifndef TORCHBENCH_MODELS_COMMON_TIMM_EFFICIENTNET_BLOCKS_H_
#define TORCHBENCH_MODELS_COMMON_TIMM_EFFICIENTNET_BLOCKS_H_

#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

namespace torchbench::common::effnet {

// timm.layers.padding.pad_same: pads so that a (kernel, stride) window covers
// ceil(size / stride) outputs, the odd pixel on the bottom/right, with
// `value` (0 for convolutions, -inf for max pooling).
inline torch::Tensor PadSame(const torch::Tensor& x, int64_t kernel,
                             int64_t stride, double value = 0.0) {
  auto pad = [&](int64_t size) {
    const int64_t out = (size + stride - 1) / stride;
    return std::max<int64_t>((out - 1) * stride + kernel - size, 0);
  };
  const int64_t ph = pad(x.size(-2));
  const int64_t pw = pad(x.size(-1));
  if (ph == 0 && pw == 0) return x;
  return torch::constant_pad_nd(x, {pw / 2, pw - pw / 2, ph / 2, ph - ph / 2},
                                value);
}

// timm.layers.create_conv2d: a Conv2d (same parameter names) whose padding is
// symmetric, or, for "same" padding that depends on the input size (stride
// > 1), timm's Conv2dSame, which pads at run time.
class TimmConv2dImpl : public torch::nn::Conv2dImpl {
 public:
  TimmConv2dImpl(int64_t in, int64_t out, int64_t kernel, int64_t stride,
                 int64_t groups, bool bias, bool same_padding)
      : torch::nn::Conv2dImpl(
            torch::nn::Conv2dOptions(in, out, kernel)
                .stride(stride)
                .padding(same_padding && stride > 1
                             ? 0
                             : ((stride - 1) + (kernel - 1)) / 2)
                .groups(groups)
                .bias(bias)),
        dynamic_pad_(same_padding && stride > 1),
        kernel_(kernel),
        stride_(stride) {}

  torch::Tensor forward(const torch::Tensor& x) {
    return torch::nn::Conv2dImpl::forward(
        dynamic_pad_ ? PadSame(x, kernel_, stride_) : x);
  }

 private:
  bool dynamic_pad_;
  int64_t kernel_;
  int64_t stride_;
};
TORCH_MODULE(TimmConv2d);

// timm's BatchNormAct2d: a BatchNorm2d (same state_dict names) followed by
// SiLU or nothing.
class BatchNormActImpl : public torch::nn::BatchNorm2dImpl {
 public:
  BatchNormActImpl(int64_t channels, bool act, double eps = 1e-5)
      : torch::nn::BatchNorm2dImpl(
            torch::nn::BatchNormOptions(channels).eps(eps)),
        act_(act) {}

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = torch::nn::BatchNorm2dImpl::forward(x);
    return act_ ? torch::silu(y) : y;
  }

 private:
  bool act_;
};
TORCH_MODULE(BatchNormAct);

// timm.layers.drop_path (scale_by_keep=True): one Bernoulli(1 - p) draw per
// sample, the kept samples scaled by 1 / (1 - p).
inline torch::Tensor DropPath(const torch::Tensor& x, double p, bool training) {
  if (p == 0.0 || !training) return x;
  const double keep = 1.0 - p;
  std::vector<int64_t> shape(x.dim(), 1);
  shape[0] = x.size(0);
  torch::Tensor mask = torch::empty(shape, x.options()).bernoulli_(keep);
  mask.div_(keep);
  return x * mask;
}

// _efficientnet_blocks.SqueezeExcite with SiLU and a sigmoid gate.
class SqueezeExciteImpl : public torch::nn::Module {
 public:
  SqueezeExciteImpl(int64_t channels, int64_t reduced)
      : conv_reduce_(register_module(
            "conv_reduce",
            TimmConv2d(channels, reduced, 1, 1, 1, true, false))),
        conv_expand_(register_module(
            "conv_expand",
            TimmConv2d(reduced, channels, 1, 1, 1, true, false))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor s = x.mean({2, 3}, /*keepdim=*/true);
    s = conv_expand_(torch::silu(conv_reduce_(s)));
    return x * s.sigmoid();
  }

 private:
  TimmConv2d conv_reduce_;
  TimmConv2d conv_expand_;
};
TORCH_MODULE(SqueezeExcite);

// One block: "ds" (expansion 1, DepthwiseSeparableConv) or "ir"
// (InvertedResidual), both with SE ratio 0.25 of the block's input channels.
struct EfficientNetBlockArgs {
  int64_t in;
  int64_t out;
  int64_t kernel;
  int64_t stride;
  int64_t expand;  // 1 means the "ds" block
  double drop_path = 0.0;
  double bn_eps = 1e-5;
  bool same_padding = false;
};

class DepthwiseSeparableConvImpl : public torch::nn::Module {
 public:
  explicit DepthwiseSeparableConvImpl(const EfficientNetBlockArgs& a)
      : has_skip_(a.stride == 1 && a.in == a.out),
        drop_path_(a.drop_path),
        conv_dw_(register_module(
            "conv_dw", TimmConv2d(a.in, a.in, a.kernel, a.stride, a.in, false,
                                  a.same_padding))),
        bn1_(register_module("bn1", BatchNormAct(a.in, true, a.bn_eps))),
        se_(register_module("se", SqueezeExcite(a.in, a.in / 4))),
        conv_pw_(register_module(
            "conv_pw", TimmConv2d(a.in, a.out, 1, 1, 1, false, false))),
        bn2_(register_module("bn2", BatchNormAct(a.out, false, a.bn_eps))) {}

  void set_drop_path(double p) { drop_path_ = p; }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = bn2_(conv_pw_(se_(bn1_(conv_dw_(x)))));
    return has_skip_ ? DropPath(y, drop_path_, is_training()) + x : y;
  }

 private:
  bool has_skip_;
  double drop_path_;
  TimmConv2d conv_dw_;
  BatchNormAct bn1_;
  SqueezeExcite se_;
  TimmConv2d conv_pw_;
  BatchNormAct bn2_;
};
TORCH_MODULE(DepthwiseSeparableConv);

class InvertedResidualImpl : public torch::nn::Module {
 public:
  explicit InvertedResidualImpl(const EfficientNetBlockArgs& a)
      : has_skip_(a.stride == 1 && a.in == a.out),
        drop_path_(a.drop_path),
        conv_pw_(register_module("conv_pw", TimmConv2d(a.in, a.in * a.expand, 1,
                                                       1, 1, false, false))),
        bn1_(register_module("bn1",
                             BatchNormAct(a.in * a.expand, true, a.bn_eps))),
        conv_dw_(register_module(
            "conv_dw",
            TimmConv2d(a.in * a.expand, a.in * a.expand, a.kernel, a.stride,
                       a.in * a.expand, false, a.same_padding))),
        bn2_(register_module("bn2",
                             BatchNormAct(a.in * a.expand, true, a.bn_eps))),
        se_(register_module("se", SqueezeExcite(a.in * a.expand, a.in / 4))),
        conv_pwl_(register_module(
            "conv_pwl",
            TimmConv2d(a.in * a.expand, a.out, 1, 1, 1, false, false))),
        bn3_(register_module("bn3", BatchNormAct(a.out, false, a.bn_eps))) {}

  void set_drop_path(double p) { drop_path_ = p; }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = bn1_(conv_pw_(x));
    y = se_(bn2_(conv_dw_(y)));
    y = bn3_(conv_pwl_(y));
    return has_skip_ ? DropPath(y, drop_path_, is_training()) + x : y;
  }

 private:
  bool has_skip_;
  double drop_path_;
  TimmConv2d conv_pw_;
  BatchNormAct bn1_;
  TimmConv2d conv_dw_;
  BatchNormAct bn2_;
  SqueezeExcite se_;
  TimmConv2d conv_pwl_;
  BatchNormAct bn3_;
};
TORCH_MODULE(InvertedResidual);

struct EfficientNetOptions {
  TORCH_ARG(double, bn_eps) = 1e-5;
  TORCH_ARG(bool, same_padding) = false;
  // Stage repeats become ceil(repeats * depth_multiplier) (timm's "ceil"
  // depth truncation); channels stay b0's (channel multiplier 1.0).
  TORCH_ARG(double, depth_multiplier) = 1.0;
  TORCH_ARG(double, drop_path_rate) = 0.0;
};

// conv_stem, bn1 and the seven stages of blocks, registered on the derived
// module itself (timm's names). Forward runs them; `stage_outputs`, when
// given, receives every stage's output.
class EfficientNetTrunkImpl : public torch::nn::Module {
 public:
  // Output channels of stage 0..6.
  static constexpr int64_t kStageChannels[7] = {16, 24, 40, 80, 112, 192, 320};

  explicit EfficientNetTrunkImpl(const EfficientNetOptions& o) {
    // b0's arch_def: ds_r1_k3_s1_e1_c16_se0.25, ir_r2_k3_s2_e6_c24_se0.25,
    // ir_r2_k5_s2_e6_c40_se0.25, ir_r3_k3_s2_e6_c80_se0.25,
    // ir_r3_k5_s1_e6_c112_se0.25, ir_r4_k5_s2_e6_c192_se0.25,
    // ir_r1_k3_s1_e6_c320_se0.25.
    struct Stage {
      int64_t repeats, kernel, stride, expand;
    };
    const Stage stages[7] = {{1, 3, 1, 1}, {2, 3, 2, 6}, {2, 5, 2, 6},
                             {3, 3, 2, 6}, {3, 5, 1, 6}, {4, 5, 2, 6},
                             {1, 3, 1, 6}};
    std::vector<int64_t> repeats;
    int64_t total = 0;
    for (const Stage& s : stages) {
      repeats.push_back(static_cast<int64_t>(
          std::ceil(static_cast<double>(s.repeats) * o.depth_multiplier())));
      total += repeats.back();
    }
    conv_stem_ = register_module(
        "conv_stem", TimmConv2d(3, 32, 3, 2, 1, false, o.same_padding()));
    bn1_ = register_module("bn1", BatchNormAct(32, true, o.bn_eps()));
    blocks_ = register_module("blocks", torch::nn::ModuleList());
    int64_t in = 32;
    int64_t index = 0;
    for (int s = 0; s < 7; ++s) {
      torch::nn::Sequential stage;
      for (int64_t i = 0; i < repeats[s]; ++i, ++index) {
        EfficientNetBlockArgs a{in,
                                kStageChannels[s],
                                stages[s].kernel,
                                i == 0 ? stages[s].stride : 1,
                                stages[s].expand,
                                o.drop_path_rate() *
                                    static_cast<double>(index) /
                                    static_cast<double>(total),
                                o.bn_eps(),
                                o.same_padding()};
        if (stages[s].expand == 1) {
          stage->push_back(DepthwiseSeparableConv(a));
        } else {
          stage->push_back(InvertedResidual(a));
        }
        in = kStageChannels[s];
      }
      blocks_->push_back(stage);
    }
  }

  // Reassigns every block's drop-path probability as the builder does:
  // rate * block index / block count.
  void SetDropPathRate(double rate) {
    std::vector<std::shared_ptr<torch::nn::Module>> blocks;
    for (auto& stage : *blocks_) {
      for (auto& block : stage->children()) blocks.push_back(block);
    }
    for (size_t i = 0; i < blocks.size(); ++i) {
      const double p =
          rate * static_cast<double>(i) / static_cast<double>(blocks.size());
      if (auto* ds = blocks[i]->as<DepthwiseSeparableConv>()) {
        ds->set_drop_path(p);
      } else if (auto* ir = blocks[i]->as<InvertedResidual>()) {
        ir->set_drop_path(p);
      }
    }
  }

  torch::Tensor ForwardTrunk(const torch::Tensor& x,
                             std::vector<torch::Tensor>* stage_outputs) {
    torch::Tensor y = bn1_(conv_stem_(x));
    for (auto& stage : *blocks_) {
      y = stage->as<torch::nn::Sequential>()->forward(y);
      if (stage_outputs != nullptr) stage_outputs->push_back(y);
    }
    return y;
  }

 private:
  TimmConv2d conv_stem_{nullptr};
  BatchNormAct bn1_{nullptr};
  // A ModuleList of Sequential stages (LibTorch cannot nest Sequentials).
  torch::nn::ModuleList blocks_{nullptr};
};

// timm's _init_weight_goog (fix_group_fanout=True) over `module`'s
// convolutions, batch norms and linear layers.
inline void InitEfficientNetWeights(torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  for (auto& m : module.modules(/*include_self=*/false)) {
    if (auto* conv = m->as<torch::nn::Conv2d>()) {
      const auto& o = conv->options;
      const int64_t fan_out = o.kernel_size()->at(0) * o.kernel_size()->at(1) *
                              o.out_channels() / o.groups();
      torch::nn::init::normal_(conv->weight, 0.0, std::sqrt(2.0 / fan_out));
      if (conv->bias.defined()) torch::nn::init::zeros_(conv->bias);
    } else if (auto* bn = m->as<torch::nn::BatchNorm2d>()) {
      torch::nn::init::ones_(bn->weight);
      torch::nn::init::zeros_(bn->bias);
    } else if (auto* linear = m->as<torch::nn::Linear>()) {
      const double range = 1.0 / std::sqrt(linear->weight.size(0));
      torch::nn::init::uniform_(linear->weight, -range, range);
      torch::nn::init::zeros_(linear->bias);
    }
  }
}

}  // namespace torchbench::common::effnet

#endif  // TORCHBENCH_MODELS_COMMON_TIMM_EFFICIENTNET_BLOCKS_H_
