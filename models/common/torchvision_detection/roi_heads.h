// File: models/common/torchvision_detection/roi_heads.h
//
// torchvision's second stage (torchvision/ops/poolers.py,
// torchvision/models/detection/roi_heads.py, faster_rcnn.py's TwoMLPHead and
// FastRCNNPredictor, mask_rcnn.py's MaskRCNNHeads and MaskRCNNPredictor):
// MultiScaleRoIAlign with its LevelMapper, the box head and predictor, the
// mask head and predictor, RoIHeads with fastrcnn_loss, maskrcnn_loss,
// postprocess_detections and maskrcnn_inference. Module names are
// torchvision's (roi_heads.box_head.fc6, roi_heads.mask_head.0.0, ...).
#ifndef TORCHBENCH_MODELS_COMMON_TORCHVISION_DETECTION_ROI_HEADS_H_
#define TORCHBENCH_MODELS_COMMON_TORCHVISION_DETECTION_ROI_HEADS_H_

#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/torchvision_detection/box_ops.h"
#include "common/torchvision_detection/rpn.h"

namespace torchbench::torchvision_detection {

// MultiScaleRoIAlign(["0", "1", "2", "3"], output_size, sampling_ratio):
// pools each box from the FPN level LevelMapper picks (canonical 224 at
// level 4), with roi_align(aligned=False). Scales are inferred from the
// feature and image sizes on every call, as torchvision does.
class MultiScaleRoIAlign {
 public:
  MultiScaleRoIAlign(int64_t output_size, int64_t sampling_ratio);
  torch::Tensor operator()(
      const std::vector<torch::Tensor>& features,
      const std::vector<torch::Tensor>& boxes,
      const std::vector<std::pair<int64_t, int64_t>>& image_shapes) const;

 private:
  int64_t output_size_;
  int64_t sampling_ratio_;
};

// TwoMLPHead(256 * 7 * 7, 1024): fc6, fc7 with ReLU.
class TwoMLPHeadImpl : public torch::nn::Module {
 public:
  TwoMLPHeadImpl(int64_t in_channels, int64_t representation_size);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  torch::nn::Linear fc6_{nullptr}, fc7_{nullptr};
};
TORCH_MODULE(TwoMLPHead);

// FastRCNNPredictor(1024, num_classes): class logits and per-class deltas.
class FastRCNNPredictorImpl : public torch::nn::Module {
 public:
  FastRCNNPredictorImpl(int64_t in_channels, int64_t num_classes);
  std::pair<torch::Tensor, torch::Tensor> forward(const torch::Tensor& x);

 private:
  torch::nn::Linear cls_score_{nullptr}, bbox_pred_{nullptr};
};
TORCH_MODULE(FastRCNNPredictor);

// One image's detections.
struct Detection {
  torch::Tensor boxes;
  torch::Tensor labels;
  torch::Tensor scores;
  torch::Tensor masks;  // [N, 1, H, W] probabilities
};

struct RoIHeadsOptions {
  int64_t num_classes = 91;
  double fg_iou_thresh = 0.5;
  double bg_iou_thresh = 0.5;
  int64_t batch_size_per_image = 512;
  double positive_fraction = 0.25;
  double score_thresh = 0.05;
  double nms_thresh = 0.5;
  int64_t detections_per_img = 100;
};

class RoIHeadsImpl : public torch::nn::Module {
 public:
  RoIHeadsImpl(int64_t in_channels, RoIHeadsOptions options);
  // Detections (eval) or the losses loss_classifier, loss_box_reg and
  // loss_mask (training; targets must then be given).
  std::pair<std::vector<Detection>, std::map<std::string, torch::Tensor>>
  forward(const std::vector<torch::Tensor>& features,
          std::vector<torch::Tensor> proposals,
          const std::vector<std::pair<int64_t, int64_t>>& image_shapes,
          const std::vector<Target>* targets);

 private:
  // Appends the gt boxes, matches, samples; returns sampled proposals,
  // matched gt indices, labels and regression targets.
  struct Samples {
    std::vector<torch::Tensor> proposals;
    std::vector<torch::Tensor> matched_idxs;
    std::vector<torch::Tensor> labels;
    std::vector<torch::Tensor> regression_targets;
  };
  Samples SelectTrainingSamples(std::vector<torch::Tensor> proposals,
                                const std::vector<Target>& targets);
  std::vector<Detection> PostprocessDetections(
      const torch::Tensor& class_logits, const torch::Tensor& box_regression,
      const std::vector<torch::Tensor>& proposals,
      const std::vector<std::pair<int64_t, int64_t>>& image_shapes) const;

  RoIHeadsOptions options_;
  MultiScaleRoIAlign box_roi_pool_;
  MultiScaleRoIAlign mask_roi_pool_;
  BoxCoder box_coder_;
  Matcher proposal_matcher_;
  BalancedPositiveNegativeSampler fg_bg_sampler_;
  TwoMLPHead box_head_{nullptr};
  FastRCNNPredictor box_predictor_{nullptr};
  torch::nn::Sequential mask_head_{nullptr};       // MaskRCNNHeads
  torch::nn::Sequential mask_predictor_{nullptr};  // MaskRCNNPredictor
};
TORCH_MODULE(RoIHeads);

}  // namespace torchbench::torchvision_detection

#endif  // TORCHBENCH_MODELS_COMMON_TORCHVISION_DETECTION_ROI_HEADS_H_
