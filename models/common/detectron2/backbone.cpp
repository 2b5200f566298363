#include "common/detectron2/backbone.h"

#include <torch/nn/functional/conv.h>
#include <torch/nn/functional/pooling.h>
#include <torch/nn/functional/upsampling.h>
#include <torch/nn/init.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace torchbench::detectron2 {

namespace F = torch::nn::functional;

Norm ParseNorm(const std::string& name) {
  if (name.empty()) return Norm::kNone;
  if (name == "BN") return Norm::kBN;
  if (name == "FrozenBN") return Norm::kFrozenBN;
  if (name == "GN") return Norm::kGN;
  throw std::invalid_argument("detectron2 norm not supported: " + name);
}

FrozenBatchNorm2dImpl::FrozenBatchNorm2dImpl(int64_t num_features, double eps)
    : eps_(eps) {
  weight_ = register_buffer("weight", torch::ones({num_features}));
  bias_ = register_buffer("bias", torch::zeros({num_features}));
  running_mean_ = register_buffer("running_mean", torch::zeros({num_features}));
  running_var_ =
      register_buffer("running_var", torch::ones({num_features}) - eps);
}

torch::Tensor FrozenBatchNorm2dImpl::forward(const torch::Tensor& x) {
  if (x.requires_grad()) {
    auto scale = weight_ * (running_var_ + eps_).rsqrt();
    auto shift = bias_ - running_mean_ * scale;
    return x * scale.reshape({1, -1, 1, 1}).to(x.scalar_type()) +
           shift.reshape({1, -1, 1, 1}).to(x.scalar_type());
  }
  return torch::batch_norm(x, weight_, bias_, running_mean_, running_var_,
                           /*training=*/false, /*momentum=*/0.1, eps_,
                           /*cudnn_enabled=*/true);
}

Conv2dImpl::Conv2dImpl(const Conv2dOptions& options) : options_(options) {
  const auto& o = options_;
  weight = register_parameter(
      "weight", torch::empty({o.out_channels(), o.in_channels() / o.groups(),
                              o.kernel_size(), o.kernel_size()}));
  if (o.bias()) {
    bias = register_parameter("bias", torch::empty({o.out_channels()}));
  }
  // torch.nn.Conv2d's own initialisation (the reference's modules are
  // re-initialised by c2_*_fill where its constructors say so).
  torch::nn::init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const double fan_in =
        static_cast<double>(weight.numel()) / o.out_channels();
    const double bound = 1.0 / std::sqrt(fan_in);
    torch::nn::init::uniform_(bias, -bound, bound);
  }
  switch (o.norm()) {
    case Norm::kNone:
      break;
    case Norm::kBN:
      bn_ = register_module("norm", torch::nn::BatchNorm2d(o.out_channels()));
      break;
    case Norm::kFrozenBN:
      frozen_bn_ = register_module("norm", FrozenBatchNorm2d(o.out_channels()));
      break;
    case Norm::kGN:
      gn_ = register_module(
          "norm", torch::nn::GroupNorm(
                      torch::nn::GroupNormOptions(32, o.out_channels())));
      break;
  }
}

torch::Tensor Conv2dImpl::forward(const torch::Tensor& x) {
  const auto& o = options_;
  auto y = torch::conv2d(x, weight, bias, o.stride(), o.padding(), o.dilation(),
                         o.groups());
  if (bn_) y = bn_->forward(y);
  if (frozen_bn_) y = frozen_bn_->forward(y);
  if (gn_) y = gn_->forward(y);
  if (o.relu()) y = torch::relu(y);
  return y;
}

void Conv2dImpl::C2MsraFill() {
  torch::NoGradGuard no_grad;
  torch::nn::init::kaiming_normal_(weight, 0.0, torch::kFanOut, torch::kReLU);
  if (bias.defined()) bias.zero_();
}

void Conv2dImpl::C2XavierFill() {
  torch::NoGradGuard no_grad;
  torch::nn::init::kaiming_uniform_(weight, 1.0);
  if (bias.defined()) bias.zero_();
}

BasicStemImpl::BasicStemImpl(int64_t in_channels, int64_t out_channels,
                             Norm norm)
    : out_channels_(out_channels) {
  conv1_ = register_module("conv1",
                           Conv2d(Conv2dOptions(in_channels, out_channels, 7)
                                      .stride(2)
                                      .padding(3)
                                      .bias(false)
                                      .norm(norm)));
  conv1_->C2MsraFill();
}

torch::Tensor BasicStemImpl::forward(const torch::Tensor& x) {
  auto y = conv1_->forward(x).relu_();
  return F::max_pool2d(y, F::MaxPool2dFuncOptions(3).stride(2).padding(1));
}

BottleneckBlockImpl::BottleneckBlockImpl(const BottleneckOptions& o)
    : stride_(o.stride), out_channels_(o.out_channels) {
  if (o.in_channels != o.out_channels) {
    shortcut_ = register_module(
        "shortcut", Conv2d(Conv2dOptions(o.in_channels, o.out_channels, 1)
                               .stride(o.stride)
                               .bias(false)
                               .norm(o.norm)));
  }
  const int64_t stride_1x1 = o.stride_in_1x1 ? o.stride : 1;
  const int64_t stride_3x3 = o.stride_in_1x1 ? 1 : o.stride;
  conv1_ = register_module(
      "conv1", Conv2d(Conv2dOptions(o.in_channels, o.bottleneck_channels, 1)
                          .stride(stride_1x1)
                          .bias(false)
                          .norm(o.norm)));
  conv2_ = register_module(
      "conv2",
      Conv2d(Conv2dOptions(o.bottleneck_channels, o.bottleneck_channels, 3)
                 .stride(stride_3x3)
                 .padding(o.dilation)
                 .dilation(o.dilation)
                 .groups(o.num_groups)
                 .bias(false)
                 .norm(o.norm)));
  conv3_ = register_module(
      "conv3", Conv2d(Conv2dOptions(o.bottleneck_channels, o.out_channels, 1)
                          .bias(false)
                          .norm(o.norm)));
  for (auto* conv : {&conv1_, &conv2_, &conv3_, &shortcut_}) {
    if (*conv) (*conv)->C2MsraFill();
  }
}

torch::Tensor BottleneckBlockImpl::forward(const torch::Tensor& x) {
  auto out = conv1_->forward(x).relu_();
  out = conv2_->forward(out).relu_();
  out = conv3_->forward(out);
  out += shortcut_ ? shortcut_->forward(x) : x;
  return out.relu_();
}

torch::nn::Sequential MakeBottleneckStage(int64_t num_blocks,
                                          BottleneckOptions options) {
  torch::nn::Sequential stage;
  for (int64_t i = 0; i < num_blocks; ++i) {
    stage->push_back(BottleneckBlock(options));
    options.in_channels = options.out_channels;
    options.stride = 1;
  }
  return stage;
}

void FreezeParameters(torch::nn::Module& module) {
  for (auto& p : module.parameters()) p.set_requires_grad(false);
}

namespace {

int64_t StageIndex(const std::string& name) {
  if (name == "res2") return 1;
  if (name == "res3") return 2;
  if (name == "res4") return 3;
  if (name == "res5") return 4;
  return 0;
}

}  // namespace

ResNetImpl::ResNetImpl(const ResNetOptions& o)
    : out_features_(o.out_features()) {
  std::vector<int64_t> blocks_per_stage;
  if (o.depth() == 50) {
    blocks_per_stage = {3, 4, 6, 3};
  } else if (o.depth() == 101) {
    blocks_per_stage = {3, 4, 23, 3};
  } else if (o.depth() == 152) {
    blocks_per_stage = {3, 8, 36, 3};
  } else {
    throw std::invalid_argument("detectron2 ResNet: depth must be 50/101/152");
  }
  if (o.res5_dilation() != 1 && o.res5_dilation() != 2) {
    throw std::invalid_argument("detectron2 ResNet: res5_dilation is 1 or 2");
  }
  // BN in a frozen stage becomes FrozenBN (CNNBlockBase.freeze).
  auto norm_at = [&](int64_t stage) {
    return (o.freeze_at() >= stage && o.norm() == Norm::kBN) ? Norm::kFrozenBN
                                                             : o.norm();
  };
  stem_ = register_module(
      "stem", BasicStem(o.in_channels(), o.stem_out_channels(), norm_at(1)));
  if (o.freeze_at() >= 1) FreezeParameters(*stem_);
  int64_t stride = 4;
  shapes_["stem"] = {o.stem_out_channels(), stride};

  int64_t num_stages = 0;
  for (const auto& f : out_features_) {
    num_stages = std::max(num_stages, StageIndex(f));
  }
  // out_features None in the reference: every stage, the last one out.
  if (out_features_.empty()) {
    num_stages = 4;
    out_features_ = {"res5"};
  }
  int64_t in_channels = o.stem_out_channels();
  int64_t out_channels = o.res2_out_channels();
  int64_t bottleneck = o.num_groups() * o.width_per_group();
  for (int64_t idx = 0; idx < num_stages; ++idx) {
    const int64_t stage_idx = idx + 2;
    const int64_t dilation = stage_idx == 5 ? o.res5_dilation() : 1;
    const int64_t first_stride =
        (idx == 0 || (stage_idx == 5 && dilation == 2)) ? 1 : 2;
    BottleneckOptions block;
    block.in_channels = in_channels;
    block.out_channels = out_channels;
    block.bottleneck_channels = bottleneck;
    block.stride = first_stride;
    block.num_groups = o.num_groups();
    block.norm = norm_at(stage_idx);
    block.stride_in_1x1 = o.stride_in_1x1();
    block.dilation = dilation;
    const std::string name = "res" + std::to_string(stage_idx);
    auto stage = register_module(
        name, MakeBottleneckStage(blocks_per_stage[idx], block));
    if (o.freeze_at() >= stage_idx) FreezeParameters(*stage);
    stage_names_.push_back(name);
    stages_.push_back(stage);
    stride *= first_stride;
    shapes_[name] = {out_channels, stride};
    in_channels = out_channels;
    out_channels *= 2;
    bottleneck *= 2;
  }
  for (const auto& f : out_features_) {
    if (!shapes_.count(f)) {
      throw std::invalid_argument("detectron2 ResNet: no output " + f);
    }
  }
}

FeatureMap ResNetImpl::forward(const torch::Tensor& x) {
  TORCH_CHECK(x.dim() == 4, "ResNet takes an input of shape (N, C, H, W)");
  FeatureMap outputs;
  auto is_out = [&](const std::string& name) {
    return std::find(out_features_.begin(), out_features_.end(), name) !=
           out_features_.end();
  };
  auto y = stem_->forward(x);
  if (is_out("stem")) outputs["stem"] = y;
  for (size_t i = 0; i < stages_.size(); ++i) {
    y = stages_[i]->forward(y);
    if (is_out(stage_names_[i])) outputs[stage_names_[i]] = y;
  }
  return outputs;
}

std::map<std::string, ShapeSpec> ResNetImpl::output_shape() const {
  std::map<std::string, ShapeSpec> out;
  for (const auto& f : out_features_) out[f] = shapes_.at(f);
  return out;
}

LastLevelP6P7Impl::LastLevelP6P7Impl(int64_t in_channels,
                                     int64_t out_channels) {
  auto make = [](int64_t in, int64_t out) {
    torch::nn::Conv2d conv(
        torch::nn::Conv2dOptions(in, out, 3).stride(2).padding(1));
    torch::NoGradGuard no_grad;
    torch::nn::init::kaiming_uniform_(conv->weight, 1.0);
    conv->bias.zero_();
    return conv;
  };
  p6_ = register_module("p6", make(in_channels, out_channels));
  p7_ = register_module("p7", make(out_channels, out_channels));
}

std::vector<torch::Tensor> LastLevelP6P7Impl::forward(const torch::Tensor& x) {
  auto p6 = p6_->forward(x);
  auto p7 = p7_->forward(torch::relu(p6));
  return {p6, p7};
}

FPNImpl::FPNImpl(std::shared_ptr<BackboneImpl> bottom_up,
                 const FPNOptions& options)
    : options_(options) {
  const auto input_shapes = bottom_up->output_shape();
  const auto& in_features = options_.in_features();
  TORCH_CHECK(!in_features.empty(), "FPN needs in_features");
  std::vector<int64_t> strides;
  for (size_t i = 0; i < in_features.size(); ++i) {
    const auto& shape = input_shapes.at(in_features[i]);
    strides.push_back(shape.stride);
    TORCH_CHECK(i == 0 || shape.stride == 2 * strides[i - 1],
                "FPN: strides are not log2 contiguous");
  }
  const bool use_bias = options_.norm() == Norm::kNone;
  const int64_t out_channels = options_.out_channels();
  int64_t stage = 0;
  for (size_t i = 0; i < in_features.size(); ++i) {
    const int64_t in_channels = input_shapes.at(in_features[i]).channels;
    stage = static_cast<int64_t>(std::lround(std::log2(strides[i])));
    auto lateral =
        register_module("fpn_lateral" + std::to_string(stage),
                        Conv2d(Conv2dOptions(in_channels, out_channels, 1)
                                   .bias(use_bias)
                                   .norm(options_.norm())));
    auto output =
        register_module("fpn_output" + std::to_string(stage),
                        Conv2d(Conv2dOptions(out_channels, out_channels, 3)
                                   .padding(1)
                                   .bias(use_bias)
                                   .norm(options_.norm())));
    lateral->C2XavierFill();
    output->C2XavierFill();
    lateral_convs_.insert(lateral_convs_.begin(), lateral);
    output_convs_.insert(output_convs_.begin(), output);
    out_features_.push_back("p" + std::to_string(stage));
    shapes_[out_features_.back()] = {out_channels, strides[i]};
  }
  int64_t top_levels = 0;
  if (options_.top_block() == TopBlock::kLastLevelMaxPool) {
    top_levels = 1;
  } else if (options_.top_block() == TopBlock::kLastLevelP6P7) {
    const auto& in = options_.top_block_in_feature();
    const int64_t in_channels =
        in == "p5" ? out_channels : input_shapes.at(in).channels;
    p6p7_ =
        register_module("top_block", LastLevelP6P7(in_channels, out_channels));
    top_levels = 2;
  }
  for (int64_t s = stage; s < stage + top_levels; ++s) {
    out_features_.push_back("p" + std::to_string(s + 1));
    shapes_[out_features_.back()] = {out_channels, int64_t{1} << (s + 1)};
  }
  bottom_up_ = register_module("bottom_up", std::move(bottom_up));
  size_divisibility_ = strides.back();
}

FeatureMap FPNImpl::forward(const torch::Tensor& x) {
  const auto& in_features = options_.in_features();
  FeatureMap bottom_up = bottom_up_->forward(x);
  std::vector<torch::Tensor> results;
  auto prev = lateral_convs_[0]->forward(bottom_up.at(in_features.back()));
  results.push_back(output_convs_[0]->forward(prev));
  for (size_t idx = 1; idx < lateral_convs_.size(); ++idx) {
    const auto& features =
        bottom_up.at(in_features[in_features.size() - 1 - idx]);
    auto top_down =
        F::interpolate(prev, F::InterpolateFuncOptions()
                                 .scale_factor(std::vector<double>{2.0, 2.0})
                                 .mode(torch::kNearest));
    prev = lateral_convs_[idx]->forward(features) + top_down;
    if (options_.fuse_avg()) prev /= 2;
    results.insert(results.begin(), output_convs_[idx]->forward(prev));
  }
  if (options_.top_block() == TopBlock::kLastLevelMaxPool) {
    // in_feature "p5": the last FPN output.
    results.push_back(F::max_pool2d(
        results.back(), F::MaxPool2dFuncOptions(1).stride(2).padding(0)));
  } else if (options_.top_block() == TopBlock::kLastLevelP6P7) {
    const auto& in = options_.top_block_in_feature();
    torch::Tensor top_in;
    if (bottom_up.count(in)) {
      top_in = bottom_up.at(in);
    } else {
      const auto it = std::find(out_features_.begin(), out_features_.end(), in);
      TORCH_CHECK(it != out_features_.end(), "FPN: no feature ", in);
      top_in = results[it - out_features_.begin()];
    }
    for (auto& t : p6p7_->forward(top_in)) results.push_back(t);
  }
  TORCH_CHECK(results.size() == out_features_.size());
  FeatureMap out;
  for (size_t i = 0; i < results.size(); ++i)
    out[out_features_[i]] = results[i];
  return out;
}

std::map<std::string, ShapeSpec> FPNImpl::output_shape() const {
  return shapes_;
}

FPN BuildResNetFPNBackbone(ResNetOptions resnet, const FPNOptions& fpn) {
  resnet.out_features(fpn.in_features());
  return FPN(std::make_shared<ResNetImpl>(resnet), fpn);
}

}  // namespace torchbench::detectron2
