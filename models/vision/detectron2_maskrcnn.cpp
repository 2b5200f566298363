// detectron2_maskrcnn_{r_50,r_101}_{fpn,c4} and detectron2_maskrcnn:
// TorchBench's five detectron2 Mask R-CNN models (detectron2 @ c470ca3), one
// definition with the variant as its option:
//   r_50_fpn  COCO-InstanceSegmentation/mask_rcnn_R_50_FPN_1x.yaml
//   r_101_fpn COCO-InstanceSegmentation/mask_rcnn_R_101_FPN_3x.yaml
//   r_50_c4   COCO-InstanceSegmentation/mask_rcnn_R_50_C4_1x.yaml
//   r_101_c4  COCO-InstanceSegmentation/mask_rcnn_R_101_C4_3x.yaml
//     through util/framework/detectron2/model_factory.py (Detectron2Model):
//     one Train call is model(batch) in training mode, the losses summed,
//     zero_grad, backward and build_optimizer's SGD step (BASE_LR 0.001 as
//     TorchBench sets it, momentum 0.9, weight decay 1e-4); one Eval call is
//     model(batch) under no_grad (fp16 on CUDA by default).
//   detectron2_maskrcnn (torchbenchmark/models/detectron2_maskrcnn): the
//     LazyConfig common/models/mask_rcnn_fpn.py, the same network as
//     R_50_FPN but with nothing frozen (the LazyConfig's ResNet keeps
//     freeze_at=0), trained by torch.optim.SGD(params, 0.0); each call loops
//     over ALL prefetched batches (100 of them: islice(loader, 100)), Train:
//     model(batch), sum, backward, step, zero_grad per batch; Eval: model
//     (batch) under no_grad per batch, returning the last batch's outputs.
// The mask branch (models/common/detectron2/mask_head.h): FPN configs pool
// 14x14 regions for MaskRCNNConvUpsampleHead (4 convs, deconv, predictor ->
// 28x28), C4 configs feed it the res5 box features (deconv on 7x7 -> 14x14).
// Training targets come from the gt polygons rasterized in each foreground
// proposal as pycocotools does (models/common/polygon_mask.h); Eval pastes
// the predicted masks into the original image (detector_postprocess).
// Step() returns the summed loss (Train) or the detections' scores (Eval;
// TorchBench returns the Instances' tensor fields).
//
// Inputs: TorchBench prefetches coco_2017_val_100. COCO is not on the
// machine: coco_synthetic (models/common/coco_synthetic.h) stands in, with
// its polygon masks; the images go through detectron2_fasterrcnn's mapper
// (common/detectron2/generalized_rcnn.h: Eval ResizeShortestEdge(800, max
// 1333); Train short edge 800, no flip — the reference draws the short edge
// from 640..800 and flips at random). Detectron2Model runs the first batch
// every call; detectron2_maskrcnn prefetches images 0..99 (batch b holds
// images b*batch .. b*batch+batch-1, mod 100).
// With small_inputs (CPU tests) the images are resized to short edge 320,
// max 416 (same code path), and detectron2_maskrcnn prefetches 2 batches
// instead of 100 (the loop is the same; 100 full steps take tens of minutes
// on a CPU).
//
// Differences from the reference: the pre-trained checkpoint TorchBench
// loads (model_file) is not used: weights are detectron2's initialisation,
// with the residual branches' last FrozenBN scaled by 0.2 as a stand-in for
// trained statistics (StandInForCheckpoint; unscaled, R-101 training
// diverges). The cost does not depend on the values, apart from how many
// boxes survive NMS. The EventStorage figures Train logs (the RPN's anchor
// counts, the ROI heads' background counts and class accuracies,
// mask_rcnn_loss's mask accuracies) are computed with their host syncs and
// dropped, as nobody reads them.
#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/coco_synthetic.h"
#include "common/detectron2/anchor_generator.h"
#include "common/detectron2/generalized_rcnn.h"
#include "common/detectron2/mask_head.h"
#include "common/families.h"
#include "torchbench/amp.h"
#include "torchbench/checks.h"
#include "torchbench/model.h"
#include "torchbench/optim.h"
#include "torchbench/registry.h"
#include "torchbench/vision_ops.h"

namespace torchbench {
namespace detectron2_maskrcnn_model {
namespace {

namespace d2 = ::torchbench::detectron2;

struct Variant {
  const char* name;
  const char* config;  // the yaml, or the LazyConfig file
  d2::RcnnArch arch;
  int64_t depth;
  bool lazy;  // detectron2_maskrcnn's own wrapper
  int64_t parameters;
  int64_t buffers;
};

constexpr int64_t kShortEdge = 800;  // MIN_SIZE_TEST, and the train choice
constexpr int64_t kMaxSize = 1333;
constexpr int64_t kSmallShortEdge = 320;
constexpr int64_t kSmallMaxSize = 416;
constexpr int64_t kPrefetchedBatches = 100;  // islice(loader, 100)
constexpr int64_t kSmallPrefetchedBatches = 2;

// cfg.MODEL.ROI_MASK_HEAD of the variant.
d2::MaskHeadOptions MaskOptions(d2::RcnnArch arch) {
  d2::MaskHeadOptions o;
  if (arch == d2::RcnnArch::kC4) {
    o.in_channels = 2048;  // res5's output
    o.num_conv = 0;        // defaults.py
  } else {
    o.in_channels = 256;  // FPN
    o.num_conv = 4;       // Base-RCNN-FPN.yaml / mask_rcnn_fpn.py
  }
  return o;
}

class MaskRcnn final : public Model, public GoldenCheck {
 public:
  MaskRcnn(const ModelConfig& config, const Variant& variant)
      : mode_(config.mode), variant_(variant) {
    vision_ops::RequireLoaded();
    model_ = d2::GeneralizedRCNN(d2::RcnnConfig{variant.arch, variant.depth},
                                 std::make_shared<d2::MaskRCNNConvUpsampleHead>(
                                     MaskOptions(variant.arch)));
    if (variant.lazy) {
      for (torch::Tensor& p : model_->parameters()) p.set_requires_grad(true);
    }
    d2::StandInForCheckpoint(*model_);
    model_->to(config.device);
    const int64_t short_edge =
        config.small_inputs ? kSmallShortEdge : kShortEdge;
    const int64_t max_size = config.small_inputs ? kSmallMaxSize : kMaxSize;
    const int64_t num_batches = !variant.lazy         ? 1
                                : config.small_inputs ? kSmallPrefetchedBatches
                                                      : kPrefetchedBatches;
    for (int64_t b = 0; b < num_batches; ++b) {
      std::vector<d2::RcnnInput> batch;
      for (int64_t i = 0; i < config.batch_size; ++i) {
        batch.push_back(d2::MakeCocoSyntheticInput(
            static_cast<int>((b * config.batch_size + i) % 100), short_edge,
            max_size, config.float_options()));
      }
      batches_.push_back(std::move(batch));
    }
    if (mode_ == Mode::kTrain) {
      model_->train();
      optimizer_ = MakeOptimizer(config.optimizer);
    } else {
      model_->eval();
    }
  }

  torch::Tensor Step() override {
    if (mode_ == Mode::kEval) {
      std::vector<d2::Instances> out;
      for (const auto& batch : batches_) out = model_->Inference(batch);
      std::vector<torch::Tensor> scores;
      for (const d2::Instances& i : out) scores.push_back(i.scores);
      return torch::cat(scores);
    }
    torch::Tensor loss;
    for (const auto& batch : batches_) loss = TrainStep(batch);
    return loss;
  }

  torch::nn::Module& module() override { return *model_; }

  // As tools/golden/detectron2_maskrcnn_common.py documents.
  std::map<std::string, torch::Tensor> GoldenOutputs() override;

 private:
  std::unique_ptr<optim::Optimizer> MakeOptimizer(OptimizerPath path) {
    if (!variant_.lazy) return d2::BuildOptimizer(*model_, path);
    optim::SgdOptions options;
    options.lr = 0.0;  // torch.optim.SGD(self.model.parameters(), 0.)
    return std::make_unique<optim::Sgd>(model_->parameters(), options, path);
  }

  // One iteration: Detectron2Model zeroes the gradients before backward,
  // detectron2_maskrcnn after the step (the same thing from call to call).
  // Records the losses and the recorded parameters' gradients and values
  // after the step.
  torch::Tensor TrainStep(const std::vector<d2::RcnnInput>& batch);

  Mode mode_;
  Variant variant_;
  d2::GeneralizedRCNN model_{nullptr};
  std::vector<std::vector<d2::RcnnInput>> batches_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  GoldenRecorder recorder_;
};

// The parameters the golden file records (record_params in the adapter):
// the first trainable one, the RPN head's conv, the box predictor and the
// mask predictor.
std::vector<std::string> RecordedParameters(const torch::nn::Module& module) {
  std::vector<std::string> first, rpn, box, mask;
  for (const auto& p : module.named_parameters()) {
    if (!p.value().requires_grad()) continue;
    const std::string& name = p.key();
    if (first.empty()) first.push_back(name);
    if (name.rfind("proposal_generator.rpn_head.conv.", 0) == 0) {
      rpn.push_back(name);
    } else if (name.rfind("roi_heads.box_predictor.", 0) == 0) {
      box.push_back(name);
    } else if (name.rfind("roi_heads.mask_head.predictor.", 0) == 0) {
      mask.push_back(name);
    }
  }
  for (auto* part : {&rpn, &box, &mask}) {
    first.insert(first.end(), part->begin(), part->end());
  }
  return first;
}

torch::Tensor MaskRcnn::TrainStep(const std::vector<d2::RcnnInput>& batch) {
  d2::LossDict losses = model_->Losses(batch);
  torch::Tensor total = losses[0].second;
  for (size_t k = 1; k < losses.size(); ++k) total = total + losses[k].second;
  if (!variant_.lazy) optimizer_->ZeroGrad();
  Backward(total);
  std::vector<std::string> recorded;
  if (recorder_.recording()) {
    recorded = RecordedParameters(*model_);
    auto params = model_->named_parameters();
    for (const std::string& name : recorded) {
      recorder_.Record("grad:" + name, params[name].grad().clone());
    }
  }
  optimizer_->Step();
  if (variant_.lazy) optimizer_->ZeroGrad();
  if (recorder_.recording()) {
    auto params = model_->named_parameters();
    for (const std::string& name : recorded) {
      recorder_.Record("after_step:" + name, params[name].clone());
    }
    for (const auto& [name, value] : losses) recorder_.Record(name, value);
    recorder_.Record("loss", total);
  }
  return total.detach();
}

std::map<std::string, torch::Tensor> MaskRcnn::GoldenOutputs() {
  namespace cs = coco_synthetic;
  using torch::indexing::None;
  using torch::indexing::Slice;
  std::map<std::string, torch::Tensor> out;
  {
    // The constants the fill overwrote, and the weight multipliers
    // (detectron2_rcnn_common.py's SCALES).
    torch::NoGradGuard no_grad;
    d2::PrepareGoldenWeights(*model_,
                             d2::RcnnConfig{variant_.arch, variant_.depth});
  }

  // coco_synthetic image 0 subsampled by 2, its boxes and polygons x0.5.
  const cs::ImageInfo info = cs::MakeImageInfo(0);
  d2::RcnnInput input;
  input.image = cs::MakeImagePixels(0)
                    .index({Slice(None, None, 2), Slice(None, None, 2)})
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
    std::vector<double> polygon = a.polygon;
    for (double& v : polygon) v *= 0.5;
    input.targets.gt_polygons.push_back({polygon});
  }
  input.targets.gt_classes = torch::tensor(classes, torch::kLong);
  const std::vector<d2::RcnnInput> inputs = {input};

  if (variant_.arch == d2::RcnnArch::kC4) {
    // detectron2_rcnn_common.SHRUNK_OVERRIDES (both sides): res5 runs on
    // every region, so fewer regions keep the test short; same code path.
    model_->proposal_generator().options().post_nms_topk_test = 100;
    model_->roi_heads().options().batch_size_per_image = 64;
  }
  model_->eval();
  {
    torch::NoGradGuard no_grad;
    d2::ImageList images = model_->Preprocess(inputs);
    d2::FeatureMap features = model_->backbone().forward(images.tensor);
    for (const auto& [name, value] : features) out["eval:" + name] = value;
    d2::RpnOutput rpn = model_->proposal_generator().forward(images.image_sizes,
                                                             features, nullptr);
    out["eval:proposal_boxes"] = rpn.proposals[0].proposal_boxes;
    out["eval:objectness_logits"] = rpn.proposals[0].objectness_logits;
    d2::ROIHeadsImpl::Output heads =
        model_->roi_heads().forward(features, rpn.proposals, nullptr);
    out["eval:mask_probs"] = heads.instances[0].pred_masks;
    d2::Instances result = model_->Inference(inputs)[0];
    out["eval:pred_boxes"] = result.pred_boxes;
    out["eval:scores"] = result.scores;
    out["eval:pred_classes"] = result.pred_classes;
    out["eval:pred_mask_areas"] =
        result.pred_masks.flatten(1).sum(1).to(torch::kDouble);
  }

  model_->train();
  optimizer_ = MakeOptimizer(OptimizerPath::kSingle);
  torch::manual_seed(0);
  out.merge(recorder_.Capture([&] { TrainStep(inputs); }));
  return out;
}

ModelSpec MakeSpec(const Variant& v) {
  const std::string reference =
      std::string("detectron2 c470ca3 GeneralizedRCNN (") + v.config + ")";
  const std::string golden_file = std::string(v.name) + ".golden";
  ModelSpec spec;
  if (v.lazy) {
    // detectron2_maskrcnn's own Model, a BenchmarkModel (not a
    // Detectron2Model).
    spec = {.name = v.name,
            .domain = "vision",
            .task = "object detection",  // COMPUTER_VISION.DETECTION
            .reference = reference,
            .train_batch_size = 1,  // DEFAULT_TRAIN_BSIZE
            .eval_batch_size = 1,   // DEFAULT_EVAL_BSIZE
            .reference_parameters = v.parameters,
            .reference_buffers = v.buffers,
            .checks = {.golden_file = golden_file,
                       .test_batch_size = 1,
                       .train_may_not_update =
                           "torch.optim.SGD(params, 0.0): the reference's "
                           "step never changes a parameter"}};
  } else {
    spec = Detectron2Spec(
        {.name = v.name,
         .task = "instance segmentation",  // COMPUTER_VISION.SEGMENTATION
         .reference = reference,
         .reference_parameters = v.parameters,
         .reference_buffers = v.buffers,
         .checks = {.golden_file = golden_file}});
  }
  return WithUnsupportedPrecisions(
      std::move(spec), {Precision::kFp16, Precision::kBf16},
      "detectron2's batched_nms gives torchvision's nms float32 boxes with "
      "the model's half/bfloat16 scores, which its CPU kernel rejects "
      "(\"dets should have the same type as scores\"; the reference fails "
      "the same way)",
      /*cpu_only=*/true);
}

ModelFactory Factory(const Variant& v) {
  return [v](const ModelConfig& config) -> std::unique_ptr<Model> {
    return std::make_unique<MaskRcnn>(config, v);
  };
}

// Counts measured in the venv with tools/golden/detectron2_env.py: the yaml's
// build_model(cfg) (the LazyConfig's instantiate(model)) on the CPU,
// sum(p.numel() for p in model.parameters()) and the same over buffers()
// (FrozenBN statistics, pixel_mean/pixel_std and cell_anchors included).
constexpr Variant kR50Fpn{
    "detectron2_maskrcnn_r_50_fpn",
    "COCO-InstanceSegmentation/mask_rcnn_R_50_FPN_1x.yaml",
    d2::RcnnArch::kFPN,
    50,
    false,
    44343216,
    106306};
constexpr Variant kR101Fpn{
    "detectron2_maskrcnn_r_101_fpn",
    "COCO-InstanceSegmentation/mask_rcnn_R_101_FPN_3x.yaml",
    d2::RcnnArch::kFPN,
    101,
    false,
    63283120,
    210754};
constexpr Variant kR50C4{"detectron2_maskrcnn_r_50_c4",
                         "COCO-InstanceSegmentation/mask_rcnn_R_50_C4_1x.yaml",
                         d2::RcnnArch::kC4,
                         50,
                         false,
                         35909612,
                         106306};
constexpr Variant kR101C4{
    "detectron2_maskrcnn_r_101_c4",
    "COCO-InstanceSegmentation/mask_rcnn_R_101_C4_3x.yaml",
    d2::RcnnArch::kC4,
    101,
    false,
    54849516,
    210754};
constexpr Variant kLazy{"detectron2_maskrcnn",
                        "LazyConfig common/models/mask_rcnn_fpn.py",
                        d2::RcnnArch::kFPN,
                        50,
                        true,
                        44343216,
                        106306};

TORCHBENCH_REGISTER_MODEL(MakeSpec(kR50Fpn), Factory(kR50Fpn));
TORCHBENCH_REGISTER_MODEL(MakeSpec(kR101Fpn), Factory(kR101Fpn));
TORCHBENCH_REGISTER_MODEL(MakeSpec(kR50C4), Factory(kR50C4));
TORCHBENCH_REGISTER_MODEL(MakeSpec(kR101C4), Factory(kR101C4));
TORCHBENCH_REGISTER_MODEL(MakeSpec(kLazy), Factory(kLazy));

}  // namespace
}  // namespace detectron2_maskrcnn_model
}  // namespace torchbench
