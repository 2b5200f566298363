// torchvision's ResNet family (torchvision/models/resnet.py) as one
// definition driven by ResNetOptions, and TorchBench's TorchVisionModel
// train/eval steps (torchbenchmark/util/framework/vision/model_factory.py).
//
// Only resnet50 is registered here; resnet18, resnet152 and resnext50_32x4d
// are the same module with other ResNetOptions values.
#include <torch/nn/functional/loss.h>
#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>
#include <torch/nn/pimpl.h>
#include <torch/optim/adam.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <memory>
#include <utility>
#include <vector>

#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace {

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
};

torch::nn::Conv2d Conv(int64_t in, int64_t out, int64_t kernel,
                       int64_t stride = 1, int64_t groups = 1) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel)
                               .stride(stride)
                               .padding(kernel / 2)
                               .groups(groups)
                               .bias(false));
}

torch::nn::BatchNorm2d Norm(int64_t channels) {
  return torch::nn::BatchNorm2d(channels);
}

// The projection shortcut: conv1x1 + BN as a Sequential, so its parameters
// are downsample.0.* and downsample.1.* as in torchvision.
torch::nn::Sequential Downsample(int64_t in, int64_t out, int64_t stride) {
  return torch::nn::Sequential(Conv(in, out, 1, stride), Norm(out));
}

class BasicBlockImpl : public torch::nn::Module {
 public:
  static constexpr int64_t kExpansion = 1;

  BasicBlockImpl(int64_t inplanes, int64_t planes, int64_t stride,
                 torch::nn::Sequential downsample)
      : conv1_(register_module("conv1", Conv(inplanes, planes, 3, stride))),
        bn1_(register_module("bn1", Norm(planes))),
        conv2_(register_module("conv2", Conv(planes, planes, 3))),
        bn2_(register_module("bn2", Norm(planes))) {
    if (downsample) downsample_ = register_module("downsample", downsample);
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor out = torch::relu(bn1_(conv1_(x)));
    out = bn2_(conv2_(out));
    out += downsample_ ? downsample_->forward(x) : x;
    return torch::relu(out);
  }

  torch::nn::BatchNorm2d& last_norm() { return bn2_; }

 private:
  torch::nn::Conv2d conv1_;
  torch::nn::BatchNorm2d bn1_;
  torch::nn::Conv2d conv2_;
  torch::nn::BatchNorm2d bn2_;
  torch::nn::Sequential downsample_{nullptr};
};
TORCH_MODULE(BasicBlock);

class BottleneckImpl : public torch::nn::Module {
 public:
  static constexpr int64_t kExpansion = 4;

  BottleneckImpl(int64_t inplanes, int64_t planes, int64_t stride,
                 torch::nn::Sequential downsample, int64_t groups,
                 int64_t base_width)
      : conv1_(register_module(
            "conv1", Conv(inplanes, Width(planes, base_width, groups), 1))),
        bn1_(register_module("bn1", Norm(Width(planes, base_width, groups)))),
        conv2_(register_module("conv2", Conv(Width(planes, base_width, groups),
                                             Width(planes, base_width, groups),
                                             3, stride, groups))),
        bn2_(register_module("bn2", Norm(Width(planes, base_width, groups)))),
        conv3_(register_module("conv3", Conv(Width(planes, base_width, groups),
                                             planes * kExpansion, 1))),
        bn3_(register_module("bn3", Norm(planes * kExpansion))) {
    if (downsample) downsample_ = register_module("downsample", downsample);
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor out = torch::relu(bn1_(conv1_(x)));
    out = torch::relu(bn2_(conv2_(out)));
    out = bn3_(conv3_(out));
    out += downsample_ ? downsample_->forward(x) : x;
    return torch::relu(out);
  }

  torch::nn::BatchNorm2d& last_norm() { return bn3_; }

 private:
  // torchvision's int(planes * (base_width / 64.)) * groups.
  static int64_t Width(int64_t planes, int64_t base_width, int64_t groups) {
    return planes * base_width / 64 * groups;
  }

  torch::nn::Conv2d conv1_;
  torch::nn::BatchNorm2d bn1_;
  torch::nn::Conv2d conv2_;
  torch::nn::BatchNorm2d bn2_;
  torch::nn::Conv2d conv3_;
  torch::nn::BatchNorm2d bn3_;
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
    bn1_ = register_module("bn1", Norm(64));
    layer1_ = register_module("layer1", MakeLayer(64, options.layers()[0], 1));
    layer2_ = register_module("layer2", MakeLayer(128, options.layers()[1], 2));
    layer3_ = register_module("layer3", MakeLayer(256, options.layers()[2], 2));
    layer4_ = register_module("layer4", MakeLayer(512, options.layers()[3], 2));
    fc_ = register_module(
        "fc", torch::nn::Linear(512 * expansion, options.num_classes()));
    InitWeights();
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor out = torch::relu(bn1_(conv1_(x)));
    out = torch::max_pool2d(out, /*kernel_size=*/3, /*stride=*/2,
                            /*padding=*/1);
    out = layer4_->forward(
        layer3_->forward(layer2_->forward(layer1_->forward(out))));
    out = torch::adaptive_avg_pool2d(out, {1, 1}).flatten(1);
    return fc_(out);
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
        downsample = Downsample(inplanes_, out, stride);
      }
      if (basic) {
        layer->push_back(
            BasicBlock(inplanes_, planes, block_stride, downsample));
      } else {
        layer->push_back(Bottleneck(inplanes_, planes, block_stride, downsample,
                                    options_.groups(),
                                    options_.width_per_group()));
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
      torch::nn::BatchNorm2d* last = nullptr;
      if (auto* b = m->as<BasicBlock>()) last = &b->last_norm();
      if (auto* b = m->as<Bottleneck>()) last = &b->last_norm();
      if (last != nullptr) torch::nn::init::zeros_((*last)->weight);
    }
  }

  ResNetOptions options_;
  int64_t inplanes_ = 64;
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr};
  torch::nn::Sequential layer1_{nullptr}, layer2_{nullptr}, layer3_{nullptr},
      layer4_{nullptr};
  torch::nn::Linear fc_{nullptr};
};
TORCH_MODULE(ResNet);

// Converts every 4-D parameter and buffer to channels-last in place, as
// Python's module.to(memory_format=torch.channels_last) does.
void ToChannelsLast(torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  for (auto& p : module.parameters()) {
    if (p.dim() == 4) {
      p.set_data(p.contiguous(torch::MemoryFormat::ChannelsLast));
    }
  }
  for (auto& b : module.buffers()) {
    if (b.dim() == 4) {
      b.set_data(b.contiguous(torch::MemoryFormat::ChannelsLast));
    }
  }
}

// TorchBench's TorchVisionModel for a ResNet-family classifier.
class TorchVisionResNet final : public Model {
 public:
  TorchVisionResNet(const ModelConfig& config, const ResNetOptions& options)
      : mode_(config.mode), net_(options) {
    net_->to(config.device);
    const auto opts = torch::TensorOptions().device(config.device);
    // TorchBench loads IMAGENET1K_V1 weights; a benchmark does not need them,
    // so the weights stay torchvision's random init.
    example_input_ = torch::randn({config.batch_size, 3, 224, 224}, opts);
    if (mode_ == Mode::kTrain) {
      // The reference runs one forward of the still-train()-mode model at
      // construction (to shape its target), which moves every BN running
      // stat once; mirror it. Its output feeds only rand_like.
      torch::Tensor example_output;
      {
        torch::NoGradGuard no_grad;
        net_->train();
        example_output = net_->forward(example_input_);
      }
      // The reference's example_outputs (rand_like of that output) is only
      // used by its CUDA-graph path; drawing it keeps the RNG stream aligned.
      (void)torch::rand_like(example_output);
      // The eager train step uses real_input / real_output: uniform [0, 1)
      // images and unnormalised soft targets.
      real_input_ = torch::rand_like(example_input_);
      real_target_ = torch::rand_like(example_output);
      net_->train();
      optimizer_ = std::make_unique<torch::optim::Adam>(
          net_->parameters(), torch::optim::AdamOptions(1e-3));
    } else {
      net_->eval();
    }
    if (config.channels_last) {
      // TorchBench's enable_channels_last() (post-__init__) converts the
      // module and every 4-D input after construction.
      ToChannelsLast(*net_);
      example_input_ =
          example_input_.contiguous(torch::MemoryFormat::ChannelsLast);
      if (real_input_.defined()) {
        real_input_ = real_input_.contiguous(torch::MemoryFormat::ChannelsLast);
      }
    }
  }

  torch::Tensor Step() override {
    if (mode_ == Mode::kEval) return net_->forward(example_input_);
    optimizer_->zero_grad();
    torch::Tensor pred = net_->forward(real_input_);
    // CrossEntropyLoss with class-probability targets of pred's shape.
    torch::Tensor loss =
        torch::nn::functional::cross_entropy(pred, real_target_);
    loss.backward();
    optimizer_->step();
    return loss.detach();
  }

  torch::nn::Module& module() override { return *net_; }

  torch::Tensor Forward(const std::vector<torch::Tensor>& inputs) override {
    TORCH_CHECK(inputs.size() == 1, "ResNet takes one image batch");
    return net_->forward(inputs[0]);
  }

 private:
  Mode mode_;
  ResNet net_;
  torch::Tensor example_input_;
  torch::Tensor real_input_;
  torch::Tensor real_target_;
  std::unique_ptr<torch::optim::Adam> optimizer_;
};

ModelFactory MakeResNet(ResNetOptions options) {
  return [options](const ModelConfig& config) -> std::unique_ptr<Model> {
    return std::make_unique<TorchVisionResNet>(config, options);
  };
}

ModelSpec ResNet50Spec() {
  ModelSpec spec;
  spec.name = "resnet50";
  spec.domain = "vision";
  spec.task = "image classification";
  spec.reference = "torchvision resnet50";
  spec.train_batch_size = 32;  // DEFAULT_TRAIN_BSIZE
  spec.eval_batch_size = 32;   // DEFAULT_EVAL_BSIZE
  spec.test_batch_size = 2;
  spec.supports_channels_last = true;
  // torchvision 0.29.1 resnet50(weights=None), counted in Python
  // (sum(p.numel() for p in m.parameters())).
  spec.reference_parameters = 25557032;
  // Same model, sum over m.buffers(): 53 BatchNorm2d layers with 26560
  // channels in all give 2 * 26560 running stats + 53 num_batches_tracked.
  spec.reference_buffers = 53173;
  spec.python_reference = "torchvision:resnet50";
  spec.reference_input_shape = {2, 3, 224, 224};
  return spec;
}

}  // namespace

TORCHBENCH_REGISTER_MODEL(ResNet50Spec(),
                          MakeResNet(ResNetOptions()
                                         .block(ResNetBlock::kBottleneck)
                                         .layers({3, 4, 6, 3})));

}  // namespace torchbench
