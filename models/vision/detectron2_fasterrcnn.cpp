// detectron2_fasterrcnn_{r_50,r_101}_{c4,dc5,fpn}: TorchBench's six
// detectron2 Faster R-CNN models (torchbenchmark/models/detectron2_fasterrcnn_*
// via util/framework/detectron2/model_factory.py, detectron2 @ c470ca3), one
// definition with the variant as its option:
//   r_50_fpn  COCO-Detection/faster_rcnn_R_50_FPN_1x.yaml
//   r_101_fpn COCO-Detection/faster_rcnn_R_101_FPN_3x.yaml
//   r_50_c4   COCO-Detection/faster_rcnn_R_50_C4_1x.yaml
//   r_101_c4  COCO-Detection/faster_rcnn_R_101_C4_3x.yaml
//   r_50_dc5  COCO-Detection/faster_rcnn_R_50_DC5_1x.yaml
//   r_101_dc5 COCO-Detection/faster_rcnn_R_101_DC5_3x.yaml
// (1x/3x differ only in the schedule, which TorchBench never builds).
//
// One Train call is Detectron2Model.train(): model(batch) in training mode
// returns the loss dict, the losses are summed, then zero_grad, backward and
// build_optimizer's SGD step (BASE_LR 0.001 as TorchBench sets it, momentum
// 0.9, weight decay 1e-4); the EventStorage figures it logs (the RPN's
// anchor counts, the ROI heads' background counts and class accuracies)
// are computed with their host syncs and dropped. One Eval call is eval():
// model(batch) under no_grad; TorchBench returns the Instances' tensor
// fields (scores and pred_classes: pred_boxes is a Boxes, which its filter
// drops); Step() returns the scores.
//
// Inputs: TorchBench prefetches coco_2017_val_100 and runs the first batch.
// COCO is not on the machine: coco_synthetic (models/common/coco_synthetic.h)
// stands in, images 0..batch-1 (image 0 is 480x640 with 7 objects).
//   Eval: the test mapper, ResizeShortestEdge(800, max 1333) -> 800x1067,
//     BGR, converted to float as TorchBench's prefetch does; outputs are
//     scaled back to 480x640 (the dict's height/width).
//   Train: the train mapper of common/data/coco.py picks the short edge at
//     random from (640, ..., 800) and flips at random (and shuffles the
//     data set); here the short edge is 800 and nothing is flipped, so every
//     call sees the same batch, as TorchBench's every call does. The gt
//     boxes and classes are transformed as transform_instance_annotations
//     does.
// With small_inputs (CPU tests) the images are resized to short edge 320,
// max 416 instead (same code path).
//
// Differences from the reference: the COCO-trained checkpoint TorchBench
// loads (model_file, from the model zoo) is not available: weights are
// detectron2's initialisation with the residual branches' last FrozenBN
// scaled (StandInForCheckpoint says why). The cost does not depend on the
// values, apart from how many boxes pass the score threshold and NMS.
#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/coco_synthetic.h"
#include "common/detectron2/anchor_generator.h"
#include "common/detectron2/generalized_rcnn.h"
#include "common/families.h"
#include "torchbench/amp.h"
#include "torchbench/checks.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/model.h"
#include "torchbench/optim.h"
#include "torchbench/registry.h"
#include "torchbench/vision_ops.h"

namespace torchbench {
namespace detectron2_fasterrcnn_model {
namespace {

namespace d2 = ::torchbench::detectron2;

struct Variant {
  const char* name;
  const char* yaml;
  d2::RcnnArch arch;
  int64_t depth;
  int64_t parameters;
  int64_t buffers;
};

constexpr int64_t kShortEdge = 800;  // MIN_SIZE_TEST, and the train choice
constexpr int64_t kMaxSize = 1333;
constexpr int64_t kSmallShortEdge = 320;
constexpr int64_t kSmallMaxSize = 416;

class FasterRcnn final : public Model, public GoldenCheck {
 public:
  FasterRcnn(const ModelConfig& config, const Variant& variant)
      : mode_(config.mode), variant_(variant) {
    vision_ops::RequireLoaded();
    model_ = d2::GeneralizedRCNN(d2::RcnnConfig{variant.arch, variant.depth});
    d2::StandInForCheckpoint(*model_);
    model_->to(config.device);
    const int64_t short_edge =
        config.small_inputs ? kSmallShortEdge : kShortEdge;
    const int64_t max_size = config.small_inputs ? kSmallMaxSize : kMaxSize;
    for (int64_t i = 0; i < config.batch_size; ++i) {
      inputs_.push_back(d2::MakeCocoSyntheticInput(static_cast<int>(i % 100),
                                                   short_edge, max_size,
                                                   config.float_options()));
    }
    if (mode_ == Mode::kTrain) {
      model_->train();
      optimizer_ = d2::BuildOptimizer(*model_, config.optimizer);
    } else {
      model_->eval();
    }
  }

  torch::Tensor Step() override {
    if (mode_ == Mode::kEval) {
      std::vector<d2::Instances> out = model_->Inference(inputs_);
      std::vector<torch::Tensor> scores;
      for (const d2::Instances& i : out) scores.push_back(i.scores);
      return torch::cat(scores);
    }
    return TrainStep();
  }

  torch::nn::Module& module() override { return *model_; }

  // As tools/golden/detectron2_rcnn_common.py documents.
  std::map<std::string, torch::Tensor> GoldenOutputs() override;

 private:
  // Records the gradients of RecordedParameters() before the step, the
  // losses and their sum.
  torch::Tensor TrainStep();

  Mode mode_;
  Variant variant_;
  d2::GeneralizedRCNN model_{nullptr};
  std::vector<d2::RcnnInput> inputs_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  GoldenRecorder recorder_;
};

// The parameters the golden file records (record_params in the adapter):
// the first trainable one, the RPN head's conv and the box predictor.
std::vector<std::string> RecordedParameters(const torch::nn::Module& module) {
  std::vector<std::string> out;
  for (const auto& p : module.named_parameters()) {
    if (!p.value().requires_grad()) continue;
    const std::string& name = p.key();
    if (out.empty() ||
        name.rfind("proposal_generator.rpn_head.conv.", 0) == 0 ||
        name.rfind("roi_heads.box_predictor.", 0) == 0) {
      out.push_back(name);
    }
  }
  return out;
}

torch::Tensor FasterRcnn::TrainStep() {
  d2::LossDict losses = model_->Losses(inputs_);
  torch::Tensor total = losses[0].second;
  for (size_t k = 1; k < losses.size(); ++k) total = total + losses[k].second;
  optimizer_->ZeroGrad();
  Backward(total);
  if (recorder_.recording()) {
    auto params = model_->named_parameters();
    for (const std::string& name : RecordedParameters(*model_)) {
      recorder_.Record("grad:" + name, params[name].grad().clone());
    }
    for (const auto& [name, value] : losses) recorder_.Record(name, value);
    recorder_.Record("loss", total);
  }
  optimizer_->Step();
  return total.detach();
}

std::map<std::string, torch::Tensor> FasterRcnn::GoldenOutputs() {
  namespace cs = coco_synthetic;
  std::map<std::string, torch::Tensor> out;
  {
    // The constants the fill overwrote, and the weight multipliers.
    torch::NoGradGuard no_grad;
    d2::PrepareGoldenWeights(*model_,
                             d2::RcnnConfig{variant_.arch, variant_.depth});
  }

  // coco_synthetic image 0 subsampled by 2, its boxes x0.5.
  const cs::ImageInfo info = cs::MakeImageInfo(0);
  d2::RcnnInput input;
  input.image = cs::MakeImagePixels(0)
                    .index({torch::indexing::Slice(torch::indexing::None,
                                                   torch::indexing::None, 2),
                            torch::indexing::Slice(torch::indexing::None,
                                                   torch::indexing::None, 2)})
                    .flip({2})
                    .permute({2, 0, 1})
                    .to(torch::kFloat)
                    .contiguous();
  input.height = info.height;
  input.width = info.width;
  input.targets.gt_boxes = cs::BoxesXyxy(info, 0.5, 0.5);
  std::vector<int64_t> classes;
  for (const cs::Annotation& a : info.annotations) {
    classes.push_back(a.contiguous_label);
  }
  input.targets.gt_classes = torch::tensor(classes, torch::kLong);
  inputs_ = {input};

  if (variant_.arch != d2::RcnnArch::kFPN) {
    // SHRUNK_OVERRIDES in the adapter: heavy box heads per region.
    model_->proposal_generator().options().post_nms_topk_test = 100;
    model_->roi_heads().options().batch_size_per_image = 64;
  }
  model_->eval();
  {
    torch::NoGradGuard no_grad;
    d2::ImageList images = model_->Preprocess(inputs_);
    d2::FeatureMap features = model_->backbone().forward(images.tensor);
    for (const auto& [name, value] : features) out["eval:" + name] = value;
    d2::RpnOutput rpn = model_->proposal_generator().forward(images.image_sizes,
                                                             features, nullptr);
    out["eval:proposal_boxes"] = rpn.proposals[0].proposal_boxes;
    out["eval:objectness_logits"] = rpn.proposals[0].objectness_logits;
    auto [logits, deltas] =
        model_->roi_heads().Predict(model_->roi_heads().BoxFeatures(
            features, {rpn.proposals[0].proposal_boxes}));
    out["eval:cls_logits"] = logits;
    out["eval:box_deltas"] = deltas;
    d2::Instances result = model_->Inference(inputs_)[0];
    out["eval:pred_boxes"] = result.pred_boxes;
    out["eval:scores"] = result.scores;
    out["eval:pred_classes"] = result.pred_classes;
  }

  model_->train();
  optimizer_ = d2::BuildOptimizer(*model_, OptimizerPath::kSingle);
  const std::vector<std::string> recorded = RecordedParameters(*model_);
  torch::manual_seed(0);
  out.merge(recorder_.Capture([&] { TrainStep(); }));
  auto params = model_->named_parameters();
  for (const std::string& name : recorded) {
    out["after_step:" + name] = params[name].detach().clone();
  }
  return out;
}

ModelSpec MakeSpec(const Variant& v) {
  return WithUnsupportedPrecisions(
      Detectron2Spec(
          {.name = v.name,
           .reference = std::string("detectron2 c470ca3 GeneralizedRCNN (") +
                        v.yaml + ")",
           .reference_parameters = v.parameters,
           .reference_buffers = v.buffers,
           .checks = {.golden_file = std::string(v.name) + ".golden"}}),
      {Precision::kFp16, Precision::kBf16},
      "detectron2's batched_nms gives torchvision's nms float32 boxes with "
      "the model's half/bfloat16 scores, which its CPU kernel rejects "
      "(\"dets should have the same type as scores\"; the reference fails "
      "the same way)",
      /*cpu_only=*/true);
}

ModelFactory Factory(const Variant& v) {
  return [v](const ModelConfig& config) -> std::unique_ptr<Model> {
    return std::make_unique<FasterRcnn>(config, v);
  };
}

// Counts measured in the venv with tools/golden/detectron2_env.py:
// build_model(cfg) of the yaml on the CPU, sum(p.numel() for p in
// model.parameters()) and the same over buffers() (FrozenBN statistics,
// pixel_mean/pixel_std and cell_anchors included).
constexpr Variant kR50Fpn{"detectron2_fasterrcnn_r_50_fpn",
                          "COCO-Detection/faster_rcnn_R_50_FPN_1x.yaml",
                          d2::RcnnArch::kFPN,
                          50,
                          41699936,
                          106306};
constexpr Variant kR101Fpn{"detectron2_fasterrcnn_r_101_fpn",
                           "COCO-Detection/faster_rcnn_R_101_FPN_3x.yaml",
                           d2::RcnnArch::kFPN,
                           101,
                           60639840,
                           210754};
constexpr Variant kR50C4{"detectron2_fasterrcnn_r_50_c4",
                         "COCO-Detection/faster_rcnn_R_50_C4_1x.yaml",
                         d2::RcnnArch::kC4,
                         50,
                         33791644,
                         106306};
constexpr Variant kR101C4{"detectron2_fasterrcnn_r_101_c4",
                          "COCO-Detection/faster_rcnn_R_101_C4_3x.yaml",
                          d2::RcnnArch::kC4,
                          101,
                          52731548,
                          210754};
constexpr Variant kR50Dc5{"detectron2_fasterrcnn_r_50_dc5",
                          "COCO-Detection/faster_rcnn_R_50_DC5_1x.yaml",
                          d2::RcnnArch::kDC5,
                          50,
                          165581468,
                          106306};
constexpr Variant kR101Dc5{"detectron2_fasterrcnn_r_101_dc5",
                           "COCO-Detection/faster_rcnn_R_101_DC5_3x.yaml",
                           d2::RcnnArch::kDC5,
                           101,
                           184521372,
                           210754};

TORCHBENCH_REGISTER_MODEL(MakeSpec(kR50Fpn), Factory(kR50Fpn));
TORCHBENCH_REGISTER_MODEL(MakeSpec(kR101Fpn), Factory(kR101Fpn));
TORCHBENCH_REGISTER_MODEL(MakeSpec(kR50C4), Factory(kR50C4));
TORCHBENCH_REGISTER_MODEL(MakeSpec(kR101C4), Factory(kR101C4));
TORCHBENCH_REGISTER_MODEL(MakeSpec(kR50Dc5), Factory(kR50Dc5));
TORCHBENCH_REGISTER_MODEL(MakeSpec(kR101Dc5), Factory(kR101Dc5));

}  // namespace
}  // namespace detectron2_fasterrcnn_model
}  // namespace torchbench
