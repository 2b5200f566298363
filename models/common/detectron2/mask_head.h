// detectron2's mask branch (detectron2 @ c470ca3:
// modeling/roi_heads/mask_head.py, layers/mask_ops.py, the mask part of
// modeling/postprocessing.py's detector_postprocess, and
// structures/masks.py's PolygonMasks.crop_and_resize for the targets).
//
// MaskRCNNConvUpsampleHead is the MaskHead the ROI heads of roi_heads.h call:
//   FPN (StandardROIHeads): 4 x (3x3 conv 256 + ReLU) on 14x14 pooled
//     features, 2x2 stride-2 deconv + ReLU, 1x1 predictor -> 28x28 logits;
//   C4 (Res5ROIHeads): no convs, the deconv on the 7x7 res5 box features
//     (2048 channels) -> 14x14 logits.
// Parameter names are detectron2's (mask_fcn1..N, deconv, predictor) and the
// initialisation too (c2_msra_fill: kaiming normal, fan_out, ReLU, zero bias;
// predictor normal(std 0.001), zero bias).
#ifndef TORCHBENCH_MODELS_COMMON_DETECTRON2_MASK_HEAD_H_
#define TORCHBENCH_MODELS_COMMON_DETECTRON2_MASK_HEAD_H_

#include <torch/nn/modules/conv.h>
#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "common/detectron2/box_ops.h"
#include "common/detectron2/roi_heads.h"

namespace torchbench::detectron2 {

// cfg.MODEL.ROI_MASK_HEAD for MaskRCNNConvUpsampleHead.
struct MaskHeadOptions {
  int64_t in_channels = 256;
  // ROI_HEADS.NUM_CLASSES, or 1 with CLS_AGNOSTIC_MASK.
  int64_t num_classes = 80;
  int64_t num_conv = 4;  // FPN configs 4, C4 configs 0 (the default)
  int64_t conv_dim = 256;
  double loss_weight = 1.0;
};

// mask_rcnn_loss: binary cross-entropy (mean) of each foreground proposal's
// logits of its gt class against its matched gt polygons rasterized in the
// proposal box (PolygonMasks.crop_and_resize at the logits' side). Like the
// reference it also works out the accuracy / false positive / false
// negative figures detectron2 logs to its EventStorage (three device syncs);
// they are discarded. `instances` are the foreground proposals (fields
// proposal_boxes, gt_classes, gt_index), `targets` each image's gt.
torch::Tensor MaskRcnnLoss(const torch::Tensor& pred_mask_logits,
                           const std::vector<Instances>& instances,
                           const std::vector<ImageTargets>& targets);

// mask_rcnn_inference: sigmoid of each detection's logits of its predicted
// class (all of them when class agnostic), split per image into pred_masks
// [D, 1, M, M].
void MaskRcnnInference(const torch::Tensor& pred_mask_logits,
                       std::vector<Instances>& instances);

// layers.mask_ops.paste_masks_in_image: masks [N, M, M] (probabilities)
// pasted into an height x width image at boxes [N, 4] with grid_sample
// (_do_paste_mask), thresholded (>= threshold) to bool [N, H, W]. On the CPU
// one mask at a time within the boxes' bounding region (skip_empty), on a GPU
// in chunks of at most 1 GiB of float output over the whole image, as the
// reference. No masks: uint8 [0, H, W] (the reference's new_empty).
torch::Tensor PasteMasksInImage(const torch::Tensor& masks,
                                const torch::Tensor& boxes, int64_t height,
                                int64_t width, double threshold = 0.5);

class MaskRCNNConvUpsampleHead : public MaskHead {
 public:
  explicit MaskRCNNConvUpsampleHead(const MaskHeadOptions& options);

  // The head's layers: logits [R, num_classes, 2S, 2S] of features
  // [R, in_channels, S, S].
  torch::Tensor Layers(const torch::Tensor& features);

  torch::Tensor Losses(const torch::Tensor& features,
                       const std::vector<Instances>& instances,
                       const std::vector<ImageTargets>& targets) override;
  void Inference(const torch::Tensor& features,
                 std::vector<Instances>& instances) override;
  torch::Tensor PasteMasks(const torch::Tensor& pred_masks,
                           const torch::Tensor& boxes, int64_t height,
                           int64_t width, double threshold) override;

 private:
  MaskHeadOptions options_;
  std::vector<torch::nn::Conv2d> mask_fcn_;
  torch::nn::ConvTranspose2d deconv_{nullptr};
  torch::nn::Conv2d predictor_{nullptr};
};

}  // namespace torchbench::detectron2

#endif  // TORCHBENCH_MODELS_COMMON_DETECTRON2_MASK_HEAD_H_
