// detectron2's region proposal network (detectron2 @ c470ca3:
// modeling/proposal_generator/rpn.py, proposal_utils.py): StandardRPNHead,
// RPN (anchor labelling and sampling, losses, proposal decoding) and
// find_top_rpn_proposals. Module names are the reference's
// (proposal_generator.rpn_head.*, proposal_generator.anchor_generator.*).
#ifndef TORCHBENCH_MODELS_COMMON_DETECTRON2_RPN_H_
#define TORCHBENCH_MODELS_COMMON_DETECTRON2_RPN_H_

#include <torch/nn/module.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/detectron2/anchor_generator.h"
#include "common/detectron2/backbone.h"
#include "common/detectron2/box_ops.h"

namespace torchbench::detectron2 {

// cfg.MODEL.RPN / ANCHOR_GENERATOR / PROPOSAL_GENERATOR values
// (config/defaults.py unless a yaml sets them).
struct RpnOptions {
  std::vector<std::string> in_features = {"res4"};
  // The in_features' channels and strides (from the backbone).
  int64_t in_channels = 1024;
  std::vector<int64_t> strides = {16};
  std::vector<std::vector<double>> anchor_sizes = {{32, 64, 128, 256, 512}};
  std::vector<std::vector<double>> aspect_ratios = {{0.5, 1.0, 2.0}};
  double anchor_offset = 0.0;
  std::vector<double> iou_thresholds = {0.3, 0.7};
  std::vector<int64_t> iou_labels = {0, -1, 1};
  int64_t batch_size_per_image = 256;
  double positive_fraction = 0.5;
  std::array<double, 4> bbox_reg_weights = {1.0, 1.0, 1.0, 1.0};
  std::string bbox_reg_loss_type = "smooth_l1";
  double smooth_l1_beta = 0.0;
  double loss_weight = 1.0;
  double bbox_reg_loss_weight = 1.0;
  int64_t pre_nms_topk_train = 12000;
  int64_t pre_nms_topk_test = 6000;
  int64_t post_nms_topk_train = 2000;
  int64_t post_nms_topk_test = 1000;
  double nms_thresh = 0.7;
  double min_box_size = 0.0;
  double boundary_thresh = -1.0;
};

// fvcore's smooth_l1_loss (L1 when beta < 1e-5), reduction "sum".
torch::Tensor SmoothL1LossSum(const torch::Tensor& input,
                              const torch::Tensor& target, double beta);

// StandardRPNHead with the default CONV_DIMS [-1]: a shared 3x3 conv + ReLU,
// then 1x1 objectness logits and anchor deltas per level.
class StandardRPNHeadImpl : public torch::nn::Module {
 public:
  StandardRPNHeadImpl(int64_t in_channels, int64_t num_anchors,
                      int64_t box_dim = 4);
  // (objectness logits [N, A, Hi, Wi], anchor deltas [N, A*4, Hi, Wi]) per
  // level.
  std::pair<std::vector<torch::Tensor>, std::vector<torch::Tensor>> forward(
      const std::vector<torch::Tensor>& features);

 private:
  torch::nn::Conv2d conv_{nullptr}, objectness_logits_{nullptr},
      anchor_deltas_{nullptr};
};
TORCH_MODULE(StandardRPNHead);

// proposal_utils.find_top_rpn_proposals: per image, the pre_nms_topk best
// proposals of each level, clipped, without boxes of a side <= min_box_size,
// NMS per level (batched_nms with the level as category), the first
// post_nms_topk kept.
std::vector<Instances> FindTopRpnProposals(
    const std::vector<torch::Tensor>& proposals,
    const std::vector<torch::Tensor>& pred_objectness_logits,
    const std::vector<std::array<int64_t, 2>>& image_sizes, double nms_thresh,
    int64_t pre_nms_topk, int64_t post_nms_topk, double min_box_size,
    bool training);

struct RpnOutput {
  std::vector<Instances> proposals;  // proposal_boxes, objectness_logits
  LossDict losses;                   // training: loss_rpn_cls, loss_rpn_loc
};

// rpn.RPN: children "rpn_head" and "anchor_generator".
class RPNImpl : public torch::nn::Module {
 public:
  explicit RPNImpl(const RpnOptions& options);

  // RPN.forward(images, features, gt_instances): targets are needed (and
  // losses computed) in training mode only.
  RpnOutput forward(const std::vector<std::array<int64_t, 2>>& image_sizes,
                    const FeatureMap& features,
                    const std::vector<ImageTargets>* targets);

  // label_and_sample_anchors: per image, labels (1, 0, -1 after sampling,
  // int8) and matched gt boxes for the anchors of all levels.
  std::pair<std::vector<torch::Tensor>, std::vector<torch::Tensor>>
  LabelAndSampleAnchors(const std::vector<torch::Tensor>& anchors,
                        const std::vector<ImageTargets>& targets,
                        const std::vector<std::array<int64_t, 2>>& image_sizes);

  // The configuration, changeable between calls (golden checks shrink
  // post_nms_topk_test).
  RpnOptions& options() { return options_; }

 private:
  RpnOptions options_;
  Matcher anchor_matcher_;
  Box2BoxTransform box2box_transform_;
  StandardRPNHead rpn_head_{nullptr};
  DefaultAnchorGenerator anchor_generator_{nullptr};
};
TORCH_MODULE(RPN);

}  // namespace torchbench::detectron2

#endif  // TORCHBENCH_MODELS_COMMON_DETECTRON2_RPN_H_
