#include "common/detectron2/rpn.h"

#include <torch/nn/functional/loss.h>
#include <torch/nn/init.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace torchbench::detectron2 {

using torch::indexing::None;
using torch::indexing::Slice;

torch::Tensor SmoothL1LossSum(const torch::Tensor& input,
                              const torch::Tensor& target, double beta) {
  if (beta < 1e-5) return torch::abs(input - target).sum();
  torch::Tensor n = torch::abs(input - target);
  return torch::where(n < beta, 0.5 * n.pow(2) / beta, n - 0.5 * beta).sum();
}

StandardRPNHeadImpl::StandardRPNHeadImpl(int64_t in_channels,
                                         int64_t num_anchors, int64_t box_dim) {
  conv_ = register_module(
      "conv",
      torch::nn::Conv2d(
          torch::nn::Conv2dOptions(in_channels, in_channels, 3).padding(1)));
  objectness_logits_ = register_module(
      "objectness_logits",
      torch::nn::Conv2d(torch::nn::Conv2dOptions(in_channels, num_anchors, 1)));
  anchor_deltas_ = register_module("anchor_deltas",
                                   torch::nn::Conv2d(torch::nn::Conv2dOptions(
                                       in_channels, num_anchors * box_dim, 1)));
  torch::NoGradGuard no_grad;
  for (auto* conv : {&conv_, &objectness_logits_, &anchor_deltas_}) {
    torch::nn::init::normal_((*conv)->weight, 0.0, 0.01);
    torch::nn::init::constant_((*conv)->bias, 0.0);
  }
}

std::pair<std::vector<torch::Tensor>, std::vector<torch::Tensor>>
StandardRPNHeadImpl::forward(const std::vector<torch::Tensor>& features) {
  std::vector<torch::Tensor> logits, deltas;
  for (const torch::Tensor& x : features) {
    torch::Tensor t = torch::relu(conv_->forward(x));
    logits.push_back(objectness_logits_->forward(t));
    deltas.push_back(anchor_deltas_->forward(t));
  }
  return {logits, deltas};
}

std::vector<Instances> FindTopRpnProposals(
    const std::vector<torch::Tensor>& proposals,
    const std::vector<torch::Tensor>& pred_objectness_logits,
    const std::vector<std::array<int64_t, 2>>& image_sizes, double nms_thresh,
    int64_t pre_nms_topk, int64_t post_nms_topk, double min_box_size,
    bool training) {
  const int64_t num_images = static_cast<int64_t>(image_sizes.size());
  const torch::Device device = proposals[0].device();
  std::vector<torch::Tensor> topk_scores, topk_proposals, level_ids;
  torch::Tensor batch_idx =
      torch::arange(num_images, torch::TensorOptions().device(device));
  for (size_t level = 0; level < proposals.size(); ++level) {
    const torch::Tensor& logits_i = pred_objectness_logits[level];
    const int64_t num_proposals_i = std::min(logits_i.size(1), pre_nms_topk);
    auto [sorted, idx] = logits_i.sort(/*dim=*/1, /*descending=*/true);
    topk_scores.push_back(sorted.narrow(1, 0, num_proposals_i));
    torch::Tensor topk_idx = idx.narrow(1, 0, num_proposals_i);
    topk_proposals.push_back(
        proposals[level].index({batch_idx.index({Slice(), None}), topk_idx}));
    level_ids.push_back(
        torch::full({num_proposals_i}, static_cast<int64_t>(level),
                    torch::TensorOptions().dtype(torch::kLong).device(device)));
  }
  torch::Tensor all_scores = torch::cat(topk_scores, 1);
  torch::Tensor all_proposals = torch::cat(topk_proposals, 1);
  torch::Tensor all_levels = torch::cat(level_ids, 0);

  std::vector<Instances> results;
  for (int64_t n = 0; n < num_images; ++n) {
    const auto [height, width] = image_sizes[n];
    torch::Tensor boxes = all_proposals[n];
    torch::Tensor scores = all_scores[n];
    torch::Tensor lvl = all_levels;
    torch::Tensor valid =
        torch::isfinite(boxes).all(1) & torch::isfinite(scores);
    if (!valid.all().item<bool>()) {
      if (training) {
        throw std::runtime_error(
            "Predicted boxes or scores contain Inf/NaN. Training has "
            "diverged.");
      }
      boxes = boxes.index({valid});
      scores = scores.index({valid});
      lvl = lvl.index({valid});
    }
    boxes = ClipBoxes(boxes, height, width);
    torch::Tensor keep = NonemptyBoxes(boxes, min_box_size);
    if (keep.sum().item<int64_t>() != boxes.size(0)) {
      boxes = boxes.index({keep});
      scores = scores.index({keep});
      lvl = lvl.index({keep});
    }
    torch::Tensor kept = BatchedNms(boxes, scores, lvl, nms_thresh)
                             .index({Slice(None, post_nms_topk)});
    Instances res;
    res.image_height = height;
    res.image_width = width;
    res.proposal_boxes = boxes.index({kept});
    res.objectness_logits = scores.index({kept});
    results.push_back(std::move(res));
  }
  return results;
}

RPNImpl::RPNImpl(const RpnOptions& options)
    : options_(options),
      anchor_matcher_(options.iou_thresholds, options.iou_labels,
                      /*allow_low_quality_matches=*/true),
      box2box_transform_(options.bbox_reg_weights) {
  anchor_generator_ =
      DefaultAnchorGenerator(options.anchor_sizes, options.aspect_ratios,
                             options.strides, options.anchor_offset);
  const std::vector<int64_t> num_anchors = anchor_generator_->num_anchors();
  TORCH_CHECK(std::all_of(num_anchors.begin(), num_anchors.end(),
                          [&](int64_t a) { return a == num_anchors[0]; }),
              "Each level must have the same number of anchors per spatial "
              "position");
  // Registered in the reference's order: rpn_head, then anchor_generator.
  rpn_head_ = register_module(
      "rpn_head", StandardRPNHead(options.in_channels, num_anchors[0]));
  register_module("anchor_generator", anchor_generator_);
}

std::pair<std::vector<torch::Tensor>, std::vector<torch::Tensor>>
RPNImpl::LabelAndSampleAnchors(
    const std::vector<torch::Tensor>& anchors_per_level,
    const std::vector<ImageTargets>& targets,
    const std::vector<std::array<int64_t, 2>>& image_sizes) {
  torch::NoGradGuard no_grad;
  torch::Tensor anchors = torch::cat(anchors_per_level, 0);
  std::vector<torch::Tensor> gt_labels, matched_gt_boxes;
  for (size_t i = 0; i < targets.size(); ++i) {
    const torch::Tensor& gt_boxes_i = targets[i].gt_boxes;
    torch::Tensor match_quality_matrix = PairwiseIou(gt_boxes_i, anchors);
    auto [matched_idxs, gt_labels_i] = anchor_matcher_(match_quality_matrix);
    gt_labels_i = gt_labels_i.to(gt_boxes_i.device());
    if (options_.boundary_thresh >= 0) {
      const double t = options_.boundary_thresh;
      const auto [h, w] = image_sizes[i];
      torch::Tensor inside =
          (anchors.select(1, 0) >= -t) & (anchors.select(1, 1) >= -t) &
          (anchors.select(1, 2) < w + t) & (anchors.select(1, 3) < h + t);
      gt_labels_i.index_put_({~inside}, -1);
    }
    auto [pos_idx, neg_idx] =
        SubsampleLabels(gt_labels_i, options_.batch_size_per_image,
                        options_.positive_fraction, /*bg_label=*/0);
    gt_labels_i.fill_(-1);
    gt_labels_i.scatter_(0, pos_idx, 1);
    gt_labels_i.scatter_(0, neg_idx, 0);
    gt_labels.push_back(gt_labels_i);
    matched_gt_boxes.push_back(gt_boxes_i.size(0) == 0
                                   ? torch::zeros_like(anchors)
                                   : gt_boxes_i.index({matched_idxs}));
  }
  return {gt_labels, matched_gt_boxes};
}

RpnOutput RPNImpl::forward(
    const std::vector<std::array<int64_t, 2>>& image_sizes,
    const FeatureMap& features, const std::vector<ImageTargets>* targets) {
  std::vector<torch::Tensor> level_features;
  for (const std::string& name : options_.in_features) {
    level_features.push_back(features.at(name));
  }
  // Boxes(...) holds float32 whatever the buffers' dtype.
  std::vector<torch::Tensor> anchors =
      anchor_generator_->forward(level_features);
  for (torch::Tensor& a : anchors) a = a.to(torch::kFloat);
  auto [raw_logits, raw_deltas] = rpn_head_->forward(level_features);
  std::vector<torch::Tensor> pred_logits, pred_deltas;
  for (const torch::Tensor& score : raw_logits) {
    pred_logits.push_back(score.permute({0, 2, 3, 1}).flatten(1));
  }
  for (const torch::Tensor& x : raw_deltas) {
    pred_deltas.push_back(x.view({x.size(0), -1, 4, x.size(-2), x.size(-1)})
                              .permute({0, 3, 4, 1, 2})
                              .flatten(1, -2));
  }

  RpnOutput out;
  if (is_training()) {
    TORCH_CHECK(targets != nullptr, "RPN training needs gt instances");
    auto [gt_labels_list, gt_boxes] =
        LabelAndSampleAnchors(anchors, *targets, image_sizes);
    const int64_t num_images = static_cast<int64_t>(gt_labels_list.size());
    torch::Tensor gt_labels = torch::stack(gt_labels_list);
    torch::Tensor pos_mask = gt_labels == 1;
    // rpn/num_pos_anchors and num_neg_anchors for the EventStorage: two host
    // reads.
    pos_mask.sum().item<int64_t>();
    (gt_labels == 0).sum().item<int64_t>();
    torch::Tensor localization_loss;
    TORCH_CHECK(options_.bbox_reg_loss_type == "smooth_l1", "RPN box loss ",
                options_.bbox_reg_loss_type,
                " is not ported (no TorchBench config uses it)");
    {
      torch::Tensor all_anchors = torch::cat(anchors, 0);
      std::vector<torch::Tensor> gt_deltas;
      for (const torch::Tensor& k : gt_boxes) {
        gt_deltas.push_back(box2box_transform_.GetDeltas(all_anchors, k));
      }
      localization_loss = SmoothL1LossSum(
          torch::cat(pred_deltas, 1).index({pos_mask}),
          torch::stack(gt_deltas).index({pos_mask}), options_.smooth_l1_beta);
    }
    torch::Tensor valid_mask = gt_labels >= 0;
    torch::Tensor objectness_loss =
        torch::nn::functional::binary_cross_entropy_with_logits(
            torch::cat(pred_logits, 1).index({valid_mask}),
            gt_labels.index({valid_mask}).to(torch::kFloat),
            torch::nn::functional::BinaryCrossEntropyWithLogitsFuncOptions()
                .reduction(torch::kSum));
    const double normalizer =
        static_cast<double>(options_.batch_size_per_image * num_images);
    out.losses.emplace_back(
        "loss_rpn_cls", objectness_loss / normalizer * options_.loss_weight);
    out.losses.emplace_back("loss_rpn_loc", localization_loss / normalizer *
                                                (options_.bbox_reg_loss_weight *
                                                 options_.loss_weight));
  }

  torch::NoGradGuard no_grad;
  // _decode_proposals.
  const int64_t n = pred_deltas[0].size(0);
  std::vector<torch::Tensor> proposals;
  for (size_t level = 0; level < anchors.size(); ++level) {
    const int64_t b = anchors[level].size(1);
    torch::Tensor deltas_i = pred_deltas[level].reshape({-1, b});
    torch::Tensor anchors_i =
        anchors[level].unsqueeze(0).expand({n, -1, -1}).reshape({-1, b});
    proposals.push_back(
        box2box_transform_.ApplyDeltas(deltas_i, anchors_i).view({n, -1, b}));
  }
  const bool training = is_training();
  out.proposals = FindTopRpnProposals(
      proposals, pred_logits, image_sizes, options_.nms_thresh,
      training ? options_.pre_nms_topk_train : options_.pre_nms_topk_test,
      training ? options_.post_nms_topk_train : options_.post_nms_topk_test,
      options_.min_box_size, training);
  return out;
}

}  // namespace torchbench::detectron2
