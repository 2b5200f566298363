// File: models/common/torchvision_detection/rpn.h
//
// torchvision's region proposal network (torchvision/models/detection/
// anchor_utils.py and rpn.py): AnchorGenerator, RPNHead and
// RegionProposalNetwork, with torchvision's module names (rpn.head.*).
#ifndef TORCHBENCH_MODELS_COMMON_TORCHVISION_DETECTION_RPN_H_
#define TORCHBENCH_MODELS_COMMON_TORCHVISION_DETECTION_RPN_H_

#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/torchvision_detection/box_ops.h"
#include "common/torchvision_detection/conv_norm_activation.h"

namespace torchbench::torchvision_detection {

// A padded batch and each image's size before padding (ImageList).
struct ImageList {
  torch::Tensor tensors;                                 // [N, C, H, W]
  std::vector<std::pair<int64_t, int64_t>> image_sizes;  // (h, w)
};

// A target as the model consumes it (ConvertCocoPolysToMask's boxes,
// labels and masks).
struct Target {
  torch::Tensor boxes;   // float [N, 4] x1, y1, x2, y2
  torch::Tensor labels;  // int64 [N]
  torch::Tensor masks;   // uint8 [N, H, W]
};

// AnchorGenerator(sizes, aspect_ratios): one size per feature map.
class AnchorGenerator {
 public:
  AnchorGenerator(std::vector<std::vector<double>> sizes,
                  std::vector<std::vector<double>> aspect_ratios);
  int64_t NumAnchorsPerLocation() const;
  // The anchors of every image (all feature maps concatenated).
  std::vector<torch::Tensor> operator()(
      const ImageList& images, const std::vector<torch::Tensor>& features);

 private:
  std::vector<std::vector<double>> sizes_;
  std::vector<std::vector<double>> aspect_ratios_;
  std::vector<torch::Tensor> cell_anchors_;  // float32, as generated
};

class RPNHeadImpl : public torch::nn::Module {
 public:
  RPNHeadImpl(int64_t in_channels, int64_t num_anchors);
  // Per level: objectness logits [N, A, H, W] and deltas [N, 4A, H, W].
  std::pair<std::vector<torch::Tensor>, std::vector<torch::Tensor>> forward(
      const std::vector<torch::Tensor>& features);

 private:
  torch::nn::Sequential conv_;  // conv.0.0 (3x3) + ReLU
  torch::nn::Conv2d cls_logits_{nullptr};
  torch::nn::Conv2d bbox_pred_{nullptr};
};
TORCH_MODULE(RPNHead);

struct RpnOptions {
  double fg_iou_thresh = 0.7;
  double bg_iou_thresh = 0.3;
  int64_t batch_size_per_image = 256;
  double positive_fraction = 0.5;
  int64_t pre_nms_top_n_train = 2000;
  int64_t pre_nms_top_n_test = 1000;
  int64_t post_nms_top_n_train = 2000;
  int64_t post_nms_top_n_test = 1000;
  double nms_thresh = 0.7;
  double score_thresh = 0.0;
};

class RegionProposalNetworkImpl : public torch::nn::Module {
 public:
  RegionProposalNetworkImpl(AnchorGenerator anchor_generator, RPNHead head,
                            RpnOptions options);
  // Proposals per image; in training also loss_objectness and
  // loss_rpn_box_reg (targets must then be given).
  std::pair<std::vector<torch::Tensor>, std::map<std::string, torch::Tensor>>
  forward(const ImageList& images, const std::vector<torch::Tensor>& features,
          const std::vector<Target>* targets);

 private:
  std::pair<std::vector<torch::Tensor>, std::vector<torch::Tensor>>
  FilterProposals(const torch::Tensor& proposals, torch::Tensor objectness,
                  const ImageList& images,
                  const std::vector<int64_t>& num_anchors_per_level);

  AnchorGenerator anchor_generator_;
  RPNHead head_;
  RpnOptions options_;
  BoxCoder box_coder_;
  Matcher proposal_matcher_;
  BalancedPositiveNegativeSampler fg_bg_sampler_;
};
TORCH_MODULE(RegionProposalNetwork);

}  // namespace torchbench::torchvision_detection

#endif  // TORCHBENCH_MODELS_COMMON_TORCHVISION_DETECTION_RPN_H_
