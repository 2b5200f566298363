// detectron2_fcos_r_50_fpn: TorchBench's detectron2 FCOS (R-50-FPN), Eval
// only, as torchbenchmark/models/detectron2_fcos_r_50_fpn builds it:
// LazyConfig COCO-Detection/fcos_R_50_FPN_1x.py with model.head.norm = "BN"
// (FCOS_USE_BN; TorchBench raises NotImplementedError for its Train), built
// by detectron2 c470ca3 (modeling/meta_arch/{fcos,dense_detector,
// retinanet}.py, box_regression.py Box2BoxTransformLinear,
// postprocessing.py detector_postprocess, layers/batch_norm.py
// CycleBatchNormList). One eval() call: preprocess_image, backbone (frozen
// ResNet-50 stem..res5 + FPN p3..p7, P6/P7 from p5), FCOSHead, and
// forward_inference per image: sqrt(sigmoid(cls) * sigmoid(ctrness)),
// per level the scores above 0.2 and their top 1000, linear box decoding,
// batched_nms 0.6 (torchvision's, loaded by vision_ops), 100 detections,
// rescaled to the original image size.
//
// Inputs: the test mapper's output for the first images of the synthetic
// COCO set (models/common/coco_synthetic.h stands in for coco_2017_val_100;
// batch b uses images 0..b-1, padded together as ImageList does): BGR,
// ResizeShortestEdge(800, max 1333) with detectron2's rounding (480x640 ->
// 800x1067, padded to 800x1088), then float as TorchBench's prefetch makes
// it. The resize runs LibTorch's uint8 bilinear antialias kernel where
// detectron2 runs PIL's bilinear: 0.14% of the values of image 0 differ, by 1
// (image_list.h). With small_inputs (CPU tests) the short edge is 320 (max
// 534): the same code path, 6x fewer pixels.
//
// Differences from the reference:
//   - CycleBatchNormList cycles its five BatchNorms with a counter across
//     calls; here the level index picks the BatchNorm, which is what the
//     counter yields when, as always in FCOSHead, each call runs all levels.
//   - Step() returns the detections' scores of every image, concatenated
//     (TorchBench's eval() returns each Instances' tensors: scores and
//     pred_classes; pred_boxes is a Boxes and is dropped there).
//   - fp16/bf16 (model.half()) cannot run on the CPU, as in the reference:
//     detectron2's batched_nms passes float boxes with half scores and
//     torchvision's CPU nms rejects mixed types. amp runs (torchvision's
//     autocast kernel casts both).
#include <torch/nn/init.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/torch.h>

#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/coco_synthetic.h"
#include "common/detectron2/anchor_generator.h"
#include "common/detectron2/backbone.h"
#include "common/detectron2/image_list.h"
#include "common/families.h"
#include "torchbench/checks.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"
#include "torchbench/vision_ops.h"

namespace torchbench {
namespace detectron2_fcos_r_50_fpn_model {
namespace {

namespace d2 = ::torchbench::detectron2;

constexpr int64_t kNumClasses = 80;
constexpr int64_t kChannels = 256;
constexpr int64_t kNumConvs = 4;
constexpr double kPriorProb = 0.01;
constexpr double kScoreThresh = 0.2;  // test_score_thresh
constexpr int64_t kTopkCandidates = 1000;
constexpr double kNmsThresh = 0.6;
constexpr int64_t kMaxDetections = 100;
constexpr int64_t kShortEdge = 800, kMaxSize = 1333;
constexpr int64_t kSmallShortEdge = 320, kSmallMaxSize = 534;
const std::array<const char*, 5> kLevels = {"p3", "p4", "p5", "p6", "p7"};
const std::vector<int64_t> kStrides = {8, 16, 32, 64, 128};

// Golden check: the head's output convs after the fill, as
// tools/golden/adapters/detectron2_fcos_r_50_fpn.py sets them.
constexpr double kGoldenHeadWeightScale = 0.02;
constexpr double kGoldenClsBiasShift = -5.0;
constexpr double kGoldenBboxBiasShift = 1.0;

// CycleBatchNormList(length=5, BatchNorm2d): per-level statistics
// ("0".."4", affine=False) with a shared affine weight and bias.
class CycleBatchNormListImpl : public torch::nn::Module {
 public:
  CycleBatchNormListImpl(int64_t length, int64_t channels) {
    for (int64_t i = 0; i < length; ++i) {
      bns_.push_back(register_module(
          std::to_string(i),
          torch::nn::BatchNorm2d(
              torch::nn::BatchNorm2dOptions(channels).affine(false))));
    }
    weight_ = register_parameter("weight", torch::ones({channels}));
    bias_ = register_parameter("bias", torch::zeros({channels}));
  }

  torch::Tensor forward(const torch::Tensor& x, size_t level) {
    return bns_.at(level)->forward(x) * weight_.reshape({1, -1, 1, 1}) +
           bias_.reshape({1, -1, 1, 1});
  }

 private:
  std::vector<torch::nn::BatchNorm2d> bns_;
  torch::Tensor weight_, bias_;
};
TORCH_MODULE(CycleBatchNormList);

// RetinaNetHead's cls_subnet / bbox_subnet: Sequential(conv, norm, ReLU) x
// 4, children "0", "1" (norm), "2" (ReLU), "3", ...
class TowerImpl : public torch::nn::Module {
 public:
  TowerImpl() {
    for (int64_t i = 0; i < kNumConvs; ++i) {
      auto conv = register_module(
          std::to_string(3 * i),
          torch::nn::Conv2d(
              torch::nn::Conv2dOptions(kChannels, kChannels, 3).padding(1)));
      torch::NoGradGuard no_grad;
      torch::nn::init::normal_(conv->weight, 0.0, 0.01);
      torch::nn::init::zeros_(conv->bias);
      convs_.push_back(conv);
      norms_.push_back(register_module(
          std::to_string(3 * i + 1),
          CycleBatchNormList(static_cast<int64_t>(kLevels.size()), kChannels)));
    }
  }

  torch::Tensor forward(torch::Tensor x, size_t level) {
    for (size_t i = 0; i < convs_.size(); ++i) {
      x = torch::relu(norms_[i]->forward(convs_[i]->forward(x), level));
    }
    return x;
  }

 private:
  std::vector<torch::nn::Conv2d> convs_;
  std::vector<CycleBatchNormList> norms_;
};
TORCH_MODULE(Tower);

struct HeadOutputs {
  std::vector<torch::Tensor> logits, bbox_reg, ctrness;  // per level
};

torch::nn::Conv2d OutputConv(int64_t out_channels, double bias) {
  torch::nn::Conv2d conv(
      torch::nn::Conv2dOptions(kChannels, out_channels, 3).padding(1));
  torch::NoGradGuard no_grad;
  torch::nn::init::normal_(conv->weight, 0.0, 0.01);
  torch::nn::init::constant_(conv->bias, bias);
  return conv;
}

// FCOSHead (RetinaNetHead with num_anchors 1, norm "BN") plus "ctrness".
class FcosHeadImpl : public torch::nn::Module {
 public:
  FcosHeadImpl()
      : cls_subnet(register_module("cls_subnet", Tower())),
        bbox_subnet(register_module("bbox_subnet", Tower())),
        cls_score(register_module(
            "cls_score",
            OutputConv(kNumClasses, -std::log((1 - kPriorProb) / kPriorProb)))),
        bbox_pred(register_module("bbox_pred", OutputConv(4, 0.0))),
        ctrness(register_module("ctrness", OutputConv(1, 0.0))) {}

  HeadOutputs forward(const std::vector<torch::Tensor>& features) {
    HeadOutputs out;
    for (size_t level = 0; level < features.size(); ++level) {
      out.logits.push_back(
          cls_score->forward(cls_subnet->forward(features[level], level)));
      auto bbox_feature = bbox_subnet->forward(features[level], level);
      out.bbox_reg.push_back(bbox_pred->forward(bbox_feature));
      out.ctrness.push_back(ctrness->forward(bbox_feature));
    }
    return out;
  }

  Tower cls_subnet, bbox_subnet;
  torch::nn::Conv2d cls_score, bbox_pred, ctrness;
};
TORCH_MODULE(FcosHead);

// permute_to_N_HWA_K: (N, A*K, H, W) -> (N, H*W*A, K).
torch::Tensor PermuteToNHWAK(const torch::Tensor& t, int64_t k) {
  const int64_t n = t.size(0), h = t.size(2), w = t.size(3);
  return t.view({n, -1, k, h, w}).permute({0, 3, 4, 1, 2}).reshape({n, -1, k});
}

// Box2BoxTransformLinear(normalize_by_size=True).apply_deltas for (N, 4)
// deltas (l, t, r, b) and anchors.
torch::Tensor ApplyDeltasLinear(torch::Tensor deltas, torch::Tensor boxes) {
  deltas = torch::relu(deltas);
  boxes = boxes.to(deltas.scalar_type());
  auto x0 = boxes.select(1, 0), y0 = boxes.select(1, 1);
  auto x1 = boxes.select(1, 2), y1 = boxes.select(1, 3);
  auto ctr_x = (x0 + x1) * 0.5;
  auto ctr_y = (y0 + y1) * 0.5;
  auto stride_w = x1 - x0, stride_h = y1 - y0;
  deltas = deltas * torch::stack({stride_w, stride_h, stride_w, stride_h}, 1);
  return torch::stack(
      {ctr_x - deltas.select(1, 0), ctr_y - deltas.select(1, 1),
       ctr_x + deltas.select(1, 2), ctr_y + deltas.select(1, 3)},
      1);
}

struct Detections {
  torch::Tensor boxes, scores, classes;
};

Detections Select(const Detections& d, const torch::Tensor& index) {
  return {d.boxes.index({index}), d.scores.index({index}),
          d.classes.index({index})};
}

// detector_postprocess: boxes scaled from the network's input size to
// (height, width), clipped there, empty ones dropped.
Detections Postprocess(Detections d, const std::array<int64_t, 2>& input_size,
                       const std::array<int64_t, 2>& output_size) {
  const double scale_x =
      static_cast<double>(output_size[1]) / static_cast<double>(input_size[1]);
  const double scale_y =
      static_cast<double>(output_size[0]) / static_cast<double>(input_size[0]);
  d.boxes.slice(1, 0, 4, 2).mul_(scale_x);
  d.boxes.slice(1, 1, 4, 2).mul_(scale_y);
  TORCH_CHECK(torch::isfinite(d.boxes).all().item<bool>(),
              "Box tensor contains infinite or NaN!");
  const double h = static_cast<double>(output_size[0]);
  const double w = static_cast<double>(output_size[1]);
  d.boxes = torch::stack(
      {d.boxes.select(1, 0).clamp(0, w), d.boxes.select(1, 1).clamp(0, h),
       d.boxes.select(1, 2).clamp(0, w), d.boxes.select(1, 3).clamp(0, h)},
      -1);
  auto keep = (d.boxes.select(1, 2) - d.boxes.select(1, 0) > 0) &
              (d.boxes.select(1, 3) - d.boxes.select(1, 1) > 0);
  return Select(d, keep);
}

// FCOS (DenseDetector): children backbone, head, anchor_generator and the
// buffers pixel_mean, pixel_std.
class FcosImpl : public torch::nn::Module {
 public:
  FcosImpl()
      : backbone(register_module(
            "backbone",
            d2::BuildResNetFPNBackbone(
                d2::ResNetOptions().depth(50).stride_in_1x1(true).freeze_at(2),
                d2::FPNOptions()
                    .in_features({"res3", "res4", "res5"})
                    .out_channels(kChannels)
                    .top_block(d2::TopBlock::kLastLevelP6P7)
                    .top_block_in_feature("p5")))),
        head(register_module("head", FcosHead())) {
    pixel_mean = register_buffer("pixel_mean", torch::empty({3, 1, 1}));
    pixel_std = register_buffer("pixel_std", torch::empty({3, 1, 1}));
    std::vector<std::vector<double>> sizes;
    for (int64_t s : kStrides) sizes.push_back({static_cast<double>(s)});
    anchor_generator = register_module(
        "anchor_generator",
        d2::DefaultAnchorGenerator(
            sizes, std::vector<std::vector<double>>{{1.0}}, kStrides, 0.5));
    ResetComputedBuffers();
  }

  // pixel_mean, pixel_std and the cell anchors as the constructor makes
  // them (the golden check's fill overwrites every buffer).
  void ResetComputedBuffers() {
    torch::NoGradGuard no_grad;
    pixel_mean.copy_(
        torch::tensor({d2::kPixelMean[0], d2::kPixelMean[1], d2::kPixelMean[2]},
                      torch::kFloat)
            .view({3, 1, 1}));
    pixel_std.copy_(
        torch::tensor({d2::kPixelStd[0], d2::kPixelStd[1], d2::kPixelStd[2]},
                      torch::kFloat)
            .view({3, 1, 1}));
    auto cells = anchor_generator->buffers();
    for (size_t i = 0; i < cells.size(); ++i) {
      cells[i].copy_(
          d2::GenerateCellAnchors({static_cast<double>(kStrides[i])}, {1.0}));
    }
  }

  // DenseDetector.forward in inference: images as the mapper gives them,
  // output_sizes their original (height, width). Records each level's
  // features and head outputs.
  std::vector<Detections> forward(
      const std::vector<torch::Tensor>& images,
      const std::vector<std::array<int64_t, 2>>& output_sizes) {
    const d2::ImageList list = d2::PreprocessImages(
        images, pixel_mean, pixel_std, backbone->size_divisibility());
    const d2::FeatureMap feature_map = backbone->forward(list.tensor);
    std::vector<torch::Tensor> features;
    for (const char* level : kLevels) features.push_back(feature_map.at(level));
    const HeadOutputs raw = head->forward(features);
    if (recorder.recording()) {
      for (size_t l = 0; l < kLevels.size(); ++l) {
        const std::string level = kLevels[l];
        recorder.Record("features." + level, features[l]);
        recorder.Record("head.logits." + level, raw.logits[l]);
        recorder.Record("head.bbox_reg." + level, raw.bbox_reg[l]);
        recorder.Record("head.ctrness." + level, raw.ctrness[l]);
      }
    }
    std::vector<torch::Tensor> logits, deltas, ctrness;
    for (size_t l = 0; l < kLevels.size(); ++l) {
      logits.push_back(PermuteToNHWAK(raw.logits[l], kNumClasses));
      deltas.push_back(PermuteToNHWAK(raw.bbox_reg[l], 4));
      ctrness.push_back(PermuteToNHWAK(raw.ctrness[l], 1));
    }
    const std::vector<torch::Tensor> anchors =
        anchor_generator->forward(features);
    std::vector<Detections> results;
    for (size_t img = 0; img < list.image_sizes.size(); ++img) {
      const auto i = static_cast<int64_t>(img);
      std::vector<torch::Tensor> boxes, scores, classes;
      for (size_t l = 0; l < kLevels.size(); ++l) {
        auto level_scores =
            torch::sqrt(logits[l][i].sigmoid() * ctrness[l][i].sigmoid());
        // _decode_per_level_predictions.
        auto keep = level_scores > kScoreThresh;
        auto kept = level_scores.index({keep});
        auto topk_idxs = torch::nonzero(keep);
        const int64_t num_topk = std::min(kTopkCandidates, topk_idxs.size(0));
        auto [sorted, idxs] = kept.sort(/*dim=*/-1, /*descending=*/true);
        topk_idxs = topk_idxs.index({idxs.slice(0, 0, num_topk)});
        auto anchor_idxs = topk_idxs.select(1, 0);
        boxes.push_back(ApplyDeltasLinear(deltas[l][i].index({anchor_idxs}),
                                          anchors[l].index({anchor_idxs})));
        scores.push_back(sorted.slice(0, 0, num_topk));
        classes.push_back(topk_idxs.select(1, 1));
      }
      Detections d{torch::cat(boxes), torch::cat(scores), torch::cat(classes)};
      // detectron2's batched_nms: float boxes, torchvision's batched_nms
      // below 40000 boxes (at most 5 x 1000 here).
      auto kept = vision_ops::BatchedNms(d.boxes.to(torch::kFloat), d.scores,
                                         d.classes, kNmsThresh);
      d = Select(d, kept.slice(0, 0, kMaxDetections));
      results.push_back(
          Postprocess(std::move(d), list.image_sizes[img], output_sizes[img]));
    }
    return results;
  }

  d2::FPN backbone;
  FcosHead head;
  d2::DefaultAnchorGenerator anchor_generator{nullptr};
  torch::Tensor pixel_mean, pixel_std;
  GoldenRecorder recorder;
};
TORCH_MODULE(Fcos);

class Detectron2FcosR50Fpn final : public Model, public GoldenCheck {
 public:
  explicit Detectron2FcosR50Fpn(const ModelConfig& config) {
    vision_ops::RequireLoaded();
    net_->to(config.device);
    net_->eval();
    const int64_t short_edge =
        config.small_inputs ? kSmallShortEdge : kShortEdge;
    const int64_t max_size = config.small_inputs ? kSmallMaxSize : kMaxSize;
    for (int64_t b = 0; b < config.batch_size; ++b) {
      const int index = static_cast<int>(b % coco_synthetic::kNumImages);
      images_.push_back(MakeImage(index, short_edge, max_size)
                            .to(config.device, config.dtype()));
      const auto info = coco_synthetic::MakeImageInfo(index);
      sizes_.push_back({info.height, info.width});
    }
  }

  torch::Tensor Step() override {
    std::vector<torch::Tensor> scores;
    for (auto& d : net_->forward(images_, sizes_)) {
      scores.push_back(d.scores);
    }
    return torch::cat(scores);
  }

  torch::nn::Module& module() override { return *net_; }

  // tools/golden/adapters/detectron2_fcos_r_50_fpn.py: image 0 at the small
  // size, filled weights with the computed buffers restored and the head's
  // output convs scaled.
  std::map<std::string, torch::Tensor> GoldenOutputs() override {
    torch::NoGradGuard no_grad;
    net_->ResetComputedBuffers();
    auto& head = *net_->head;
    for (auto* conv : {&head.cls_score, &head.bbox_pred, &head.ctrness}) {
      (*conv)->weight.mul_(kGoldenHeadWeightScale);
    }
    head.cls_score->bias.add_(kGoldenClsBiasShift);
    head.bbox_pred->bias.add_(kGoldenBboxBiasShift);
    const auto info = coco_synthetic::MakeImageInfo(0);
    const auto device = net_->pixel_mean.device();
    std::vector<Detections> dets;
    std::map<std::string, torch::Tensor> out = net_->recorder.Capture([&] {
      dets = net_->forward({MakeImage(0, kSmallShortEdge, kSmallMaxSize)
                                .to(device, torch::kFloat)},
                           {{info.height, info.width}});
    });
    out["boxes"] = dets[0].boxes;
    out["scores"] = dets[0].scores;
    out["classes"] = dets[0].classes.to(torch::kFloat);
    return out;
  }

 private:
  static torch::Tensor MakeImage(int index, int64_t short_edge,
                                 int64_t max_size) {
    const auto pixels = coco_synthetic::MakeImagePixels(index);
    const auto size = d2::ResizeShortestEdgeSize(pixels.size(0), pixels.size(1),
                                                 short_edge, max_size);
    return d2::TestImage(pixels, size[0], size[1]);
  }

  Fcos net_;
  std::vector<torch::Tensor> images_;
  std::vector<std::array<int64_t, 2>> sizes_;
};

}  // namespace

// Detectron2Spec would give this Eval-only model a Train batch and the CPU
// tests batch 1: the spec states its Detectron2Model facts itself.
TORCHBENCH_REGISTER_MODEL(
    WithUnsupportedPrecisions(
        ModelSpec(
            {.name = "detectron2_fcos_r_50_fpn",
             .domain = "vision",
             .task = "object detection",
             .reference = "TorchBench detectron2_fcos_r_50_fpn (detectron2 "
                          "c470ca3 fcos_R_50_FPN_1x, head norm BN)",
             // FCOS Train raises NotImplementedError in TorchBench
             // (FCOS_USE_BN).
             .modes = {Mode::kEval},
             .eval_batch_size = 1,  // Detectron2Model.DEFAULT_EVAL_BSIZE
             // instantiate(cfg.model) in the venv with detectron2 c470ca3 from
             // tools/golden/detectron2_env.py: sum(numel) over parameters() and
             // over buffers() (FrozenBN's four buffers, the head's 40
             // BatchNorms' statistics, cell anchors, pixel_mean/std).
             .reference_parameters = 32244245,
             .reference_buffers = 126786,
             // Detectron2Model.DEFAULT_EVAL_CUDA_PRECISION.
             .default_cuda_eval_precision = Precision::kFp16,
             .checks = {.golden_file = "detectron2_fcos_r_50_fpn.golden"}}),
        {Precision::kFp16, Precision::kBf16},
        "detectron2's batched_nms gives torchvision's CPU nms float boxes and "
        "half scores, which it rejects (the reference fails the same way)",
        /*cpu_only=*/true),
    MakeModel<Detectron2FcosR50Fpn>());

}  // namespace detectron2_fcos_r_50_fpn_model
}  // namespace torchbench
