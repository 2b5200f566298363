// File: models/common/detectron2/backbone.h
//
// detectron2's backbones (detectron2/modeling/backbone/{resnet,fpn}.py,
// layers/{wrappers,batch_norm}.py at c470ca3, the commit TorchBench pins)
// with detectron2's module and parameter names, so state_dicts load by name:
//   - Conv2d: detectron2's conv wrapper, a conv with an optional "norm"
//     child and an optional ReLU;
//   - FrozenBatchNorm2d: weight, bias, running_mean, running_var as buffers;
//   - ResNet (BasicStem + BottleneckBlock stages res2..res5; freeze_at,
//     stride_in_1x1, num_groups, width_per_group, res5 dilation for DC5,
//     out_features) as build_resnet_backbone builds it from a config;
//   - MakeBottleneckStage: ResNet.make_stage, e.g. the res5 stage that
//     Res5ROIHeads (C4) runs on pooled regions;
//   - FPN with LastLevelMaxPool (R-CNN) or LastLevelP6P7 (RetinaNet, FCOS)
//     and "sum" or "avg" fusion.
// Only BottleneckBlock is here (detectron2's R-18/34 BasicBlock and the
// deformable blocks are used by no TorchBench configuration).
#ifndef TORCHBENCH_MODELS_COMMON_DETECTRON2_BACKBONE_H_
#define TORCHBENCH_MODELS_COMMON_DETECTRON2_BACKBONE_H_

#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace torchbench::detectron2 {

// detectron2's get_norm() names: "", "BN", "FrozenBN", "GN" (32 groups).
enum class Norm { kNone, kBN, kFrozenBN, kGN };

// Parses a get_norm() name ("" is kNone); throws on others.
Norm ParseNorm(const std::string& name);

// Feature maps by name ("res2".."res5", "p2".."p7").
using FeatureMap = std::map<std::string, torch::Tensor>;

// detectron2's ShapeSpec of a backbone output.
struct ShapeSpec {
  int64_t channels = 0;
  int64_t stride = 0;
};

// layers/batch_norm.py FrozenBatchNorm2d: y = (x - mean) / sqrt(var + eps) *
// weight + bias with fixed buffers; running_var starts at 1 - eps as there.
class FrozenBatchNorm2dImpl : public torch::nn::Module {
 public:
  explicit FrozenBatchNorm2dImpl(int64_t num_features, double eps = 1e-5);
  // As the reference: a fused batch_norm(training=false) when x needs no
  // gradient, else x * scale + bias (so the buffers' gradients are never
  // computed).
  torch::Tensor forward(const torch::Tensor& x);

 private:
  double eps_;
  torch::Tensor weight_, bias_, running_mean_, running_var_;
};
TORCH_MODULE(FrozenBatchNorm2d);

struct Conv2dOptions {
  Conv2dOptions(int64_t in_channels, int64_t out_channels, int64_t kernel_size)
      : in_channels_(in_channels),
        out_channels_(out_channels),
        kernel_size_(kernel_size) {}
  TORCH_ARG(int64_t, in_channels);
  TORCH_ARG(int64_t, out_channels);
  TORCH_ARG(int64_t, kernel_size);
  TORCH_ARG(int64_t, stride) = 1;
  TORCH_ARG(int64_t, padding) = 0;
  TORCH_ARG(int64_t, dilation) = 1;
  TORCH_ARG(int64_t, groups) = 1;
  TORCH_ARG(bool, bias) = true;
  TORCH_ARG(Norm, norm) = Norm::kNone;
  // activation=F.relu.
  TORCH_ARG(bool, relu) = false;
};

// layers/wrappers.py Conv2d: parameters "weight", "bias" and, with a norm,
// the child "norm" (norm.weight, norm.running_mean, ...).
class Conv2dImpl : public torch::nn::Module {
 public:
  explicit Conv2dImpl(const Conv2dOptions& options);
  torch::Tensor forward(const torch::Tensor& x);

  // fvcore's c2_msra_fill (kaiming_normal_, fan_out, relu) and
  // c2_xavier_fill (kaiming_uniform_, a=1); both zero the bias.
  void C2MsraFill();
  void C2XavierFill();

  const Conv2dOptions& options() const { return options_; }
  torch::Tensor weight, bias;

 private:
  Conv2dOptions options_;
  torch::nn::BatchNorm2d bn_{nullptr};
  FrozenBatchNorm2d frozen_bn_{nullptr};
  torch::nn::GroupNorm gn_{nullptr};
};
TORCH_MODULE(Conv2d);

// resnet.py BasicStem: conv1 (7x7/2 with norm), relu, max_pool 3x3/2.
class BasicStemImpl : public torch::nn::Module {
 public:
  BasicStemImpl(int64_t in_channels, int64_t out_channels, Norm norm);
  torch::Tensor forward(const torch::Tensor& x);
  int64_t out_channels() const { return out_channels_; }

 private:
  int64_t out_channels_;
  Conv2d conv1_{nullptr};
};
TORCH_MODULE(BasicStem);

struct BottleneckOptions {
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  int64_t bottleneck_channels = 0;
  int64_t stride = 1;
  int64_t num_groups = 1;
  Norm norm = Norm::kFrozenBN;
  bool stride_in_1x1 = false;
  int64_t dilation = 1;
};

// resnet.py BottleneckBlock: shortcut (when channels change), conv1 (1x1),
// conv2 (3x3, groups, dilation), conv3 (1x1), ReLU after the sum.
class BottleneckBlockImpl : public torch::nn::Module {
 public:
  explicit BottleneckBlockImpl(const BottleneckOptions& options);
  torch::Tensor forward(const torch::Tensor& x);
  int64_t stride() const { return stride_; }
  int64_t out_channels() const { return out_channels_; }

 private:
  int64_t stride_, out_channels_;
  Conv2d shortcut_{nullptr}, conv1_{nullptr}, conv2_{nullptr}, conv3_{nullptr};
};
TORCH_MODULE(BottleneckBlock);

// ResNet.make_stage(BottleneckBlock, num_blocks, stride_per_block=[stride,
// 1, ...], ...): `options` describes the first block; the others take
// out_channels in and stride 1. Children are named "0", "1", ...
torch::nn::Sequential MakeBottleneckStage(int64_t num_blocks,
                                          BottleneckOptions options);

// Makes the modules of a stage (or stem) untrainable, as CNNBlockBase.freeze
// does (its BN-to-FrozenBN conversion is done at construction here).
void FreezeParameters(torch::nn::Module& module);

// What detectron2's models call: a module from an image batch to named
// feature maps.
class BackboneImpl : public torch::nn::Module {
 public:
  virtual FeatureMap forward(const torch::Tensor& x) = 0;
  // The outputs in order, with their channels and strides.
  virtual const std::vector<std::string>& out_features() const = 0;
  virtual std::map<std::string, ShapeSpec> output_shape() const = 0;
  // Inputs are padded to a multiple of this (0: no padding).
  virtual int64_t size_divisibility() const { return 0; }
};

// cfg.MODEL.RESNETS.* and cfg.MODEL.BACKBONE.FREEZE_AT (defaults as
// detectron2's config/defaults.py).
struct ResNetOptions {
  TORCH_ARG(int64_t, depth) = 50;  // 50 or 101 (bottleneck depths)
  TORCH_ARG(Norm, norm) = Norm::kFrozenBN;
  TORCH_ARG(int64_t, freeze_at) = 2;
  TORCH_ARG(bool, stride_in_1x1) = true;
  TORCH_ARG(int64_t, num_groups) = 1;
  TORCH_ARG(int64_t, width_per_group) = 64;
  TORCH_ARG(int64_t, stem_out_channels) = 64;
  TORCH_ARG(int64_t, res2_out_channels) = 256;
  TORCH_ARG(int64_t, res5_dilation) = 1;  // 2 for DC5
  TORCH_ARG(int64_t, in_channels) = 3;
  // Stages after the last one named here are not built, as in the
  // reference (C4: {"res4"}, the res5 stage lives in the ROI heads); empty
  // is the reference's None (all stages, "res5" out).
  TORCH_ARG(std::vector<std::string>,
            out_features) = std::vector<std::string>{"res4"};
};

// resnet.py ResNet as build_resnet_backbone builds it: children "stem",
// "res2".."res5".
class ResNetImpl : public BackboneImpl {
 public:
  explicit ResNetImpl(const ResNetOptions& options);
  FeatureMap forward(const torch::Tensor& x) override;
  const std::vector<std::string>& out_features() const override {
    return out_features_;
  }
  std::map<std::string, ShapeSpec> output_shape() const override;

 private:
  std::vector<std::string> out_features_;
  BasicStem stem_{nullptr};
  std::vector<std::string> stage_names_;
  std::vector<torch::nn::Sequential> stages_;
  std::map<std::string, ShapeSpec> shapes_;
};
TORCH_MODULE(ResNet);

enum class TopBlock { kNone, kLastLevelMaxPool, kLastLevelP6P7 };

struct FPNOptions {
  TORCH_ARG(std::vector<std::string>, in_features) = std::vector<std::string>{
      "res2", "res3", "res4", "res5"};
  TORCH_ARG(int64_t, out_channels) = 256;
  TORCH_ARG(Norm, norm) = Norm::kNone;
  TORCH_ARG(TopBlock, top_block) = TopBlock::kLastLevelMaxPool;
  // LastLevelP6P7's in_feature: "res5" (RetinaNet) or "p5" (FCOS).
  TORCH_ARG(std::string, top_block_in_feature) = "res5";
  TORCH_ARG(bool, fuse_avg) = false;  // fuse_type "avg" instead of "sum"
};

// fpn.py LastLevelP6P7: p6 = conv3x3/2(in), p7 = conv3x3/2(relu(p6)).
class LastLevelP6P7Impl : public torch::nn::Module {
 public:
  LastLevelP6P7Impl(int64_t in_channels, int64_t out_channels);
  std::vector<torch::Tensor> forward(const torch::Tensor& x);

 private:
  torch::nn::Conv2d p6_{nullptr}, p7_{nullptr};
};
TORCH_MODULE(LastLevelP6P7);

// fpn.py FPN: children fpn_lateral<s>, fpn_output<s> (s = log2 stride),
// top_block, bottom_up; outputs "p<s>".
class FPNImpl : public BackboneImpl {
 public:
  FPNImpl(std::shared_ptr<BackboneImpl> bottom_up, const FPNOptions& options);
  FeatureMap forward(const torch::Tensor& x) override;
  const std::vector<std::string>& out_features() const override {
    return out_features_;
  }
  std::map<std::string, ShapeSpec> output_shape() const override;
  int64_t size_divisibility() const override { return size_divisibility_; }

 private:
  FPNOptions options_;
  std::shared_ptr<BackboneImpl> bottom_up_;
  // Top-down order (lowest resolution first), as the reference keeps them.
  std::vector<Conv2d> lateral_convs_, output_convs_;
  LastLevelP6P7 p6p7_{nullptr};
  std::vector<std::string> out_features_;
  std::map<std::string, ShapeSpec> shapes_;
  int64_t size_divisibility_ = 0;
};
TORCH_MODULE(FPN);

// build_resnet_fpn_backbone (LastLevelMaxPool) and, with kLastLevelP6P7,
// build_retinanet_resnet_fpn_backbone; resnet.out_features are set to the
// FPN's in_features.
FPN BuildResNetFPNBackbone(ResNetOptions resnet, const FPNOptions& fpn);

}  // namespace torchbench::detectron2

#endif  // TORCHBENCH_MODELS_COMMON_DETECTRON2_BACKBONE_H_
