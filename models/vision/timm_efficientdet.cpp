// TorchBench's timm_efficientdet: effdet (rwightman/efficientdet-pytorch at
// 79d26d8, TorchBench's pin, with its effdet.patch) tf_efficientdet_d1 at
// 640x640: a tf_efficientnet_b1 backbone (timm 1.0.29; TF "SAME" padding,
// BatchNorm eps 1e-3, drop path 0.2), three stage outputs (strides 8, 16,
// 32), a BiFPN of 4 cells with 88 channels and fast normalised fusion over
// levels P3-P7, and the class (90 classes) and box heads (3 separable convs
// with per-level BatchNorm, 9 anchors per location). Module names are
// effdet's bench state_dict names ("model.backbone.conv_stem.weight", ...,
// and the buffer "anchors.boxes").
//
// One Train call is train_epoch() for TorchBench's single prefetched batch:
// DetBenchTrain forward in train mode on the loader's precomputed anchor
// targets (bench_labeler is off, so the AnchorLabeler runs in the data
// loader's collate: here in the constructor), loss = focal class loss + 50 *
// Huber box loss, loss.item(), zero_grad, backward, clip_grad_norm_(10),
// SGD step, then lr_scheduler.step_update(num_updates=1). The optimizer is
// timm's create_optimizer(opt='momentum', lr 0.01, momentum 0.9, weight
// decay 4e-5 on parameters with more than one dimension). The cosine
// scheduler (create_scheduler: warmup 5 epochs from warmup_lr 1e-4, counted
// in epochs) sets every group's lr to 1e-4 when it is built and its
// step_update does nothing (t_in_epochs), so every call steps at lr 1e-4.
//
// One Eval call is eval(): DetBenchPredict forward, the top 5000 class
// logits, box decoding, clipping to the original image, batched NMS (IoU
// 0.5, torchvision's kernel through vision_ops) and 100 detections per
// image, returned as (B, 100, 6). TorchBench never switches the model to
// eval mode (BenchmarkModel at 43ca0857 does not, nor does eval()), so Eval
// normalises with batch statistics, moves the BatchNorm running statistics
// and drops paths at random, as the reference does.
//
// Inputs: TorchBench reads the first batch of COCO val2017's first 100
// images (coco2017-minimal, not bundled). The stand-in here: images of
// 480x640 (COCO's modal size; resized by 1.0 and padded to 640x640 with the
// mean colour, which normalises to 0), pixels uniform in [0, 255) normalised
// with ImageNet mean and std; objects per image cycling through
// kObjectsPerImage (mean 7.25; COCO val2017 has 7.3), boxes with centres in
// the middle 80% of the image and sides 4%-54% of it (quadratically skewed
// to small, as COCO's), classes 1-80, all from DeterministicTensor /
// DeterministicIntegers. Eval targets: img_scale 1, img_size (640, 480). As
// in TorchBench's prefetch(), every target tensor is float32.
//
// small_inputs (CPU tests): 256x256 images (192x256 content), the same code
// path (every BiFPN resampling exists at both sizes).
//
// Differences from the reference: the BiFPN's nearest-neighbour upsampling
// takes its output size from the feature pyramid of the actual input
// (effdet fixes it from config.image_size; equal for the configured size);
// Eval leaves the detections on the device (effdet's evaluator copies them
// to the host with .cpu()) and, under fp16/bf16, returns them in that dtype
// (the reference's are float32).
#include <torch/nn/functional/pooling.h>
#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/moduledict.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/optimizers.h"
#include "common/timm_efficientnet_blocks.h"
#include "torchbench/amp.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/model.h"
#include "torchbench/optim.h"
#include "torchbench/registry.h"
#include "torchbench/vision_ops.h"
#include "vision/effdet_anchors.h"

namespace torchbench {
namespace timm_efficientdet_model {
namespace {

using FeatSizes = std::vector<std::pair<int64_t, int64_t>>;

constexpr int64_t kNumClasses = 90;
constexpr int64_t kFpnChannels = 88;
constexpr int64_t kImageSize = 640;
constexpr int64_t kSmallImageSize = 256;
constexpr int64_t kGoldenImageSize = 128;
constexpr int64_t kGoldenBatch = 2;
constexpr double kDropPathRate = 0.2;
// The lr the cosine scheduler's warm-up gives every call (see above).
constexpr double kLr = 1e-4;
constexpr int64_t kObjectsPerImage[] = {4, 7, 12, 2, 9, 6, 3, 15};

// effdet's norm_kwargs: BatchNorm2d(eps 1e-3, momentum 0.01).
torch::nn::BatchNorm2d EffdetBatchNorm(int64_t channels) {
  return torch::nn::BatchNorm2d(
      torch::nn::BatchNormOptions(channels).eps(1e-3).momentum(0.01));
}

// efficientdet.SeparableConv2d (3x3 depthwise, 1x1 pointwise, optional
// BatchNorm, no activation in the uses here).
class SeparableConv2dImpl : public torch::nn::Module {
 public:
  SeparableConv2dImpl(int64_t in, int64_t out, bool bias, bool norm)
      : conv_dw(register_module("conv_dw", common::effnet::TimmConv2d(
                                               in, in, 3, 1, in, false, true))),
        conv_pw(register_module("conv_pw", common::effnet::TimmConv2d(
                                               in, out, 1, 1, 1, bias, true))) {
    if (norm) bn = register_module("bn", EffdetBatchNorm(out));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = conv_pw(conv_dw(x));
    return bn.is_empty() ? y : bn(y);
  }

  common::effnet::TimmConv2d conv_dw;
  common::effnet::TimmConv2d conv_pw;
  torch::nn::BatchNorm2d bn{nullptr};
};
TORCH_MODULE(SeparableConv2d);

// efficientdet.ConvBnAct2d as ResampleFeatureMap builds it: 1x1 conv with
// bias (redundant_bias) and BatchNorm, no activation.
class ConvBnImpl : public torch::nn::Module {
 public:
  ConvBnImpl(int64_t in, int64_t out)
      : conv(register_module(
            "conv", common::effnet::TimmConv2d(in, out, 1, 1, 1, true, true))),
        bn(register_module("bn", EffdetBatchNorm(out))) {}

  torch::Tensor forward(const torch::Tensor& x) { return bn(conv(x)); }

  common::effnet::TimmConv2d conv;
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

  torch::Tensor forward(torch::Tensor x, const FeatSizes& sizes) {
    if (!conv_.is_empty()) x = conv_(x);
    if (in_level_ < out_level_) {
      x = torch::max_pool2d(
          common::effnet::PadSame(x, 3, 2,
                                  -std::numeric_limits<double>::infinity()),
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
                        const FeatSizes& sizes) {
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
    FeatSizes sizes = {{x[0].size(2), x[0].size(3)}};
    for (int i = 1; i < effdet::kNumLevels; ++i) {
      sizes.emplace_back((sizes.back().first - 1) / 2 + 1,
                         (sizes.back().second - 1) / 2 + 1);
    }
    x.push_back(p6_->forward(x.back(), sizes));
    x.push_back(p7_->forward(x.back(), sizes));
    for (auto& nodes : cells_) {
      for (auto& node : nodes) x.push_back(node->forward(x, sizes));
      x = std::vector<torch::Tensor>(x.end() - effdet::kNumLevels, x.end());
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
      for (int l = 0; l < effdet::kNumLevels; ++l) {
        auto holder = repeat->register_module(
            std::to_string(l), std::make_shared<torch::nn::Module>());
        per_level.push_back(
            holder->register_module("bn", EffdetBatchNorm(kFpnChannels)));
      }
      bn_rep_.push_back(per_level);
    }
    predict_ = register_module(
        "predict",
        SeparableConv2d(kFpnChannels, num_outputs * effdet::kAnchorsPerLocation,
                        true, false));
  }

  std::vector<torch::Tensor> forward(const std::vector<torch::Tensor>& x) {
    std::vector<torch::Tensor> outputs;
    for (int l = 0; l < effdet::kNumLevels; ++l) {
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
class BackboneImpl : public common::effnet::EfficientNetTrunkImpl {
 public:
  BackboneImpl()
      : common::effnet::EfficientNetTrunkImpl(
            common::effnet::EfficientNetOptions()
                .bn_eps(1e-3)
                .same_padding(true)
                .depth_multiplier(1.1)
                .drop_path_rate(kDropPathRate)) {
    common::effnet::InitEfficientNetWeights(*this);
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
void GlorotUniform(torch::Tensor& w, int64_t groups) {
  const int64_t rf = w[0][0].numel();
  const double fan_in = static_cast<double>(w.size(1) * rf);
  const double fan_out = static_cast<double>(w.size(0) * rf / groups);
  const double gain = 1.0 / std::max(1.0, (fan_in + fan_out) / 2.0);
  const double limit = std::sqrt(3.0 * gain);
  torch::nn::init::uniform_(w, -limit, limit);
}

void VarianceScaling(torch::Tensor& w) {
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
    boxes = anchors->register_buffer(
        "boxes", effdet::GenerateAnchors(image_size, image_size));
  }

  EfficientDet model;
  torch::Tensor boxes;
};
TORCH_MODULE(Bench);

class TimmEfficientDet final : public Model {
 public:
  explicit TimmEfficientDet(const ModelConfig& config)
      : config_(config),
        image_size_(config.small_inputs ? kSmallImageSize : kImageSize),
        bench_(image_size_) {
    vision_ops::RequireLoaded();
    bench_->to(config.device);
    MakeInputs(config.batch_size, torch::kFloat);
    if (config.mode == Mode::kTrain) {
      optimizer_ = std::make_unique<optim::Sgd>(
          common::TimmParamGroups(*bench_, {}, kLr, 4e-5),
          optim::SgdOptions{.lr = kLr, .momentum = 0.9}, config.optimizer);
    }
  }

  torch::Tensor Step() override {
    // train_epoch() calls model.train(); nothing ever calls model.eval().
    bench_->train();
    if (config_.mode == Mode::kEval) {
      // effdet's detections are float32 whatever the model's dtype; the
      // harness wants the main output in that dtype (a (B, 100, 6) cast).
      return EvalStep().to(images_.scalar_type());
    }
    return TrainStep(nullptr);
  }

  torch::nn::Module& module() override { return *bench_; }

  std::map<std::string, torch::Tensor> GoldenOutputs() override {
    bench_->to(torch::kDouble);
    float_dtype_ = torch::kDouble;
    image_size_ = kGoldenImageSize;
    // The fill also overwrote the anchors buffer; the adapter regenerates
    // it in float32 too (effdet's detection code is TorchScript, whose
    // .float() casts even in this float64 run).
    {
      torch::NoGradGuard no_grad;
      bench_->boxes.set_data(effdet::GenerateAnchors(image_size_, image_size_)
                                 .to(bench_->boxes.device()));
    }
    bench_->model->backbone->SetDropPathRate(0.0);
    MakeInputs(kGoldenBatch, torch::kDouble);
    std::map<std::string, torch::Tensor> out;
    for (int l = 0; l < effdet::kNumLevels; l += 4) {
      out["label_cls_" + std::to_string(l)] = cls_targets_[l];
      out["label_bbox_" + std::to_string(l)] = box_targets_[l];
    }
    out["label_num_positives"] = num_positives_;
    // Eval on the filled weights, its BatchNorm updates undone afterwards
    // (the adapter runs a separate, freshly filled DetBenchPredict).
    std::vector<torch::Tensor> saved;
    for (const auto& b : bench_->buffers()) saved.push_back(b.clone());
    {
      torch::NoGradGuard no_grad;
      bench_->train();
      out["eval_detections"] = EvalStep();
    }
    {
      torch::NoGradGuard no_grad;
      const auto buffers = bench_->buffers();
      for (size_t i = 0; i < buffers.size(); ++i) buffers[i].copy_(saved[i]);
    }
    bench_->train();
    TrainStep(&out);
    for (const char* name : kRecorded) {
      out[std::string("after_step:") + name] =
          bench_->named_parameters()[name].detach().clone();
    }
    return out;
  }

 private:
  static constexpr const char* kRecorded[] = {
      "model.backbone.conv_stem.weight",
      "model.backbone.blocks.6.1.conv_pwl.weight",
      "model.fpn.cell.0.fnode.4.combine.edge_weights",
      "model.fpn.cell.3.fnode.7.after_combine.conv.conv_pw.weight",
      "model.class_net.predict.conv_pw.bias",
      "model.box_net.predict.conv_pw.weight"};

  // Images and targets at image_size_ (content 3/4 of the height, the rest
  // mean-padded), in `dtype`; the anchor targets as TorchBench's loader and
  // prefetch() make them (labelled and stored in float32).
  void MakeInputs(int64_t batch, torch::ScalarType dtype) {
    const int64_t size = image_size_;
    const int64_t content = size * 3 / 4;
    const auto device = config_.device;
    torch::Tensor pixels = DeterministicTensor("images", {batch, 3, size, size},
                                               torch::kDouble, 127.5, 127.5);
    torch::Tensor mean =
        torch::tensor({0.485 * 255, 0.456 * 255, 0.406 * 255}, torch::kDouble)
            .view({1, 3, 1, 1});
    torch::Tensor std =
        torch::tensor({0.229 * 255, 0.224 * 255, 0.225 * 255}, torch::kDouble)
            .view({1, 3, 1, 1});
    torch::Tensor images = (pixels - mean) / std;
    images.narrow(2, content, size - content).zero_();
    images_ = dtype == torch::kDouble
                  ? images.to(device)
                  : images.to(torch::kFloat).to(device, config_.dtype());
    int64_t total = 0;
    std::vector<int64_t> counts;
    for (int64_t i = 0; i < batch; ++i) {
      counts.push_back(kObjectsPerImage[i % 8]);
      total += counts.back();
    }
    torch::Tensor u =
        DeterministicTensor("gt_boxes", {total, 4}, torch::kDouble, 0.5, 0.5);
    torch::Tensor cy = content * (0.1 + 0.8 * u.select(1, 0));
    torch::Tensor cx = size * (0.1 + 0.8 * u.select(1, 1));
    torch::Tensor bh = content * (0.04 + 0.5 * u.select(1, 2) * u.select(1, 2));
    torch::Tensor bw = size * (0.04 + 0.5 * u.select(1, 3) * u.select(1, 3));
    torch::Tensor boxes =
        torch::stack(
            {(cy - bh / 2).clamp(0, content), (cx - bw / 2).clamp(0, size),
             (cy + bh / 2).clamp(0, content), (cx + bw / 2).clamp(0, size)},
            1)
            .to(torch::kFloat);
    torch::Tensor classes =
        DeterministicIntegers("gt_classes", {total}, 1, 81).to(torch::kFloat);
    // The loader's own float32 Anchors.
    torch::Tensor anchors = effdet::GenerateAnchors(size, size).to(device);
    std::vector<std::vector<torch::Tensor>> cls(effdet::kNumLevels);
    std::vector<std::vector<torch::Tensor>> box(effdet::kNumLevels);
    std::vector<torch::Tensor> positives;
    int64_t start = 0;
    for (int64_t i = 0; i < batch; ++i) {
      auto t =
          effdet::LabelAnchors(anchors,
                               boxes.narrow(0, start, counts[i])
                                   .to(anchors.device(), anchors.scalar_type()),
                               classes.narrow(0, start, counts[i])
                                   .to(anchors.device(), anchors.scalar_type()),
                               size, size);
      start += counts[i];
      for (int l = 0; l < effdet::kNumLevels; ++l) {
        cls[l].push_back(t.cls[l]);
        box[l].push_back(t.box[l]);
      }
      positives.push_back(t.num_positives);
    }
    const auto f32 = torch::TensorOptions().device(device).dtype(torch::kFloat);
    cls_targets_.clear();
    box_targets_.clear();
    for (int l = 0; l < effdet::kNumLevels; ++l) {
      cls_targets_.push_back(torch::stack(cls[l]).to(f32));
      box_targets_.push_back(torch::stack(box[l]).to(f32));
    }
    num_positives_ = torch::stack(positives).to(f32);
    img_scale_ = torch::ones({batch}, f32);
    img_size_ =
        torch::tensor({static_cast<float>(size), static_cast<float>(content)})
            .repeat({batch, 1})
            .to(f32);
  }

  torch::Tensor EvalStep() {
    auto [cls, box] = bench_->model->forward(images_);
    return effdet::Detect(cls, box, bench_->boxes, img_scale_, img_size_,
                          kNumClasses);
  }

  torch::Tensor TrainStep(std::map<std::string, torch::Tensor>* golden) {
    auto [cls, box] = bench_->model->forward(images_);
    effdet::DetectionLosses losses =
        effdet::DetectionLoss(cls, box, cls_targets_, box_targets_,
                              num_positives_, kNumClasses, float_dtype_);
    // losses_m.update(loss.item(), ...).
    static_cast<void>(losses.loss.item<double>());
    optimizer_->ZeroGrad();
    Backward(losses.loss);
    if (golden != nullptr) {
      (*golden)["class_out.0"] = cls[0].detach();
      (*golden)["class_out.4"] = cls[4].detach();
      (*golden)["box_out.0"] = box[0].detach();
      (*golden)["box_out.4"] = box[4].detach();
      (*golden)["loss"] = losses.loss.detach();
      (*golden)["class_loss"] = losses.class_loss.detach();
      (*golden)["box_loss"] = losses.box_loss.detach();
      const auto params = bench_->named_parameters();
      for (const char* name : kRecorded) {
        (*golden)[std::string("grad:") + name] = params[name].grad().clone();
      }
    }
    common::ClipGradNorm(bench_->parameters(), 10.0);
    optimizer_->Step();
    return losses.loss.detach();
  }

  ModelConfig config_;
  int64_t image_size_;
  torch::ScalarType float_dtype_ = torch::kFloat;
  Bench bench_;
  std::unique_ptr<optim::Sgd> optimizer_;
  torch::Tensor images_;
  std::vector<torch::Tensor> cls_targets_;
  std::vector<torch::Tensor> box_targets_;
  torch::Tensor num_positives_;
  torch::Tensor img_scale_;
  torch::Tensor img_size_;
};

ModelSpec Spec() {
  ModelSpec spec;
  spec.name = "timm_efficientdet";
  spec.domain = "vision";
  spec.task = "object detection";
  spec.reference =
      "effdet tf_efficientdet_d1 (DetBenchTrain / DetBenchPredict)";
  spec.train_batch_size = 16;  // DEFAULT_TRAIN_BSIZE
  spec.eval_batch_size = 128;  // DEFAULT_EVAL_BSIZE
  spec.test_batch_size = 2;
  // effdet 79d26d8 create_model("tf_efficientdet_d1", bench_task="train" or
  // "predict", pretrained_backbone=False) with timm 1.0.29, counted in
  // Python: sum(p.numel() for p in bench.parameters()) and over buffers():
  // 119 BatchNorm layers' statistics and counters plus anchors.boxes
  // (76725 x 4 at 640x640; the same for both benches).
  spec.reference_parameters = 6625898;
  spec.reference_buffers = 378492;
  spec.eval_changes_state =
      "TorchBench never calls .eval(): DetBenchPredict runs in training mode, "
      "so BatchNorm updates its running statistics";
  spec.golden_file = "timm_efficientdet.golden";
  return spec;
}

}  // namespace

TORCHBENCH_REGISTER_MODEL(Spec(), MakeModel<TimmEfficientDet>());

}  // namespace timm_efficientdet_model
}  // namespace torchbench
