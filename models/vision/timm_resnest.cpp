// timm's ResNeSt (timm/models/resnest.py, resnest14d: timm's ResNet with a
// deep stem, average-pool shortcuts and split-attention bottlenecks) with
// TorchBench's TimmModel steps.
#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/families.h"
#include "common/image_classifier.h"
#include "common/timm_cnn_blocks.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace timm_resnest_model {
namespace {

// resnest14d's arguments to timm's ResNet and ResNestBottleneck.
struct ResNestConfig {
  std::vector<int64_t> layers = {1, 1, 1, 1};
  int64_t stem_width = 32;
  int64_t radix = 2;
  int64_t cardinality = 1;
  int64_t base_width = 64;
  int64_t num_classes = 1000;
};

// timm.layers.make_divisible with round_limit 0.9.
int64_t MakeDivisible(double v, int64_t divisor, int64_t min_value) {
  int64_t new_v = std::max<int64_t>(
      min_value, static_cast<int64_t>(v + divisor / 2.0) / divisor * divisor);
  if (new_v < 0.9 * v) new_v += divisor;
  return new_v;
}

torch::nn::Conv2d Conv(int64_t in, int64_t out, int64_t kernel,
                       int64_t stride = 1, int64_t groups = 1,
                       bool bias = false) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel)
                               .stride(stride)
                               .padding(kernel / 2)
                               .groups(groups)
                               .bias(bias));
}

// timm.layers.SplitAttn: a radix-way grouped 3x3 conv whose branches are
// mixed by a softmax over radix computed from their pooled sum.
class SplitAttnImpl : public torch::nn::Module {
 public:
  SplitAttnImpl(int64_t channels, int64_t stride, int64_t groups, int64_t radix)
      : radix_(radix),
        groups_(groups),
        conv(register_module("conv", Conv(channels, channels * radix, 3, stride,
                                          groups * radix))),
        bn0(register_module("bn0", torch::nn::BatchNorm2d(channels * radix))),
        fc1(register_module(
            "fc1", Conv(channels, AttnChannels(channels, radix), 1, 1, groups,
                        /*bias=*/true))),
        bn1(register_module(
            "bn1", torch::nn::BatchNorm2d(AttnChannels(channels, radix)))),
        fc2(register_module("fc2", Conv(AttnChannels(channels, radix),
                                        channels * radix, 1, 1, groups,
                                        /*bias=*/true))) {}

  torch::Tensor forward(const torch::Tensor& input) {
    torch::Tensor x = torch::relu(bn0(conv(input)));
    const int64_t b = x.size(0);
    const int64_t rc = x.size(1);
    torch::Tensor gap = x;
    if (radix_ > 1) {
      x = x.reshape({b, radix_, rc / radix_, x.size(2), x.size(3)});
      gap = x.sum(1);
    }
    gap = gap.mean({2, 3}, /*keepdim=*/true);
    torch::Tensor attn = fc2(torch::relu(bn1(fc1(gap))));
    // RadixSoftmax.
    if (radix_ > 1) {
      attn =
          torch::softmax(attn.view({b, groups_, radix_, -1}).transpose(1, 2), 1)
              .reshape({b, -1});
    } else {
      attn = torch::sigmoid(attn);
    }
    attn = attn.view({b, -1, 1, 1});
    torch::Tensor out =
        radix_ > 1 ? (x * attn.reshape({b, radix_, rc / radix_, 1, 1})).sum(1)
                   : x * attn;
    return out.contiguous();
  }

 private:
  static int64_t AttnChannels(int64_t channels, int64_t radix) {
    return MakeDivisible(channels * radix * 0.25, 8, 32);
  }

  int64_t radix_;
  int64_t groups_;

 public:
  torch::nn::Conv2d conv;
  torch::nn::BatchNorm2d bn0;
  torch::nn::Conv2d fc1;
  torch::nn::BatchNorm2d bn1;
  torch::nn::Conv2d fc2;
};
TORCH_MODULE(SplitAttn);

// timm's ResNestBottleneck with avd=True, avd_first=False: a strided block
// moves its stride from the 3x3 conv to a 3x3 average pool after it.
class ResNestBottleneckImpl : public torch::nn::Module {
 public:
  static constexpr int64_t kExpansion = 4;

  ResNestBottleneckImpl(int64_t inplanes, int64_t planes, int64_t stride,
                        torch::nn::Sequential downsample,
                        const ResNestConfig& cfg)
      : avd_stride_(stride > 1 ? stride : 0) {
    const int64_t width =
        planes * cfg.base_width / 64 * cfg.cardinality;  // group_width
    conv1_ = register_module("conv1", Conv(inplanes, width, 1));
    bn1_ = register_module("bn1", torch::nn::BatchNorm2d(width));
    conv2_ = register_module(
        "conv2", SplitAttn(width, /*stride=*/1, cfg.cardinality, cfg.radix));
    conv3_ = register_module("conv3", Conv(width, planes * kExpansion, 1));
    bn3_ = register_module("bn3", torch::nn::BatchNorm2d(planes * kExpansion));
    if (downsample) downsample_ = register_module("downsample", downsample);
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor out = torch::relu(bn1_(conv1_(x)));
    out = conv2_(out);
    if (avd_stride_ > 0) {
      out = torch::avg_pool2d(out, /*kernel_size=*/3, avd_stride_,
                              /*padding=*/1);
    }
    out = bn3_(conv3_(out));
    out += downsample_ ? downsample_->forward(x) : x;
    return torch::relu(out);
  }

  torch::nn::BatchNorm2d& last_norm() { return bn3_; }

 private:
  int64_t avd_stride_;
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr};
  SplitAttn conv2_{nullptr};
  torch::nn::Conv2d conv3_{nullptr};
  torch::nn::BatchNorm2d bn3_{nullptr};
  torch::nn::Sequential downsample_{nullptr};
};
TORCH_MODULE(ResNestBottleneck);

class ResNestImpl : public torch::nn::Module {
 public:
  explicit ResNestImpl(const ResNestConfig& cfg = {}) : cfg_(cfg) {
    const int64_t w = cfg.stem_width;
    conv1_ = register_module(
        "conv1",
        torch::nn::Sequential(Conv(3, w, 3, 2), torch::nn::BatchNorm2d(w),
                              torch::nn::ReLU(), Conv(w, w, 3),
                              torch::nn::BatchNorm2d(w), torch::nn::ReLU(),
                              Conv(w, 2 * w, 3)));
    bn1_ = register_module("bn1", torch::nn::BatchNorm2d(2 * w));
    inplanes_ = 2 * w;
    const int64_t channels[4] = {64, 128, 256, 512};
    for (int i = 0; i < 4; ++i) {
      layers_.push_back(register_module(
          absl::StrCat("layer", i + 1),
          MakeLayer(channels[i], cfg.layers[i], i == 0 ? 1 : 2)));
    }
    fc_ = register_module("fc", torch::nn::Linear(inplanes_, cfg.num_classes));
    InitWeights();
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor out = torch::relu(bn1_(conv1_->forward(x)));
    out = torch::max_pool2d(out, /*kernel_size=*/3, /*stride=*/2,
                            /*padding=*/1);
    for (auto& layer : layers_) out = layer->forward(out);
    return fc_(out.mean({2, 3}));
  }

 private:
  // timm's make_blocks with avg_down=True: the projection shortcut is
  // (pool, conv1x1, bn), the pool an Identity when the stride is 1.
  torch::nn::Sequential MakeLayer(int64_t planes, int64_t blocks,
                                  int64_t stride) {
    const int64_t out = planes * ResNestBottleneckImpl::kExpansion;
    torch::nn::Sequential layer;
    for (int64_t i = 0; i < blocks; ++i) {
      torch::nn::Sequential downsample{nullptr};
      if (i == 0 && (stride != 1 || inplanes_ != out)) {
        torch::nn::Sequential pool_conv_bn;
        if (stride == 1) {
          pool_conv_bn->push_back(torch::nn::Identity());
        } else {
          pool_conv_bn->push_back(
              torch::nn::AvgPool2d(torch::nn::AvgPool2dOptions(2)
                                       .stride(stride)
                                       .ceil_mode(true)
                                       .count_include_pad(false)));
        }
        pool_conv_bn->push_back(Conv(inplanes_, out, 1));
        pool_conv_bn->push_back(torch::nn::BatchNorm2d(out));
        downsample = pool_conv_bn;
      }
      layer->push_back(ResNestBottleneck(inplanes_, planes, i == 0 ? stride : 1,
                                         downsample, cfg_));
      inplanes_ = out;
    }
    return layer;
  }

  // timm's ResNet.init_weights(zero_init_last=True); BN and Linear keep the
  // PyTorch defaults, which LibTorch shares.
  void InitWeights() {
    common::KaimingNormalFanOutConvs(*this);
    torch::NoGradGuard no_grad;
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* block = m->as<ResNestBottleneck>()) {
        torch::nn::init::zeros_(block->last_norm()->weight);
      }
    }
  }

  ResNestConfig cfg_;
  int64_t inplanes_ = 64;
  torch::nn::Sequential conv1_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr};
  std::vector<torch::nn::Sequential> layers_;
  torch::nn::Linear fc_{nullptr};
};
TORCH_MODULE(ResNest);

}  // namespace

// default_cfg input_size and num_classes; the timm model defines no
// no_weight_decay(), so only biases and 1-D parameters skip weight decay.
TORCHBENCH_REGISTER_MODEL(
    TimmSpec(
        {.name = "timm_resnest",
         .train_batch_size = 32,  // DEFAULT_TRAIN_BSIZE
         .eval_batch_size = 32,   // DEFAULT_EVAL_BSIZE
         .min_train_batch_size = 2,
         .min_batch_size_reason =
             "split attention's BatchNorm over a pooled 1x1 map needs more "
             "than one value per channel in train mode; the reference fails "
             "at batch 1 too",
         // pinned timm (and 1.0.31) create_model("resnest14d"), counted in
         // Python (sum(p.numel() ...) over parameters() and buffers()). timm
         // 0.6.12, the newest timm when TorchBench 43ca0857 was cut (it pins
         // none), gives the same counts, state_dict names and shapes.
         .reference_parameters = 10611688,
         .reference_buffers = 22359,
         .checks = {.python_reference = "timm:resnest14d",
                    // default_cfg input_size, at batch 4: at batch 2 split
                    // attention's train-mode BatchNorm over pooled 1x1 maps
                    // sees two values per channel and amplifies
                    // summation-order noise, so the train output moved 4e-4
                    // between one and two intra-op threads; at batch 4 it
                    // moves 6e-6.
                    .reference_input_shape = {4, 3, 224, 224}}}),
    common::MakeTimmClassifier<ResNest>([] { return ResNest(); },
                                        {.input_size = {3, 224, 224},
                                         .num_classes = 1000,
                                         .no_weight_decay = {}}));

}  // namespace timm_resnest_model
}  // namespace torchbench
