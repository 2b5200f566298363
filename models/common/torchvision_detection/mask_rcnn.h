// File: models/common/torchvision_detection/mask_rcnn.h
//
// torchvision's maskrcnn_resnet50_fpn (torchvision/models/detection/
// mask_rcnn.py, faster_rcnn.py, generalized_rcnn.py, transform.py,
// backbone_utils.py, torchvision/ops/feature_pyramid_network.py): the
// GeneralizedRCNNTransform, a ResNet-50 body with FPN and LastLevelMaxPool,
// the RPN and the RoI heads with the mask branch, with torchvision's
// state_dict names (backbone.body.*, backbone.fpn.*, rpn.head.*,
// roi_heads.*).
#ifndef TORCHBENCH_MODELS_COMMON_TORCHVISION_DETECTION_MASK_RCNN_H_
#define TORCHBENCH_MODELS_COMMON_TORCHVISION_DETECTION_MASK_RCNN_H_

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/torchvision_detection/roi_heads.h"
#include "common/torchvision_detection/rpn.h"
#include "common/torchvision_resnet.h"

namespace torchbench::torchvision_detection {

// GeneralizedRCNNTransform(min_size, max_size, ImageNet mean/std, 32).
class GeneralizedRCNNTransform {
 public:
  GeneralizedRCNNTransform(int64_t min_size, int64_t max_size);
  // Normalises and resizes each image (and its target's boxes and masks),
  // then pads the batch to a multiple of 32. In training it draws the size
  // with torch_choice() as torchvision does (one uniform_ per image).
  ImageList operator()(const std::vector<torch::Tensor>& images,
                       std::vector<Target>* targets, bool training) const;
  // Boxes back to the original sizes; masks pasted into the images.
  void Postprocess(
      std::vector<Detection>* result,
      const std::vector<std::pair<int64_t, int64_t>>& image_shapes,
      const std::vector<std::pair<int64_t, int64_t>>& original_sizes) const;

 private:
  int64_t min_size_;
  int64_t max_size_;
};

// BackboneWithFPN over a FrozenBatchNorm ResNet-50 (body) with
// FeaturePyramidNetwork([256, 512, 1024, 2048], 256, LastLevelMaxPool).
class BackboneWithFPNImpl : public torch::nn::Module {
 public:
  // trainable_layers as _resnet_fpn_extractor's (3: layer2..layer4 train).
  BackboneWithFPNImpl(int64_t trainable_layers, double frozen_bn_eps);
  // Levels "0".."3" and "pool".
  std::vector<torch::Tensor> forward(const torch::Tensor& x);

 private:
  torchvision_resnet::ResNet body_{nullptr};
  // fpn.inner_blocks.<i>.0 (1x1) and fpn.layer_blocks.<i>.0 (3x3).
  torch::nn::ModuleList inner_blocks_{nullptr};
  torch::nn::ModuleList layer_blocks_{nullptr};
};
TORCH_MODULE(BackboneWithFPN);

struct MaskRCNNOptions {
  int64_t num_classes = 91;
  int64_t min_size = 800;
  int64_t max_size = 1333;
  int64_t trainable_backbone_layers = 3;
  // FrozenBatchNorm2d's eps: 0 after loading COCO_V1 (overwrite_eps).
  double frozen_bn_eps = 0.0;
};

class MaskRCNNImpl : public torch::nn::Module {
 public:
  explicit MaskRCNNImpl(const MaskRCNNOptions& options);
  // Training: the loss dict (targets required). Eval: detections.
  std::pair<std::map<std::string, torch::Tensor>, std::vector<Detection>>
  forward(const std::vector<torch::Tensor>& images,
          std::vector<Target>* targets);

  GeneralizedRCNNTransform& transform() { return transform_; }

  // Sets every FrozenBatchNorm2d's running_mean/var to the statistics of
  // its input on `images` (through the transform and the body, in order):
  // a data-dependent stand-in for pretrained statistics, so that a randomly
  // initialised body keeps its activations in range as a trained one does.
  void CalibrateFrozenBatchNorm(const std::vector<torch::Tensor>& images);

 private:
  GeneralizedRCNNTransform transform_;
  BackboneWithFPN backbone_{nullptr};
  RegionProposalNetwork rpn_{nullptr};
  RoIHeads roi_heads_{nullptr};
};
TORCH_MODULE(MaskRCNN);

// paste_masks_in_image(masks [N, 1, M, M], boxes [N, 4], (h, w), padding 1).
torch::Tensor PasteMasksInImage(const torch::Tensor& masks,
                                const torch::Tensor& boxes, int64_t im_h,
                                int64_t im_w);

}  // namespace torchbench::torchvision_detection

#endif  // TORCHBENCH_MODELS_COMMON_TORCHVISION_DETECTION_MASK_RCNN_H_
