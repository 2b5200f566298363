// effdet's (rwightman/efficientdet-pytorch at 79d26d8) EfficientDet network
// as tf_efficientdet_d1 configures it, for timm_efficientdet: the
// tf_efficientnet_b1 backbone's stage 2, 4 and 6 outputs, a BiFPN
// ("bifpn_fa", 4 cells, 88 channels, levels P3-P7) and the class and box
// HeadNets, with effdet's init (efficientdet._init_weight) and its bench's
// module names (Bench: "model.*" and the buffer "anchors.boxes").
#ifndef TORCHBENCH_MODELS_VISION_EFFDET_NET_H_
#define TORCHBENCH_MODELS_VISION_EFFDET_NET_H_

#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/timm_efficientnet_blocks.h"
#include "vision/effdet_anchors.h"

namespace torchbench::effdet {

using LevelSizes = std::vector<std::pair<int64_t, int64_t>>;

inline constexpr int64_t kNumClasses = 90;
inline constexpr int64_t kFpnChannels = 88;
inline constexpr double kDropPathRate = 0.2;

namespace effnet = common::effnet;

// effdet's norm_kwargs: BatchNorm2d(eps 1e-3, momentum 0.01).
inline torch::nn::BatchNorm2d EffdetBatchNorm(int64_t channels) {
  return torch::nn::BatchNorm2d(
      torch::nn::BatchNormOptions(channels).eps(1e-3).momentum(0.01));
}

// efficientdet.SeparableConv2d (3x3 depthwise, 1x1 pointwise, optional
// BatchNorm, no activation in the uses here).
class SeparableConv2dImpl : public torch::nn::Module {
 public:
  SeparableConv2dImpl(int64_t in, int64_t out, bool bias, bool norm)
      : conv_dw(register_module(
            "conv_dw", effnet::TimmConv2d(in, in, 3, 1, in, false, true))),
        conv_pw(register_module(
            "conv_pw", effnet::TimmConv2d(in, out, 1, 1, 1, bias, true))) {
    if (norm) bn = register_module("bn", EffdetBatchNorm(out));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = conv_pw(conv_dw(x));
    return bn.is_empty() ? y : bn(y);
  }

  effnet::TimmConv2d conv_dw;
  effnet::TimmConv2d conv_pw;
  torch::nn::BatchNorm2d bn{nullptr};
};
TORCH_MODULE(SeparableConv2d);

// efficientdet.ConvBnAct2d as ResampleFeatureMap builds it: 1x1 conv with
// bias (redundant_bias) and BatchNorm, no activation.
class ConvBnImpl : public torch::nn::Module {
 public:
  ConvBnImpl(int64_t in, int64_t out)
      : conv(register_module("conv",
                             effnet::TimmConv2d(in, out, 1, 1, 1, true, true))),
        bn(register_module("bn", EffdetBatchNorm(out))) {}

  torch::Tensor forward(const torch::Tensor& x) { return bn(conv(x)); }

  effnet::TimmConv2d conv;
  torch::nn::BatchNorm2d bn;
};
TORCH_MODULE(ConvBn);

// efficientdet.ResampleFeatureMap: a channel-matching ConvBn when the
// channels differ, then MaxPool2dSame(3, 2) to a coarser level or nearest
// upsampling to a finer one.
class ResampleImpl : public torch::nn::Module {
 public:
  ResampleImpl(int64_t in, int64_t in_level, int64_t out_level)
      : in_level_(in_level), out_level_(out_level) {
    if (in != kFpnChannels) {
      conv_ = register_module("conv", ConvBn(in, kFpnChannels));
    }
  }

  torch::Tensor forward(torch::Tensor x, const LevelSizes& sizes) {
    if (!conv_.is_empty()) x = conv_(x);
    if (in_level_ < out_level_) {
      x = torch::max_pool2d(
          effnet::PadSame(x, 3, 2, -std::numeric_limits<double>::infinity()),
          {3, 3}, {2, 2});
    } else if (in_level_ > out_level_) {
      const auto& [h, w] = sizes[out_level_];
      x = torch::upsample_nearest2d(x, {h, w});
    }
    return x;
  }

 private:
  int64_t in_level_;
  int64_t out_level_;
  ConvBn conv_{nullptr};
};
TORCH_MODULE(Resample);

// One BiFPN node: FpnCombine (resample each input to the node's level,
// fast normalised fusion with relu(edge_weights) / (sum + 1e-4)), then
// after_combine (SiLU, SeparableConv2d with BatchNorm).
class FnodeImpl : public torch::nn::Module {
 public:
  FnodeImpl(const std::vector<int64_t>& offsets,
            const std::vector<int64_t>& channels,
            const std::vector<int64_t>& levels, int64_t level)
      : offsets_(offsets) {
    auto combine =
        register_module("combine", std::make_shared<torch::nn::Module>());
    auto resample = combine->register_module(
        "resample", std::make_shared<torch::nn::Module>());
    for (int64_t offset : offsets) {
      resample_.push_back(resample->register_module(
          std::to_string(offset),
          Resample(channels[offset], levels[offset], level)));
    }
    edge_weights_ = combine->register_parameter(
        "edge_weights", torch::ones({static_cast<int64_t>(offsets.size())}));
    auto after =
        register_module("after_combine", std::make_shared<torch::nn::Module>());
    conv_ = after->register_module(
        "conv", SeparableConv2d(kFpnChannels, kFpnChannels, true, true));
  }

  torch::Tensor forward(const std::vector<torch::Tensor>& x,
                        const LevelSizes& sizes) {
    torch::Tensor weights = torch::relu(edge_weights_.to(x[0].scalar_type()));
    torch::Tensor weights_sum = torch::sum(weights);
    std::vector<torch::Tensor> nodes;
    for (size_t i = 0; i < offsets_.size(); ++i) {
      nodes.push_back(resample_[i]->forward(x[offsets_[i]], sizes) *
                      weights[i] / (weights_sum + 0.0001));
    }
    torch::Tensor out = torch::sum(torch::stack(nodes, -1), -1);
    return conv_(torch::silu(out));
  }

 private:
  std::vector<int64_t> offsets_;
  std::vector<Resample> resample_;
  torch::Tensor edge_weights_;
  SeparableConv2d conv_{nullptr};
};
TORCH_MODULE(Fnode);

// efficientdet.BiFpn with bifpn_config(3, 7) ("bifpn_fa"): P6 and P7 made
// from the last backbone level, then 4 BiFpnLayers of 8 nodes each.
class BiFpnImpl : public torch::nn::Module {
 public:
  explicit BiFpnImpl(const std::vector<int64_t>& backbone_channels) {
    auto resample =
        register_module("resample", std::make_shared<torch::nn::Module>());
    p6_ = resample->register_module("3", Resample(backbone_channels[2], 2, 3));
    p7_ = resample->register_module("4", Resample(kFpnChannels, 3, 4));
    // Top-down nodes at levels P6..P3, then bottom-up at P4..P7 (relative
    // levels 3..0, 1..4); node k has offset 5 + k.
    const std::vector<std::vector<int64_t>> inputs = {
        {3, 4},    {2, 5},    {1, 6},     {0, 7},
        {1, 7, 8}, {2, 6, 9}, {3, 5, 10}, {4, 11}};
    const std::vector<int64_t> node_levels = {3, 2, 1, 0, 1, 2, 3, 4};
    auto cells = register_module("cell", std::make_shared<torch::nn::Module>());
    for (int cell = 0; cell < 4; ++cell) {
      std::vector<int64_t> channels(13, kFpnChannels);
      if (cell == 0) {
        for (int i = 0; i < 3; ++i) channels[i] = backbone_channels[i];
      }
      std::vector<int64_t> levels = {0, 1, 2, 3, 4};
      levels.insert(levels.end(), node_levels.begin(), node_levels.end());
      auto layer = cells->register_module(
          std::to_string(cell), std::make_shared<torch::nn::Module>());
      auto fnode = layer->register_module(
          "fnode", std::make_shared<torch::nn::Module>());
      std::vector<Fnode> nodes;
      for (size_t k = 0; k < inputs.size(); ++k) {
        nodes.push_back(fnode->register_module(
            std::to_string(k),
            Fnode(inputs[k], channels, levels, node_levels[k])));
      }
      cells_.push_back(std::move(nodes));
    }
  }

  std::vector<torch::Tensor> forward(std::vector<torch::Tensor> x) {
    // anchors.get_feat_sizes from the P3 map: (s - 1) // 2 + 1 per level.
    LevelSizes sizes = {{x[0].size(2), x[0].size(3)}};
    for (int i = 1; i < kNumLevels; ++i) {
      sizes.emplace_back((sizes.back().first - 1) / 2 + 1,
                         (sizes.back().second - 1) / 2 + 1);
    }
    x.push_back(p6_->forward(x.back(), sizes));
    x.push_back(p7_->forward(x.back(), sizes));
    for (auto& nodes : cells_) {
      for (auto& node : nodes) x.push_back(node->forward(x, sizes));
      x = std::vector<torch::Tensor>(x.end() - kNumLevels, x.end());
    }
    return x;
  }

 private:
  Resample p6_{nullptr};
  Resample p7_{nullptr};
  std::vector<std::vector<Fnode>> cells_;
};
TORCH_MODULE(BiFpn);

// efficientdet.HeadNet (bn_level_first False): 3 separable convs shared by
// the levels, a BatchNorm per (repeat, level) under "bn_rep.R.L.bn", SiLU,
// then the prediction conv.
class HeadNetImpl : public torch::nn::Module {
 public:
  explicit HeadNetImpl(int64_t num_outputs) {
    auto conv_rep =
        register_module("conv_rep", std::make_shared<torch::nn::Module>());
    auto bn_rep =
        register_module("bn_rep", std::make_shared<torch::nn::Module>());
    for (int r = 0; r < 3; ++r) {
      conv_rep_.push_back(conv_rep->register_module(
          std::to_string(r),
          SeparableConv2d(kFpnChannels, kFpnChannels, true, false)));
      auto repeat = bn_rep->register_module(
          std::to_string(r), std::make_shared<torch::nn::Module>());
      std::vector<torch::nn::BatchNorm2d> per_level;
      for (int l = 0; l < kNumLevels; ++l) {
        auto holder = repeat->register_module(
            std::to_string(l), std::make_shared<torch::nn::Module>());
        per_level.push_back(
            holder->register_module("bn", EffdetBatchNorm(kFpnChannels)));
      }
      bn_rep_.push_back(per_level);
    }
    predict_ = register_module(
        "predict",
        SeparableConv2d(kFpnChannels, num_outputs * kAnchorsPerLocation, true,
                        false));
  }

  std::vector<torch::Tensor> forward(const std::vector<torch::Tensor>& x) {
    std::vector<torch::Tensor> outputs;
    for (int l = 0; l < kNumLevels; ++l) {
      torch::Tensor y = x[l];
      for (int r = 0; r < 3; ++r) {
        y = torch::silu(bn_rep_[r][l](conv_rep_[r](y)));
      }
      outputs.push_back(predict_(y));
    }
    return outputs;
  }

 private:
  std::vector<SeparableConv2d> conv_rep_;
  std::vector<std::vector<torch::nn::BatchNorm2d>> bn_rep_;
  SeparableConv2d predict_{nullptr};
};
TORCH_MODULE(HeadNet);

// timm's EfficientNetFeatures(tf_efficientnet_b1, out_indices=(2, 3, 4)):
// the outputs of stages 2, 4 and 6 (40, 112 and 320 channels).
class BackboneImpl : public effnet::EfficientNetTrunkImpl {
 public:
  BackboneImpl()
      : effnet::EfficientNetTrunkImpl(effnet::EfficientNetOptions()
                                          .bn_eps(1e-3)
                                          .same_padding(true)
                                          .depth_multiplier(1.1)
                                          .drop_path_rate(kDropPathRate)) {
    effnet::InitEfficientNetWeights(*this);
  }

  std::vector<torch::Tensor> forward(const torch::Tensor& x) {
    std::vector<torch::Tensor> stages;
    ForwardTrunk(x, &stages);
    return {stages[2], stages[4], stages[6]};
  }
};
TORCH_MODULE(Backbone);

// Glorot-uniform / variance-scaling init of efficientdet._init_weight, for
// a weight of `groups` groups.
inline void GlorotUniform(torch::Tensor& w, int64_t groups) {
  const int64_t rf = w[0][0].numel();
  const double fan_in = static_cast<double>(w.size(1) * rf);
  const double fan_out = static_cast<double>(w.size(0) * rf / groups);
  const double gain = 1.0 / std::max(1.0, (fan_in + fan_out) / 2.0);
  const double limit = std::sqrt(3.0 * gain);
  torch::nn::init::uniform_(w, -limit, limit);
}

inline void VarianceScaling(torch::Tensor& w) {
  const double fan_in = static_cast<double>(w.size(1) * w[0][0].numel());
  torch::nn::init::normal_(w, 0.0, std::sqrt(1.0 / std::max(1.0, fan_in)));
}

class EfficientDetImpl : public torch::nn::Module {
 public:
  EfficientDetImpl()
      : backbone(register_module("backbone", Backbone())),
        fpn(register_module("fpn", BiFpn(std::vector<int64_t>{40, 112, 320}))),
        class_net(register_module("class_net", HeadNet(kNumClasses))),
        box_net(register_module("box_net", HeadNet(4))) {
    torch::NoGradGuard no_grad;
    for (const auto& item : named_modules("", /*include_self=*/false)) {
      const std::string& name = item.key();
      if (name.rfind("backbone", 0) == 0) continue;
      const bool head =
          name.rfind("class_net", 0) == 0 || name.rfind("box_net", 0) == 0;
      if (auto* sep = item.value()->as<SeparableConv2d>()) {
        if (head) {
          VarianceScaling(sep->conv_dw->weight);
          VarianceScaling(sep->conv_pw->weight);
        } else {
          GlorotUniform(sep->conv_dw->weight, kFpnChannels);
          GlorotUniform(sep->conv_pw->weight, 1);
        }
        if (sep->conv_pw->bias.defined()) {
          if (name == "class_net.predict") {
            sep->conv_pw->bias.fill_(-std::log((1 - 0.01) / 0.01));
          } else {
            sep->conv_pw->bias.zero_();
          }
        }
      } else if (auto* conv_bn = item.value()->as<ConvBn>()) {
        GlorotUniform(conv_bn->conv->weight, 1);
        conv_bn->conv->bias.zero_();
      }
    }
  }

  std::pair<std::vector<torch::Tensor>, std::vector<torch::Tensor>> forward(
      const torch::Tensor& x) {
    std::vector<torch::Tensor> features = fpn(backbone(x));
    return {class_net(features), box_net(features)};
  }

  Backbone backbone;
  BiFpn fpn;
  HeadNet class_net;
  HeadNet box_net;
};
TORCH_MODULE(EfficientDet);

// DetBenchTrain / DetBenchPredict: the network under "model" and the
// anchors buffer under "anchors.boxes".
class BenchImpl : public torch::nn::Module {
 public:
  explicit BenchImpl(int64_t image_size)
      : model(register_module("model", EfficientDet())) {
    auto anchors =
        register_module("anchors", std::make_shared<torch::nn::Module>());
    boxes = anchors->register_buffer("boxes",
                                     GenerateAnchors(image_size, image_size));
  }

  EfficientDet model;
  torch::Tensor boxes;
};
TORCH_MODULE(Bench);

}  // namespace torchbench::effdet

#endif  // TORCHBENCH_MODELS_VISION_EFFDET_NET_H_
