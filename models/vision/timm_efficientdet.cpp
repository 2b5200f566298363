// TorchBench's timm_efficientdet: effdet (rwightman/efficientdet-pytorch at
// 79d26d8, TorchBench's pin, with its effdet.patch) tf_efficientdet_d1 at
// 640x640: a tf_efficientnet_b1 backbone (pinned timm; TF "SAME" padding,
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
// SGD step, torch.cuda.synchronize(), then
// lr_scheduler.step_update(num_updates=1). The optimizer is
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
// TorchBench runs this model on CUDA only (its __init__ raises elsewhere:
// effdet's PrefetchLoader calls .cuda()); nothing in the model needs CUDA,
// so this port runs on the CPU too.
//
// small_inputs (CPU tests): 256x256 images (192x256 content), the same code
// path (every BiFPN resampling exists at both sizes).
//
// Differences from the reference: the BiFPN's nearest-neighbour upsampling
// takes its output size from the feature pyramid of the actual input
// (effdet fixes it from config.image_size; equal for the configured size);
// Eval copies the detections and image indices to the host as effdet's
// evaluator does, but returns the device detections and, under fp16/bf16,
// in that dtype (the reference's are float32).
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/optimizers.h"
#include "torchbench/amp.h"
#include "torchbench/checks.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/device.h"
#include "torchbench/model.h"
#include "torchbench/optim.h"
#include "torchbench/registry.h"
#include "torchbench/vision_ops.h"
#include "vision/effdet_anchors.h"
#include "vision/effdet_net.h"

namespace torchbench {
namespace timm_efficientdet_model {
namespace {

using effdet::Bench;
using effdet::kNumClasses;

constexpr int64_t kImageSize = 640;
constexpr int64_t kSmallImageSize = 256;
constexpr int64_t kGoldenImageSize = 128;
constexpr int64_t kGoldenBatch = 2;
// The lr the cosine scheduler's warm-up gives every call (see above).
constexpr double kLr = 1e-4;
constexpr int64_t kObjectsPerImage[] = {4, 7, 12, 2, 9, 6, 3, 15};

class TimmEfficientDet final : public Model, public GoldenCheck {
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
      const torch::Tensor detections = EvalStep();
      // evaluator.add_predictions: detections.cpu() and
      // target['img_idx'].cpu(), host copies the evaluator keeps.
      detections.cpu();
      img_idx_.cpu();
      // effdet's detections are float32 whatever the model's dtype; the
      // harness wants the main output in that dtype (a (B, 100, 6) cast).
      return detections.to(images_.scalar_type());
    }
    return TrainStep();
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
    out.merge(recorder_.Capture([&] { TrainStep(); }));
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
    // Drawn in float32 (float64 for the golden run), as TorchBench's
    // float32 inputs.
    const torch::ScalarType draw =
        dtype == torch::kDouble ? torch::kDouble : torch::kFloat;
    torch::Tensor images = DeterministicTensor("images", {batch, 3, size, size},
                                               draw, 127.5, 127.5);
    const auto channel = torch::TensorOptions().dtype(draw);
    images
        .sub_(torch::tensor({0.485 * 255, 0.456 * 255, 0.406 * 255}, channel)
                  .view({1, 3, 1, 1}))
        .div_(torch::tensor({0.229 * 255, 0.224 * 255, 0.225 * 255}, channel)
                  .view({1, 3, 1, 1}));
    images.narrow(2, content, size - content).zero_();
    images_ = images.to(
        device, dtype == torch::kDouble ? torch::kDouble : config_.dtype());
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
    img_idx_ = torch::arange(batch, f32);  // the dataset indices, as float32
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

  // Records the heads' outputs at levels 0 and 4, the losses and
  // kRecorded's gradients.
  torch::Tensor TrainStep() {
    auto [cls, box] = bench_->model->forward(images_);
    effdet::DetectionLosses losses =
        effdet::DetectionLoss(cls, box, cls_targets_, box_targets_,
                              num_positives_, kNumClasses, float_dtype_);
    // losses_m.update(loss.item(), ...).
    static_cast<void>(losses.loss.item<double>());
    optimizer_->ZeroGrad();
    Backward(losses.loss);
    if (recorder_.recording()) {
      recorder_.Record("class_out.0", cls[0]);
      recorder_.Record("class_out.4", cls[4]);
      recorder_.Record("box_out.0", box[0]);
      recorder_.Record("box_out.4", box[4]);
      recorder_.Record("loss", losses.loss);
      recorder_.Record("class_loss", losses.class_loss);
      recorder_.Record("box_loss", losses.box_loss);
      const auto params = bench_->named_parameters();
      for (const char* name : kRecorded) {
        recorder_.Record(std::string("grad:") + name,
                         params[name].grad().clone());
      }
    }
    common::ClipGradNorm(bench_->parameters(), 10.0);
    optimizer_->Step();
    // train_epoch's torch.cuda.synchronize() after every step.
    SynchronizeDevice(images_.device());
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
  torch::Tensor img_idx_;
  torch::Tensor img_size_;
  GoldenRecorder recorder_;
};

}  // namespace

TORCHBENCH_REGISTER_MODEL(
    ModelSpec(
        {.name = "timm_efficientdet",
         .domain = "vision",
         .task = "object detection",
         .reference =
             "effdet tf_efficientdet_d1 (DetBenchTrain / DetBenchPredict)",
         .train_batch_size = 16,  // DEFAULT_TRAIN_BSIZE
         .eval_batch_size = 128,  // DEFAULT_EVAL_BSIZE
         // effdet 79d26d8 create_model("tf_efficientdet_d1", bench_task="train"
         // or "predict", pretrained_backbone=False) with pinned timm, counted
         // in Python: sum(p.numel() for p in bench.parameters()) and over
         // buffers(): 119 BatchNorm layers' statistics and counters plus
         // anchors.boxes (76725 x 4 at 640x640; the same for both benches).
         .reference_parameters = 6625898,
         .reference_buffers = 378492,
         // metadata.yaml: cudnn.benchmark in Train only; enable_amp() adds timm's
         // NativeScaler.
         .train_cudnn = {.benchmark = true},
         .enable_amp = true,
         .amp_grad_scaler = AmpGradScaler::kKept,
         .checks = {.golden_file = "timm_efficientdet.golden",
                    .eval_changes_state =
                        "TorchBench never calls .eval(): DetBenchPredict runs "
                        "in training mode, so BatchNorm updates its running "
                        "statistics"}}),
    MakeModel<TimmEfficientDet>());

}  // namespace timm_efficientdet_model
}  // namespace torchbench
