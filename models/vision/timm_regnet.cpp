// timm's RegNet (timm/models/regnet.py, regnety_120: RegNetY with SE) with
// TorchBench's TimmModel steps.
#include <torch/nn/module.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/families.h"
#include "common/image_classifier.h"
#include "common/timm_cnn_blocks.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace timm_regnet_model {
namespace {

using common::ConvNormAct;
using common::ConvNormActOptions;

// Per-stage widths and depths as timm's generate_regnet() and
// adjust_widths_groups_comp() derive them from regnety_120's RegNetCfg
// (w0=168, wa=73.36, wm=2.37, depth=19, group_size=112, bottle_ratio=1):
// raw widths 168/400/944/2240 quantised to multiples of the group size.
struct RegNetConfig {
  std::vector<int64_t> widths = {224, 448, 896, 2240};
  std::vector<int64_t> depths = {2, 5, 11, 1};
  int64_t group_size = 112;
  double se_ratio = 0.25;
  int64_t stem_width = 32;
  int64_t num_classes = 1000;
};

// timm's regnet Bottleneck (bottle_ratio 1, conv1x1 shortcut): the SE sits
// after the grouped 3x3 conv and is sized from the block's input width.
class BottleneckImpl : public torch::nn::Module {
 public:
  BottleneckImpl(int64_t in_chs, int64_t out_chs, int64_t stride,
                 int64_t group_size, double se_ratio)
      : conv1(register_module(
            "conv1", ConvNormAct(ConvNormActOptions(in_chs, out_chs, 1)))),
        conv2(register_module(
            "conv2", ConvNormAct(ConvNormActOptions(out_chs, out_chs, 3)
                                     .stride(stride)
                                     .groups(out_chs / group_size)))),
        se(register_module(
            "se", common::SEModule(out_chs, static_cast<int64_t>(std::round(
                                                in_chs * se_ratio))))),
        conv3(register_module(
            "conv3",
            ConvNormAct(
                ConvNormActOptions(out_chs, out_chs, 1).apply_act(false)))) {
    if (in_chs != out_chs || stride != 1) {
      downsample = register_module(
          "downsample", ConvNormAct(ConvNormActOptions(in_chs, out_chs, 1)
                                        .stride(stride)
                                        .apply_act(false)));
    }
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor out = conv3(se(conv2(conv1(x))));
    out = out + (downsample ? downsample(x) : x);
    return torch::relu(out);
  }

  ConvNormAct conv1;
  ConvNormAct conv2;
  common::SEModule se;
  ConvNormAct conv3;
  ConvNormAct downsample{nullptr};
};
TORCH_MODULE(Bottleneck);

// timm's RegStage: blocks named b1, b2, ...
class RegStageImpl : public torch::nn::Module {
 public:
  RegStageImpl(int64_t depth, int64_t in_chs, int64_t out_chs, int64_t stride,
               const RegNetConfig& cfg) {
    for (int64_t i = 0; i < depth; ++i) {
      blocks_.push_back(register_module(
          absl::StrCat("b", i + 1),
          Bottleneck(i == 0 ? in_chs : out_chs, out_chs, i == 0 ? stride : 1,
                     cfg.group_size, cfg.se_ratio)));
    }
  }

  torch::Tensor forward(torch::Tensor x) {
    for (auto& block : blocks_) x = block(x);
    return x;
  }

 private:
  std::vector<Bottleneck> blocks_;
};
TORCH_MODULE(RegStage);

class RegNetImpl : public torch::nn::Module {
 public:
  explicit RegNetImpl(const RegNetConfig& cfg = {}) {
    stem_ = register_module(
        "stem",
        ConvNormAct(ConvNormActOptions(3, cfg.stem_width, 3).stride(2)));
    int64_t in_chs = cfg.stem_width;
    for (size_t i = 0; i < cfg.widths.size(); ++i) {
      stages_.push_back(register_module(
          absl::StrCat("s", i + 1),
          RegStage(cfg.depths[i], in_chs, cfg.widths[i], /*stride=*/2, cfg)));
      in_chs = cfg.widths[i];
    }
    // final_conv is an Identity (no num_features, no linear_out/preact).
    head_ = register_module("head",
                            common::ClassifierHead(in_chs, cfg.num_classes));
    InitWeights();
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor out = stem_(x);
    for (auto& stage : stages_) out = stage(out);
    return head_(out);
  }

 private:
  // timm regnet's _init_weights(zero_init_last=True): convs N(0,
  // sqrt(2 / (k*k*out/groups))) with zero bias, Linear N(0, 0.01) with zero
  // bias, and each block's conv3.bn.weight zeroed.
  void InitWeights() {
    torch::NoGradGuard no_grad;
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* conv = m->as<torch::nn::Conv2d>()) {
        const torch::Tensor& w = conv->weight;
        const int64_t fan_out =
            w.size(0) * w.size(2) * w.size(3) / conv->options.groups();
        conv->weight.normal_(0, std::sqrt(2.0 / fan_out));
        if (conv->bias.defined()) conv->bias.zero_();
      } else if (auto* linear = m->as<torch::nn::Linear>()) {
        linear->weight.normal_(0, 0.01);
        linear->bias.zero_();
      } else if (auto* block = m->as<Bottleneck>()) {
        block->conv3->bn->weight.zero_();
      }
    }
  }

  ConvNormAct stem_{nullptr};
  std::vector<RegStage> stages_;
  common::ClassifierHead head_{nullptr};
};
TORCH_MODULE(RegNet);

}  // namespace

// default_cfg input_size and num_classes; the timm model defines no
// no_weight_decay(), so only biases and 1-D parameters skip weight decay.
TORCHBENCH_REGISTER_MODEL(
    TimmSpec({.name = "timm_regnet",
              .train_batch_size = 32,  // DEFAULT_TRAIN_BSIZE
              .eval_batch_size = 32,   // DEFAULT_EVAL_BSIZE
              // pinned timm (and 1.0.31) create_model("regnety_120"), counted
              // in Python (sum(p.numel() ...) over parameters() and
              // buffers()). timm 0.6.12, the newest timm when TorchBench
              // 43ca0857 was cut (it pins none), gives the same counts,
              // state_dict names and shapes.
              .reference_parameters = 51822544,
              .reference_buffers = 96446,
              .checks = {.python_reference = "timm:regnety_120",
                         // default_cfg input_size
                         .reference_input_shape = {2, 3, 224, 224}}}),
    common::MakeTimmClassifier<RegNet>([] { return RegNet(); },
                                       {.input_size = {3, 224, 224},
                                        .num_classes = 1000,
                                        .no_weight_decay = {}}));

}  // namespace timm_regnet_model
}  // namespace torchbench
