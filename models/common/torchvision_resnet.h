// File: models/common/torchvision_resnet.h
//
// torchvision's ResNet family (torchvision/models/resnet.py) as one
// definition driven by ResNetOptions, with torchvision's state_dict names and
// weight initialisation: the classifiers in models/vision/resnet.cpp, moco's
// query and key encoders (models/other/moco.cpp) and, features_only, the
// backbone of doctr's DBNet (models/vision/doctr_det_predictor.cpp). Its
// ReLUs work in place, as torchvision's ReLU(inplace=True) (out of place,
// they took 250 ms of a 3.4 s doctr_det_predictor step on one CPU core, in
// place 86 ms). With frozen_batch_norm it is the backbone torchvision's
// detection models build (norm_layer=FrozenBatchNorm2d): vision_maskrcnn.
#ifndef TORCHBENCH_MODELS_COMMON_TORCHVISION_RESNET_H_
#define TORCHBENCH_MODELS_COMMON_TORCHVISION_RESNET_H_

#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace torchbench::torchvision_resnet {

enum class ResNetBlock { kBasic, kBottleneck };

// The arguments of torchvision's ResNet(block, layers, ...) constructor that
// the TorchBench models use (replace_stride_with_dilation and norm_layer are
// never changed by them).
struct ResNetOptions {
  TORCH_ARG(ResNetBlock, block) = ResNetBlock::kBottleneck;
  TORCH_ARG(std::vector<int64_t>, layers) = std::vector<int64_t>{3, 4, 6, 3};
  TORCH_ARG(int64_t, groups) = 1;
  TORCH_ARG(int64_t, width_per_group) = 64;
  TORCH_ARG(int64_t, num_classes) = 1000;
  TORCH_ARG(bool, zero_init_residual) = false;
  // torchvision's IntermediateLayerGetter(resnet, {"layer1": ..., "layer4":
  // ...}) as detection backbones use it: the stem and the four stages only
  // (no avgpool, no fc), read with Features().
  TORCH_ARG(bool, features_only) = false;
  // norm_layer=torchvision.ops.FrozenBatchNorm2d (detection backbones built
  // for pretrained weights): weight, bias, running_mean and running_var are
  // all buffers. Its eps is 1e-5 unless the weights' loader overwrote it
  // (overwrite_eps(model, 0.0) for maskrcnn_resnet50_fpn's COCO_V1).
  TORCH_ARG(bool, frozen_batch_norm) = false;
  TORCH_ARG(double, frozen_batch_norm_eps) = 1e-5;
};

// torchvision.ops.FrozenBatchNorm2d: BatchNorm2d with fixed statistics and
// affine parameters, all four registered as buffers.
class FrozenBatchNorm2dImpl : public torch::nn::Module {
 public:
  FrozenBatchNorm2dImpl(int64_t channels, double eps)
      : weight(register_buffer("weight", torch::ones({channels}))),
        bias(register_buffer("bias", torch::zeros({channels}))),
        running_mean(register_buffer("running_mean", torch::zeros({channels}))),
        running_var(register_buffer("running_var", torch::ones({channels}))),
        eps_(eps) {}

  torch::Tensor forward(const torch::Tensor& x) {
    if (calibrate) {
      // Statistics of this input, per channel (biased variance), as a
      // BatchNorm2d in training mode would use: a stand-in for pretrained
      // statistics when the pretrained weights are unavailable.
      torch::NoGradGuard no_grad;
      running_mean.copy_(x.mean({0, 2, 3}));
      running_var.copy_(x.var({0, 2, 3}, /*unbiased=*/false));
    }
    // torchvision's order of operations (scale, then shift).
    const torch::Tensor scale =
        weight.reshape({1, -1, 1, 1}) *
        (running_var.reshape({1, -1, 1, 1}) + eps_).rsqrt();
    const torch::Tensor shift = bias.reshape({1, -1, 1, 1}) -
                                running_mean.reshape({1, -1, 1, 1}) * scale;
    return x * scale + shift;
  }

  torch::Tensor weight, bias, running_mean, running_var;
  // When set, forward() first overwrites running_mean/running_var with its
  // input's statistics (see above); never set by torchvision itself.
  bool calibrate = false;

 private:
  double eps_;
};
TORCH_MODULE(FrozenBatchNorm2d);

// A block's normalisation: BatchNorm2d, or FrozenBatchNorm2d when the
// options ask for it (one holder so the blocks keep one definition).
class NormLayer {
 public:
  NormLayer() = default;
  NormLayer(int64_t channels, const ResNetOptions& options) {
    if (options.frozen_batch_norm()) {
      frozen_ = FrozenBatchNorm2d(channels, options.frozen_batch_norm_eps());
      module_ = frozen_.ptr();
    } else {
      batch_norm_ = torch::nn::BatchNorm2d(channels);
      module_ = batch_norm_.ptr();
    }
  }

  torch::Tensor operator()(const torch::Tensor& x) {
    return frozen_ ? frozen_->forward(x) : batch_norm_->forward(x);
  }
  const std::shared_ptr<torch::nn::Module>& ptr() const { return module_; }
  // Null for a frozen norm.
  torch::nn::BatchNorm2d& batch_norm() { return batch_norm_; }

 private:
  torch::nn::BatchNorm2d batch_norm_{nullptr};
  FrozenBatchNorm2d frozen_{nullptr};
  std::shared_ptr<torch::nn::Module> module_;
};

inline torch::nn::Conv2d Conv(int64_t in, int64_t out, int64_t kernel,
                              int64_t stride = 1, int64_t groups = 1) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel)
                               .stride(stride)
                               .padding(kernel / 2)
                               .groups(groups)
                               .bias(false));
}

// The projection shortcut: conv1x1 + BN as a Sequential, so its parameters
// are downsample.0.* and downsample.1.* as in torchvision.
inline torch::nn::Sequential Downsample(int64_t in, int64_t out, int64_t stride,
                                        const ResNetOptions& options) {
  torch::nn::Sequential downsample(Conv(in, out, 1, stride));
  if (options.frozen_batch_norm()) {
    downsample->push_back(
        FrozenBatchNorm2d(out, options.frozen_batch_norm_eps()));
  } else {
    downsample->push_back(torch::nn::BatchNorm2d(out));
  }
  return downsample;
}

class BasicBlockImpl : public torch::nn::Module {
 public:
  static constexpr int64_t kExpansion = 1;

  BasicBlockImpl(int64_t inplanes, int64_t planes, int64_t stride,
                 torch::nn::Sequential downsample, const ResNetOptions& options)
      : conv1_(Conv(inplanes, planes, 3, stride)),
        bn1_(planes, options),
        conv2_(Conv(planes, planes, 3)),
        bn2_(planes, options) {
    // torchvision's registration order, which named_parameters() follows.
    register_module("conv1", conv1_);
    register_module("bn1", bn1_.ptr());
    register_module("conv2", conv2_);
    register_module("bn2", bn2_.ptr());
    if (downsample) downsample_ = register_module("downsample", downsample);
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor out = bn1_(conv1_(x)).relu_();
    out = bn2_(conv2_(out));
    out += downsample_ ? downsample_->forward(x) : x;
    return out.relu_();
  }

  NormLayer& last_norm() { return bn2_; }

 private:
  torch::nn::Conv2d conv1_;
  NormLayer bn1_;
  torch::nn::Conv2d conv2_;
  NormLayer bn2_;
  torch::nn::Sequential downsample_{nullptr};
};
TORCH_MODULE(BasicBlock);

class BottleneckImpl : public torch::nn::Module {
 public:
  static constexpr int64_t kExpansion = 4;

  BottleneckImpl(int64_t inplanes, int64_t planes, int64_t stride,
                 torch::nn::Sequential downsample, int64_t groups,
                 int64_t base_width, const ResNetOptions& options)
      : conv1_(Conv(inplanes, Width(planes, base_width, groups), 1)),
        bn1_(Width(planes, base_width, groups), options),
        conv2_(Conv(Width(planes, base_width, groups),
                    Width(planes, base_width, groups), 3, stride, groups)),
        bn2_(Width(planes, base_width, groups), options),
        conv3_(Conv(Width(planes, base_width, groups), planes * kExpansion, 1)),
        bn3_(planes * kExpansion, options) {
    // torchvision's registration order, which named_parameters() follows.
    register_module("conv1", conv1_);
    register_module("bn1", bn1_.ptr());
    register_module("conv2", conv2_);
    register_module("bn2", bn2_.ptr());
    register_module("conv3", conv3_);
    register_module("bn3", bn3_.ptr());
    if (downsample) downsample_ = register_module("downsample", downsample);
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor out = bn1_(conv1_(x)).relu_();
    out = bn2_(conv2_(out)).relu_();
    out = bn3_(conv3_(out));
    out += downsample_ ? downsample_->forward(x) : x;
    return out.relu_();
  }

  NormLayer& last_norm() { return bn3_; }

 private:
  // torchvision's int(planes * (base_width / 64.)) * groups.
  static int64_t Width(int64_t planes, int64_t base_width, int64_t groups) {
    return planes * base_width / 64 * groups;
  }

  torch::nn::Conv2d conv1_;
  NormLayer bn1_;
  torch::nn::Conv2d conv2_;
  NormLayer bn2_;
  torch::nn::Conv2d conv3_;
  NormLayer bn3_;
  torch::nn::Sequential downsample_{nullptr};
};
TORCH_MODULE(Bottleneck);

class ResNetImpl : public torch::nn::Module {
 public:
  explicit ResNetImpl(const ResNetOptions& options) : options_(options) {
    TORCH_CHECK(options.layers().size() == 4, "ResNet needs 4 stage depths");
    TORCH_CHECK(options.block() == ResNetBlock::kBottleneck ||
                    (options.groups() == 1 && options.width_per_group() == 64),
                "BasicBlock only supports groups=1 and base_width=64");
    const int64_t expansion = options.block() == ResNetBlock::kBasic
                                  ? BasicBlockImpl::kExpansion
                                  : BottleneckImpl::kExpansion;
    conv1_ = register_module(
        "conv1",
        torch::nn::Conv2d(
            torch::nn::Conv2dOptions(3, 64, 7).stride(2).padding(3).bias(
                false)));
    bn1_ = NormLayer(64, options);
    register_module("bn1", bn1_.ptr());
    layer1_ = register_module("layer1", MakeLayer(64, options.layers()[0], 1));
    layer2_ = register_module("layer2", MakeLayer(128, options.layers()[1], 2));
    layer3_ = register_module("layer3", MakeLayer(256, options.layers()[2], 2));
    layer4_ = register_module("layer4", MakeLayer(512, options.layers()[3], 2));
    if (!options.features_only()) {
      fc_ = register_module(
          "fc", torch::nn::Linear(512 * expansion, options.num_classes()));
    }
    InitWeights();
  }

  torch::Tensor forward(const torch::Tensor& x) {
    TORCH_CHECK(fc_, "a features_only ResNet has no classifier");
    torch::Tensor out = Features(x).back();
    out = torch::adaptive_avg_pool2d(out, {1, 1}).flatten(1);
    return fc_(out);
  }

  // The outputs of layer1..layer4.
  std::vector<torch::Tensor> Features(const torch::Tensor& x) {
    torch::Tensor out = bn1_(conv1_(x)).relu_();
    out = torch::max_pool2d(out, /*kernel_size=*/3, /*stride=*/2,
                            /*padding=*/1);
    std::vector<torch::Tensor> features;
    for (auto* layer : {&layer1_, &layer2_, &layer3_, &layer4_}) {
      out = (*layer)->forward(out);
      features.push_back(out);
    }
    return features;
  }

 private:
  torch::nn::Sequential MakeLayer(int64_t planes, int64_t blocks,
                                  int64_t stride) {
    const bool basic = options_.block() == ResNetBlock::kBasic;
    const int64_t out = planes * (basic ? BasicBlockImpl::kExpansion
                                        : BottleneckImpl::kExpansion);
    torch::nn::Sequential layer;
    for (int64_t i = 0; i < blocks; ++i) {
      const int64_t block_stride = i == 0 ? stride : 1;
      torch::nn::Sequential downsample{nullptr};
      if (i == 0 && (stride != 1 || inplanes_ != out)) {
        downsample = Downsample(inplanes_, out, stride, options_);
      }
      if (basic) {
        layer->push_back(
            BasicBlock(inplanes_, planes, block_stride, downsample, options_));
      } else {
        layer->push_back(Bottleneck(inplanes_, planes, block_stride, downsample,
                                    options_.groups(),
                                    options_.width_per_group(), options_));
      }
      inplanes_ = out;
    }
    return layer;
  }

  // torchvision's init; Linear keeps LibTorch's default, which is PyTorch's
  // (kaiming_uniform a=sqrt(5), bias U(+-1/sqrt(fan_in))).
  void InitWeights() {
    torch::NoGradGuard no_grad;
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* conv = m->as<torch::nn::Conv2d>()) {
        torch::nn::init::kaiming_normal_(conv->weight, /*a=*/0.0,
                                         torch::kFanOut, torch::kReLU);
      } else if (auto* bn = m->as<torch::nn::BatchNorm2d>()) {
        torch::nn::init::ones_(bn->weight);
        torch::nn::init::zeros_(bn->bias);
      }
    }
    if (!options_.zero_init_residual()) return;
    for (auto& m : modules(/*include_self=*/false)) {
      NormLayer* last = nullptr;
      if (auto* b = m->as<BasicBlock>()) last = &b->last_norm();
      if (auto* b = m->as<Bottleneck>()) last = &b->last_norm();
      if (last == nullptr) continue;
      if (last->batch_norm()) {
        torch::nn::init::zeros_(last->batch_norm()->weight);
      } else {
        last->ptr()->named_buffers(/*recurse=*/false)["weight"].zero_();
      }
    }
  }

  ResNetOptions options_;
  int64_t inplanes_ = 64;
  torch::nn::Conv2d conv1_{nullptr};
  NormLayer bn1_;
  torch::nn::Sequential layer1_{nullptr}, layer2_{nullptr}, layer3_{nullptr},
      layer4_{nullptr};
  torch::nn::Linear fc_{nullptr};
};
TORCH_MODULE(ResNet);

}  // namespace torchbench::torchvision_resnet

#endif  // TORCHBENCH_MODELS_COMMON_TORCHVISION_RESNET_H_
