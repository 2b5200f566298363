// timm's VoVNet (timm/models/vovnet.py, vovnet39a) with TorchBench's
// TimmModel steps. TorchBench files the model under detection, but it runs
// the timm ImageNet classifier.
#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <string>
#include <utility>
#include <vector>

#include "common/families.h"
#include "common/image_classifier.h"
#include "common/timm_cnn_blocks.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace timm_vovnet_model {
namespace {

using common::ConvNormAct;
using common::ConvNormActOptions;

// The fields of timm's vovnet model_cfgs entry that vovnet39a uses
// (depthwise, attention and residual are all off for it).
struct VovNetConfig {
  std::vector<int64_t> stem_chs = {64, 64, 128};
  std::vector<int64_t> stage_conv_chs = {128, 160, 192, 224};
  std::vector<int64_t> stage_out_chs = {256, 512, 768, 1024};
  int64_t layer_per_block = 5;
  std::vector<int64_t> block_per_stage = {1, 1, 2, 2};
  int64_t num_classes = 1000;
};

// One-shot aggregation: every 3x3 conv output (and the input) is
// concatenated once at the end and reduced by a 1x1 conv.
class OsaBlockImpl : public torch::nn::Module {
 public:
  OsaBlockImpl(int64_t in_chs, int64_t mid_chs, int64_t out_chs,
               int64_t layer_per_block) {
    int64_t next_in = in_chs;
    for (int64_t i = 0; i < layer_per_block; ++i) {
      conv_mid_->push_back(
          ConvNormAct(ConvNormActOptions(next_in, mid_chs, 3)));
      next_in = mid_chs;
    }
    register_module("conv_mid", conv_mid_);
    conv_concat_ = register_module(
        "conv_concat", ConvNormAct(ConvNormActOptions(
                           in_chs + layer_per_block * mid_chs, out_chs, 1)));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    std::vector<torch::Tensor> concat = {x};
    for (auto& conv : *conv_mid_) {
      concat.push_back(conv.forward(concat.back()));
    }
    return conv_concat_(torch::cat(concat, 1));
  }

 private:
  torch::nn::Sequential conv_mid_;
  ConvNormAct conv_concat_{nullptr};
};
TORCH_MODULE(OsaBlock);

class OsaStageImpl : public torch::nn::Module {
 public:
  OsaStageImpl(int64_t in_chs, int64_t mid_chs, int64_t out_chs, int64_t blocks,
               int64_t layer_per_block, bool downsample)
      : downsample_(downsample) {
    for (int64_t i = 0; i < blocks; ++i) {
      blocks_->push_back(OsaBlock(i == 0 ? in_chs : out_chs, mid_chs, out_chs,
                                  layer_per_block));
    }
    register_module("blocks", blocks_);
  }

  torch::Tensor forward(torch::Tensor x) {
    if (downsample_) {
      x = torch::max_pool2d(x, /*kernel_size=*/3, /*stride=*/2, /*padding=*/0,
                            /*dilation=*/1, /*ceil_mode=*/true);
    }
    return blocks_->forward(x);
  }

 private:
  bool downsample_;
  torch::nn::Sequential blocks_;
};
TORCH_MODULE(OsaStage);

class VovNetImpl : public torch::nn::Module {
 public:
  explicit VovNetImpl(const VovNetConfig& cfg = {}) {
    const auto& s = cfg.stem_chs;
    stem_ = register_module(
        "stem", torch::nn::Sequential(
                    ConvNormAct(ConvNormActOptions(3, s[0], 3).stride(2)),
                    ConvNormAct(ConvNormActOptions(s[0], s[1], 3)),
                    ConvNormAct(ConvNormActOptions(s[1], s[2], 3).stride(2))));
    int64_t in_chs = s[2];
    for (size_t i = 0; i < 4; ++i) {
      // The stem already has stride 4, so the first stage does not pool.
      stages_->push_back(OsaStage(in_chs, cfg.stage_conv_chs[i],
                                  cfg.stage_out_chs[i], cfg.block_per_stage[i],
                                  cfg.layer_per_block, /*downsample=*/i > 0));
      in_chs = cfg.stage_out_chs[i];
    }
    register_module("stages", stages_);
    head_ = register_module("head",
                            common::ClassifierHead(in_chs, cfg.num_classes));
    common::KaimingNormalFanOutConvs(*this);
    torch::NoGradGuard no_grad;
    torch::nn::init::zeros_(head_->fc->bias);
  }

  torch::Tensor forward(const torch::Tensor& x) {
    return head_(stages_->forward(stem_->forward(x)));
  }

 private:
  torch::nn::Sequential stem_{nullptr};
  torch::nn::Sequential stages_;
  common::ClassifierHead head_{nullptr};
};
TORCH_MODULE(VovNet);

}  // namespace

// default_cfg input_size and num_classes; the timm model defines no
// no_weight_decay(), so only biases and 1-D parameters skip weight decay.
TORCHBENCH_REGISTER_MODEL(
    TimmSpec({.name = "timm_vovnet",
              .train_batch_size = 32,  // DEFAULT_TRAIN_BSIZE
              .eval_batch_size = 32,   // DEFAULT_EVAL_BSIZE
              // pinned timm (and 1.0.31) create_model("vovnet39a"), counted in
              // Python (sum(p.numel() ...) over parameters() and buffers()).
              // timm 0.6.12, the newest timm when TorchBench 43ca0857 was cut
              // (it pins none), gives the same counts, state_dict names and
              // shapes.
              .reference_parameters = 22600296,
              .reference_buffers = 20455,
              .checks = {.python_reference = "timm:vovnet39a",
                         // default_cfg input_size
                         .reference_input_shape = {2, 3, 224, 224}}}),
    common::MakeTimmClassifier<VovNet>([] { return VovNet(); },
                                       {.input_size = {3, 224, 224},
                                        .num_classes = 1000,
                                        .no_weight_decay = {}}));

}  // namespace timm_vovnet_model
}  // namespace torchbench
