// TorchBench's vision_maskrcnn (torchbenchmark/models/vision_maskrcnn/
// __init__.py and coco_utils.py at 43ca0857): torchvision's
// maskrcnn_resnet50_fpn(weights=COCO_V1), i.e. a ResNet-50 body with
// FrozenBatchNorm2d (eps 0: the COCO_V1 loader's overwrite_eps), conv1 and
// layer1 frozen (trainable_backbone_layers 3), FPN with LastLevelMaxPool,
// RPN, box and mask heads for 91 classes (models/common/
// torchvision_detection/).
//
// One Train call is train(): model.train(); the loss dict of one batch
// (loss_classifier, loss_box_reg, loss_mask, loss_objectness,
// loss_rpn_box_reg) summed in that order; zero_grad, backward and one step
// of SGD(lr 0.02, momentum 0.9, weight decay 1e-4) over the parameters that
// require grad. One Eval call is eval(): model.eval() under no_grad, the
// detections (boxes, labels, scores, masks) of each image; pasting each
// mask reads its box back element by element as torchvision's
// paste_mask_in_image does (int(), the builtin max/min, tensor slice
// bounds: about fourteen host syncs a detection).
//
// Inputs: TorchBench reads the first images of COCO 2017 val
// (coco_2017_val_100, SequentialSampler) through CocoDetection and
// ConvertCocoPolysToMask; that set is not on this machine, so the batch is
// images 0..B-1 of models/common/coco_synthetic.h (image 0 is 480x640, 7
// polygon objects each), converted as ConvertCocoPolysToMask converts a
// COCO image: pixels uint8 -> float32 / 255 ([3, H, W]); boxes xywh in
// float32, x2 = x + w and y2 = y + h in float32, clamped to the image;
// labels the COCO category ids (int64); masks the polygons rasterized as
// pycocotools' frPyObjects + decode do (common/polygon_mask.h), uint8.
// The model's own transform resizes (shortest side 800, longest at most
// 1333: 480x640 -> 800x1066, padded to 800x1088), normalises and pads.
//
// Differences from the reference:
//   - Weights: COCO_V1 cannot be downloaded here; the architecture is built
//     with torchvision's initialisation (random) instead. With
//     FrozenBatchNorm at its defaults (an identity) such a body is an
//     unnormalised ResNet-50 whose activations grow block by block (layer4
//     up to 256 at 800x1088), and the reference's own train() from that
//     state diverges (torchvision in Python, same init and data: losses
//     4e8 at the second step, NaN at the third). A trained body has
//     normalised activations, so each FrozenBatchNorm2d's running_mean/var
//     are set once, at construction, to the per-channel statistics of its
//     input on this batch (MaskRCNN::CalibrateFrozenBatchNorm; weight 1,
//     bias 0 kept): Train's first steps are then finite. Only the values
//     differ from torchvision's code; every op is the reference's.
//     The golden check fills every weight and buffer instead.
//     That alone is not enough: the heads are random, and lr 0.02
//     without warm-up (TorchBench fine-tunes COCO_V1) drives repeated steps
//     on the same batch up (at 800x1088 the loss passed 1e5 by the fifth
//     step, then NaN; the same happens in Python). A trained ResNet's
//     residual branches are small next to their identity path, so the
//     stand-in also sets each bottleneck's last FrozenBatchNorm2d scale
//     (bn3.weight) to 0.2 before calibrating, as detectron2_fasterrcnn's
//     StandInForCheckpoint does (values only; the optimizer and every op
//     stay the reference's). Measured at full size, batch 1, CPU: 11 and
//     13 consecutive finite Train steps (warm-up 10 and 12, then one
//     timed); the timed step took 6 s (17 s with the 2 cores shared).
//   - The data set: synthetic, as above.
//   - TorchBench lowers the Eval batch to 1 on the CPU (DEFAULT_EVAL_BSIZE
//     = 1 when device == "cpu"); the spec keeps the CUDA default 4 and the
//     program's --torchbench_batch_sizes picks the batch.
//   - small_inputs (CPU smoke/precision tests only): the transform's
//     min/max size become 320/427 (480x640 -> 320x426), the same code path.
#include <torch/nn/module.h>
#include <torch/types.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/coco_synthetic.h"
#include "common/families.h"
#include "common/polygon_mask.h"
#include "common/torchvision_detection/mask_rcnn.h"
#include "torchbench/amp.h"
#include "torchbench/checks.h"
#include "torchbench/golden.h"
#include "torchbench/model.h"
#include "torchbench/optim.h"
#include "torchbench/registry.h"
#include "torchbench/vision_ops.h"

namespace torchbench {
namespace vision_maskrcnn_model {
namespace {

namespace tvd = torchvision_detection;

constexpr int64_t kSmallMinSize = 320;
constexpr int64_t kSmallMaxSize = 427;
// The golden check (tools/golden/adapters/vision_maskrcnn.py).
constexpr int64_t kGoldenMinSize = 192;
constexpr int64_t kGoldenMaxSize = 256;
constexpr uint64_t kGoldenTrainSeed = 1234;
constexpr double kLr = 0.02;
constexpr double kMomentum = 0.9;
constexpr double kWeightDecay = 1e-4;

// ConvertCocoPolysToMask on a coco_synthetic image: the float image and its
// target.
std::pair<torch::Tensor, tvd::Target> LoadImage(int index) {
  const coco_synthetic::ImageInfo info = coco_synthetic::MakeImageInfo(index);
  const int64_t h = info.height;
  const int64_t w = info.width;
  torch::Tensor image =
      coco_synthetic::MakeImagePixels(index).permute({2, 0, 1}).contiguous();
  image = image.to(torch::kFloat) / 255.0;
  std::vector<float> boxes;
  std::vector<int64_t> labels;
  std::vector<torch::Tensor> masks;
  for (const coco_synthetic::Annotation& a : info.annotations) {
    if (a.iscrowd != 0) continue;
    const float x = static_cast<float>(a.bbox_xywh[0]);
    const float y = static_cast<float>(a.bbox_xywh[1]);
    // boxes[:, 2:] += boxes[:, :2] in float32, then clamp to the image.
    const float x2 = x + static_cast<float>(a.bbox_xywh[2]);
    const float y2 = y + static_cast<float>(a.bbox_xywh[3]);
    const auto clamp = [](float v, int64_t hi) {
      return std::min(std::max(v, 0.0f), static_cast<float>(hi));
    };
    boxes.insert(boxes.end(),
                 {clamp(x, w), clamp(y, h), clamp(x2, w), clamp(y2, h)});
    labels.push_back(a.category_id);
    masks.push_back(polygon_mask::PolygonsToMask({a.polygon}, h, w));
  }
  const int64_t n = static_cast<int64_t>(labels.size());
  tvd::Target target;
  target.boxes = torch::tensor(boxes, torch::kFloat).reshape({n, 4});
  target.labels = torch::tensor(labels, torch::kLong);
  target.masks = torch::stack(masks).to(torch::kUInt8);
  const torch::Tensor keep =
      (target.boxes.select(1, 3) > target.boxes.select(1, 1)) &
      (target.boxes.select(1, 2) > target.boxes.select(1, 0));
  target.boxes = target.boxes.index({keep});
  target.labels = target.labels.index({keep});
  target.masks = target.masks.index({keep});
  return {image, target};
}

// The stand-in for COCO_V1's trained body (see the header): each
// bottleneck's last FrozenBatchNorm2d (bn3) scales its residual branch by
// kResidualBranchScale, as detectron2_fasterrcnn's StandInForCheckpoint
// does. Set before the calibration, so the later statistics see the damped
// residual stream; the calibration keeps the weight.
constexpr double kResidualBranchScale = 0.2;

void StandInForCheckpoint(torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  const std::string suffix = "bn3.weight";
  for (auto& b : model.named_buffers()) {
    const std::string& name = b.key();
    if (name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      b.value().fill_(kResidualBranchScale);
    }
  }
}

class VisionMaskrcnn final : public Model, public GoldenCheck {
 public:
  explicit VisionMaskrcnn(const ModelConfig& config) : mode_(config.mode) {
    vision_ops::RequireLoaded();
    tvd::MaskRCNNOptions options;
    if (config.small_inputs) {
      options.min_size = kSmallMinSize;
      options.max_size = kSmallMaxSize;
    }
    model_ = tvd::MaskRCNN(options);
    model_->to(config.device);
    for (int i = 0; i < config.batch_size; ++i) {
      auto [image, target] = LoadImage(i % coco_synthetic::kNumImages);
      images_.push_back(image.to(config.device, config.dtype()));
      target.boxes = target.boxes.to(config.device);
      target.labels = target.labels.to(config.device);
      target.masks = target.masks.to(config.device);
      targets_.push_back(target);
    }
    StandInForCheckpoint(*model_);
    {
      // Stand-in for COCO_V1's FrozenBatchNorm statistics (see the header).
      std::vector<torch::Tensor> float_images;
      for (const auto& image : images_) {
        float_images.push_back(image.to(torch::kFloat));
      }
      model_->CalibrateFrozenBatchNorm(float_images);
    }
    if (mode_ == Mode::kTrain) {
      std::vector<torch::Tensor> params;
      for (const auto& p : model_->parameters()) {
        if (p.requires_grad()) params.push_back(p);
      }
      optimizer_ = std::make_unique<optim::Sgd>(
          std::move(params),
          optim::SgdOptions{
              .lr = kLr, .momentum = kMomentum, .weight_decay = kWeightDecay},
          config.optimizer);
    }
  }

  torch::Tensor Step() override {
    return mode_ == Mode::kTrain ? TrainStep() : EvalStep();
  }

  torch::nn::Module& module() override { return *model_; }

  std::map<std::string, torch::Tensor> GoldenOutputs() override {
    model_->to(torch::kDouble);
    model_->transform() =
        tvd::GeneralizedRCNNTransform(kGoldenMinSize, kGoldenMaxSize);
    for (auto& image : images_) image = image.to(torch::kDouble);
    return recorder_.Capture([&] {
      {
        torch::NoGradGuard no_grad;
        EvalStep();
      }
      torch::manual_seed(kGoldenTrainSeed);
      TrainStep();
    });
  }

 private:
  static constexpr const char* kEdges[] = {
      "backbone.body.layer2.0.conv1.weight",
      "backbone.fpn.inner_blocks.0.0.weight",
      "rpn.head.conv.0.0.weight",
      "roi_heads.box_head.fc6.bias",
      "roi_heads.box_predictor.cls_score.weight",
      "roi_heads.mask_predictor.mask_fcn_logits.weight"};

  // Records the losses, their sum and kEdges' gradients and values after
  // the step.
  torch::Tensor TrainStep() {
    model_->train();
    std::vector<tvd::Target> targets = targets_;
    auto [losses, detections] = model_->forward(images_, &targets);
    // sum(loss_dict.values()): RoIHeads' losses, then the RPN's.
    torch::Tensor loss;
    for (const char* key : {"loss_classifier", "loss_box_reg", "loss_mask",
                            "loss_objectness", "loss_rpn_box_reg"}) {
      loss = loss.defined() ? loss + losses.at(key) : losses.at(key);
      if (recorder_.recording()) recorder_.Record(key, losses.at(key).clone());
    }
    optimizer_->ZeroGrad();
    Backward(loss);
    if (recorder_.recording()) {
      recorder_.Record("loss", loss.clone());
      for (const auto& p : model_->named_parameters()) {
        for (const char* edge : kEdges) {
          if (p.key() == edge) {
            recorder_.Record("grad:" + p.key(), p.value().grad().clone());
          }
        }
      }
    }
    optimizer_->Step();
    if (recorder_.recording()) {
      for (const auto& p : model_->named_parameters()) {
        for (const char* edge : kEdges) {
          if (p.key() == edge) {
            recorder_.Record("after_step:" + p.key(), p.value().clone());
          }
        }
      }
    }
    return loss.detach();
  }

  // Records each image's detections.
  torch::Tensor EvalStep() {
    model_->eval();
    auto [losses, detections] = model_->forward(images_, nullptr);
    std::vector<torch::Tensor> flat;
    for (size_t i = 0; i < detections.size(); ++i) {
      const tvd::Detection& d = detections[i];
      if (recorder_.recording()) {
        const std::string p = "eval." + std::to_string(i) + ".";
        recorder_.Record(p + "boxes", d.boxes);
        recorder_.Record(p + "labels", d.labels);
        recorder_.Record(p + "scores", d.scores);
        recorder_.Record(p + "masks", d.masks);
      }
      flat.push_back(d.scores);
    }
    // eval() returns every image's boxes, labels, scores and masks; the
    // step's tensor is the scores (the harness checks it is finite).
    return torch::cat(flat);
  }

  Mode mode_;
  tvd::MaskRCNN model_{nullptr};
  std::vector<torch::Tensor> images_;
  std::vector<tvd::Target> targets_;
  std::unique_ptr<optim::Sgd> optimizer_;
  GoldenRecorder recorder_;
};

}  // namespace

TORCHBENCH_REGISTER_MODEL(
    WithUnsupportedPrecisions(
        ModelSpec(
            {.name = "vision_maskrcnn",
             .domain = "vision",
             .task = "instance segmentation",
             .reference = "TorchBench vision_maskrcnn (torchvision "
                          "maskrcnn_resnet50_fpn, COCO_V1 architecture)",
             .train_batch_size = 4,  // DEFAULT_TRAIN_BSIZE
             .eval_batch_size = 4,   // DEFAULT_EVAL_BSIZE (1 on the CPU)
             // Counted in Python (pinned torch, pinned torchvision) on the
             // model maskrcnn_resnet50_fpn(weights=COCO_V1) builds:
             // resnet50(norm_layer=FrozenBatchNorm2d),
             // _resnet_fpn_extractor(backbone, 3), MaskRCNN(backbone,
             // num_classes=91); buffers are the FrozenBatchNorm2d weight, bias,
             // running_mean and running_var (anchors are attributes).
             .reference_parameters = 44401393,
             .reference_buffers = 106240,
             .checks = {.golden_file = "vision_maskrcnn.golden"}}),
        // model.half() / model.bfloat16() on the CPU: torchvision's CPU nms
        // kernel (the RPN's batched_nms) dispatches float and double only, so
        // the reference stops there too ("nms_kernel" not implemented for
        // 'BFloat16'); amp keeps float32 boxes (nms and roi_align autocast to
        // float32) and runs.
        {Precision::kFp16, Precision::kBf16},
        "torchvision's CPU nms kernel has no Half/BFloat16",
        /*cpu_only=*/true),
    MakeModel<VisionMaskrcnn>());

}  // namespace vision_maskrcnn_model
}  // namespace torchbench
