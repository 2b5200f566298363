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
#include <torch/types.h>

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

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

// Backbone outputs by name ("p2".."p6", "res4", "res5").
using FeatureMaps = std::map<std::string, torch::Tensor>;

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

}  // namespace torchbench::detectron2

#endif  // TORCHBENCH_MODELS_COMMON_DETECTRON2_ROI_HEADS_H_
