// detectron2's ROI heads for the R-CNN models (detectron2 @ c470ca3:
// modeling/roi_heads/roi_heads.py, box_head.py, fast_rcnn.py,
// modeling/poolers.py).
//
// How a mask branch plugs in (what StandardROIHeads / Res5ROIHeads pass to
// detectron2's mask head):
//   - The ROI heads own the mask head as the submodule "mask_head" (names
//     roi_heads.mask_head.* as detectron2's), given to them as a MaskHead.
//   - Training: after label_and_sample_proposals, the foreground proposals
//     of each image (select_foreground_proposals: gt_classes not background)
//     with their fields proposal_boxes, gt_classes, gt_boxes and gt_index
//     (the matched object in that image's ImageTargets: detectron2 indexes
//     gt_masks with the same matched_idxs) and the features pooled for them:
//       StandardROIHeads: mask pooler (ROIAlignV2, mask_pooler_resolution,
//         the box in_features) on the foreground proposal_boxes;
//       Res5ROIHeads: the res5 box features of the foreground rows.
//     The head returns loss_mask.
//   - Inference: the box predictions (pred_boxes, scores, pred_classes per
//     image) and the features pooled at pred_boxes the same way; the head
//     sets pred_masks (per-class-selected mask probabilities [D, 1, M, M]).
//   - Postprocessing (detector_postprocess) calls PasteMasks with the
//     rescaled, clipped and nonempty-filtered boxes.
#ifndef TORCHBENCH_MODELS_COMMON_DETECTRON2_ROI_HEADS_H_
#define TORCHBENCH_MODELS_COMMON_DETECTRON2_ROI_HEADS_H_

#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/detectron2/backbone.h"
#include "common/detectron2/box_ops.h"

namespace torchbench::detectron2 {

// A detectron2 mask head (MaskRCNNConvUpsampleHead) as the ROI heads call it.
class MaskHead : public torch::nn::Module {
 public:
  // mask_head(features, instances) in training: `features` [R, C, M, M]
  // pooled for `instances` (the foreground proposals, images in order, R in
  // all), whose gt_index rows point into targets[image]. Returns loss_mask
  // (already multiplied by the head's loss weight).
  virtual torch::Tensor Losses(const torch::Tensor& features,
                               const std::vector<Instances>& instances,
                               const std::vector<ImageTargets>& targets) = 0;

  // mask_head(features, instances) in inference: `features` pooled at the
  // pred_boxes of `instances`; sets each image's pred_masks.
  virtual void Inference(const torch::Tensor& features,
                         std::vector<Instances>& instances) = 0;

  // detector_postprocess's ROIMasks(pred_masks[:, 0]).to_bitmasks(boxes,
  // height, width, threshold).tensor: masks pasted into the output image.
  virtual torch::Tensor PasteMasks(const torch::Tensor& pred_masks,
                                   const torch::Tensor& boxes, int64_t height,
                                   int64_t width, double threshold) = 0;
};

// cfg.MODEL.ROI_HEADS / ROI_BOX_HEAD / ROI_MASK_HEAD / TEST values the R-CNN
// configs use (detectron2's config/defaults.py unless a yaml sets them).
struct RoiHeadsOptions {
  // StandardROIHeads (FPN, DC5) or Res5ROIHeads (C4).
  bool res5_heads = false;
  int64_t num_classes = 80;
  int64_t batch_size_per_image = 512;
  double positive_fraction = 0.25;
  std::vector<double> iou_thresholds = {0.5};
  std::vector<int64_t> iou_labels = {0, 1};
  bool proposal_append_gt = true;
  // IN_FEATURES and their strides and channels (from the backbone).
  std::vector<std::string> in_features;
  std::vector<int64_t> in_strides;
  int64_t in_channels = 256;
  // Box pooler (ROIAlignV2) and FastRCNNConvFCHead.
  int64_t pooler_resolution = 7;
  int64_t pooler_sampling_ratio = 0;
  int64_t num_conv = 0;
  int64_t conv_dim = 256;
  int64_t num_fc = 2;
  int64_t fc_dim = 1024;
  // FastRCNNOutputLayers.
  std::array<double, 4> bbox_reg_weights = {10.0, 10.0, 5.0, 5.0};
  bool cls_agnostic_bbox_reg = false;
  double smooth_l1_beta = 0.0;
  std::string bbox_reg_loss_type = "smooth_l1";
  double bbox_reg_loss_weight = 1.0;
  double test_score_thresh = 0.05;
  double test_nms_thresh = 0.5;
  int64_t test_detections_per_image = 100;
  // Mask branch (only with a MaskHead).
  int64_t mask_pooler_resolution = 14;
  int64_t mask_pooler_sampling_ratio = 0;
};

// poolers.ROIPooler with pooler_type ROIAlignV2 (vision_ops::RoiAlign,
// aligned=True) over one level or an FPN pyramid (assign_boxes_to_levels,
// canonical box size 224 at canonical level 4). No parameters.
class RoiPooler {
 public:
  RoiPooler(int64_t output_size, std::vector<double> scales,
            int64_t sampling_ratio, int64_t canonical_box_size = 224,
            int64_t canonical_level = 4);
  // Pools `x` (one map per scale, [N, C, Hi, Wi]) at box_lists (one [Ri, 4]
  // per image): [sum Ri, C, output_size, output_size].
  torch::Tensor operator()(const std::vector<torch::Tensor>& x,
                           const std::vector<torch::Tensor>& box_lists) const;

 private:
  int64_t output_size_;
  std::vector<double> scales_;
  int64_t sampling_ratio_;
  int64_t min_level_ = 0;
  int64_t max_level_ = 0;
  int64_t canonical_box_size_;
  int64_t canonical_level_;
};

// box_head.FastRCNNConvFCHead without convs (NUM_CONV 0 in every TorchBench
// config): flatten, then fc1..fcN each followed by ReLU.
class FastRCNNConvFCHeadImpl : public torch::nn::Module {
 public:
  FastRCNNConvFCHeadImpl(int64_t input_size, int64_t num_fc, int64_t fc_dim);
  torch::Tensor forward(torch::Tensor x);

 private:
  std::vector<torch::nn::Linear> fcs_;
};
TORCH_MODULE(FastRCNNConvFCHead);

// fast_rcnn.FastRCNNOutputLayers: children cls_score and bbox_pred.
class FastRCNNOutputLayersImpl : public torch::nn::Module {
 public:
  FastRCNNOutputLayersImpl(int64_t input_size, const RoiHeadsOptions& options);
  // (class logits [R, K+1], proposal deltas [R, K*4]).
  std::pair<torch::Tensor, torch::Tensor> forward(torch::Tensor x);
  // losses(): loss_cls (cross entropy, mean) and loss_box_reg.
  LossDict Losses(const std::pair<torch::Tensor, torch::Tensor>& predictions,
                  const std::vector<Instances>& proposals) const;
  // inference(): per image pred_boxes, scores, pred_classes after the score
  // threshold, per-class NMS and the top-k.
  std::vector<Instances> Inference(
      const std::pair<torch::Tensor, torch::Tensor>& predictions,
      const std::vector<Instances>& proposals) const;

 private:
  RoiHeadsOptions options_;
  Box2BoxTransform box2box_transform_;
  torch::nn::Linear cls_score_{nullptr}, bbox_pred_{nullptr};
};
TORCH_MODULE(FastRCNNOutputLayers);

// roi_heads.StandardROIHeads (children box_head, box_predictor, mask_head)
// or, with options.res5_heads, Res5ROIHeads (children res5, box_predictor,
// mask_head) whose res5 stage runs on 14x14 pooled regions.
class ROIHeadsImpl : public torch::nn::Module {
 public:
  // `res5` (Res5ROIHeads only) is the stage to register as "res5";
  // `mask_head` may be null (Faster R-CNN).
  ROIHeadsImpl(const RoiHeadsOptions& options, torch::nn::Sequential res5,
               std::shared_ptr<MaskHead> mask_head);

  struct Output {
    std::vector<Instances> instances;  // inference: the detections
    LossDict losses;                   // training: box (and mask) losses
  };
  Output forward(const FeatureMap& features, std::vector<Instances> proposals,
                 const std::vector<ImageTargets>* targets);

  // label_and_sample_proposals (under no_grad, draws with randperm).
  std::vector<Instances> LabelAndSampleProposals(
      std::vector<Instances> proposals,
      const std::vector<ImageTargets>& targets) const;

  // Box features for `boxes` (one [Ri, 4] per image): the pooled regions
  // through box_head (Standard) or res5 (Res5, before the spatial mean).
  torch::Tensor BoxFeatures(const FeatureMap& features,
                            const std::vector<torch::Tensor>& boxes);
  // The configuration, changeable between calls (golden checks shrink
  // batch_size_per_image).
  RoiHeadsOptions& options() { return options_; }

  // box_predictor on BoxFeatures' output.
  std::pair<torch::Tensor, torch::Tensor> Predict(
      const torch::Tensor& box_features);

 private:
  std::vector<torch::Tensor> InFeatures(const FeatureMap& features) const;

  RoiHeadsOptions options_;
  Matcher proposal_matcher_;
  RoiPooler box_pooler_;
  std::optional<RoiPooler> mask_pooler_;  // StandardROIHeads with a mask
  FastRCNNConvFCHead box_head_{nullptr};
  torch::nn::Sequential res5_{nullptr};
  FastRCNNOutputLayers box_predictor_{nullptr};
  std::shared_ptr<MaskHead> mask_head_;
};
TORCH_MODULE(ROIHeads);

}  // namespace torchbench::detectron2

#endif  // TORCHBENCH_MODELS_COMMON_DETECTRON2_ROI_HEADS_H_
