#include "common/detectron2/roi_heads.h"

#include <torch/nn/functional/loss.h>
#include <torch/nn/init.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "common/detectron2/rpn.h"
#include "torchbench/vision_ops.h"

namespace torchbench::detectron2 {

using torch::indexing::None;
using torch::indexing::Slice;

namespace {

std::vector<double> PoolerScales(const std::vector<int64_t>& strides) {
  std::vector<double> scales;
  for (int64_t s : strides) scales.push_back(1.0 / static_cast<double>(s));
  return scales;
}

// detectron2.layers.cross_entropy: 0 (keeping the graph) for no targets.
torch::Tensor RoiCrossEntropyMean(const torch::Tensor& input,
                                  const torch::Tensor& target) {
  if (target.numel() == 0) return input.sum() * 0.0;
  return torch::nn::functional::cross_entropy(input, target);
}

std::vector<int64_t> InstanceSizes(const std::vector<Instances>& instances) {
  std::vector<int64_t> sizes;
  for (const Instances& i : instances) sizes.push_back(i.size());
  return sizes;
}

// fast_rcnn.py _log_classification_stats: the class accuracy figures
// detectron2 puts in its EventStorage, computed for their work and host
// syncs (four nonzero() counts, two boolean indexings) and dropped.
void LogClassificationStats(const torch::Tensor& pred_logits,
                            const torch::Tensor& gt_classes) {
  if (gt_classes.numel() == 0) return;
  torch::NoGradGuard no_grad;
  const torch::Tensor pred_classes = pred_logits.argmax(1);
  const int64_t bg_class_ind = pred_logits.size(1) - 1;
  const torch::Tensor fg_inds = (gt_classes >= 0) & (gt_classes < bg_class_ind);
  const int64_t num_fg = fg_inds.nonzero().numel();
  const torch::Tensor fg_gt_classes = gt_classes.index({fg_inds});
  const torch::Tensor fg_pred_classes = pred_classes.index({fg_inds});
  const int64_t num_false_negative =
      (fg_pred_classes == bg_class_ind).nonzero().numel();
  const int64_t num_accurate = (pred_classes == gt_classes).nonzero().numel();
  const int64_t fg_num_accurate =
      (fg_pred_classes == fg_gt_classes).nonzero().numel();
  (void)num_fg;
  (void)num_false_negative;
  (void)num_accurate;
  (void)fg_num_accurate;
}

}  // namespace

RoiPooler::RoiPooler(int64_t output_size, std::vector<double> scales,
                     int64_t sampling_ratio, int64_t canonical_box_size,
                     int64_t canonical_level)
    : output_size_(output_size),
      scales_(std::move(scales)),
      sampling_ratio_(sampling_ratio),
      canonical_box_size_(canonical_box_size),
      canonical_level_(canonical_level) {
  const double min_level = -std::log2(scales_.front());
  const double max_level = -std::log2(scales_.back());
  TORCH_CHECK(
      min_level == std::floor(min_level) && max_level == std::floor(max_level),
      "Featuremap stride is not power of 2!");
  min_level_ = static_cast<int64_t>(min_level);
  max_level_ = static_cast<int64_t>(max_level);
  TORCH_CHECK(
      static_cast<int64_t>(scales_.size()) == max_level_ - min_level_ + 1,
      "[ROIPooler] Sizes of input featuremaps do not form a pyramid!");
}

torch::Tensor RoiPooler::operator()(
    const std::vector<torch::Tensor>& x,
    const std::vector<torch::Tensor>& box_lists) const {
  TORCH_CHECK(x.size() == scales_.size());
  if (box_lists.empty()) {
    return torch::zeros({0, x[0].size(1), output_size_, output_size_},
                        x[0].options());
  }
  // convert_boxes_to_pooler_format.
  torch::Tensor boxes = torch::cat(box_lists, 0);
  std::vector<int64_t> sizes;
  for (const torch::Tensor& b : box_lists) sizes.push_back(b.size(0));
  torch::Tensor indices = torch::repeat_interleave(
      torch::arange(static_cast<int64_t>(box_lists.size()), boxes.options()),
      torch::tensor(
          sizes,
          torch::TensorOptions().dtype(torch::kLong).device(boxes.device())));
  torch::Tensor rois = torch::cat({indices.index({Slice(), None}), boxes}, 1);
  auto pool = [&](size_t level, const torch::Tensor& level_rois) {
    // detectron2's ROIAlign casts the rois to the features' dtype.
    return vision_ops::RoiAlign(x[level], level_rois.to(x[level].scalar_type()),
                                scales_[level], output_size_, output_size_,
                                sampling_ratio_,
                                /*aligned=*/true);
  };
  if (x.size() == 1) return pool(0, rois);

  // assign_boxes_to_levels.
  torch::Tensor box_sizes = torch::sqrt(BoxArea(boxes));
  torch::Tensor level_assignments = torch::floor(
      static_cast<double>(canonical_level_) +
      torch::log2(box_sizes / static_cast<double>(canonical_box_size_) + 1e-8));
  level_assignments =
      torch::clamp(level_assignments, static_cast<double>(min_level_),
                   static_cast<double>(max_level_))
          .to(torch::kLong) -
      min_level_;
  torch::Tensor output = torch::zeros(
      {rois.size(0), x[0].size(1), output_size_, output_size_}, x[0].options());
  for (size_t level = 0; level < x.size(); ++level) {
    torch::Tensor inds = (level_assignments == static_cast<int64_t>(level))
                             .nonzero()
                             .select(1, 0);
    output.index_put_({inds}, pool(level, rois.index({inds})));
  }
  return output;
}

FastRCNNConvFCHeadImpl::FastRCNNConvFCHeadImpl(int64_t input_size,
                                               int64_t num_fc, int64_t fc_dim) {
  int64_t in = input_size;
  for (int64_t k = 0; k < num_fc; ++k) {
    auto fc = register_module("fc" + std::to_string(k + 1),
                              torch::nn::Linear(in, fc_dim));
    // weight_init.c2_xavier_fill.
    torch::NoGradGuard no_grad;
    torch::nn::init::kaiming_uniform_(fc->weight, /*a=*/1.0);
    torch::nn::init::constant_(fc->bias, 0.0);
    fcs_.push_back(fc);
    in = fc_dim;
  }
}

torch::Tensor FastRCNNConvFCHeadImpl::forward(torch::Tensor x) {
  if (!fcs_.empty()) x = torch::flatten(x, 1);
  for (auto& fc : fcs_) x = torch::relu(fc->forward(x));
  return x;
}

FastRCNNOutputLayersImpl::FastRCNNOutputLayersImpl(
    int64_t input_size, const RoiHeadsOptions& options)
    : options_(options), box2box_transform_(options.bbox_reg_weights) {
  const int64_t num_bbox_reg_classes =
      options.cls_agnostic_bbox_reg ? 1 : options.num_classes;
  cls_score_ = register_module(
      "cls_score", torch::nn::Linear(input_size, options.num_classes + 1));
  bbox_pred_ = register_module(
      "bbox_pred", torch::nn::Linear(input_size, num_bbox_reg_classes * 4));
  torch::NoGradGuard no_grad;
  torch::nn::init::normal_(cls_score_->weight, 0.0, 0.01);
  torch::nn::init::normal_(bbox_pred_->weight, 0.0, 0.001);
  torch::nn::init::constant_(cls_score_->bias, 0.0);
  torch::nn::init::constant_(bbox_pred_->bias, 0.0);
}

std::pair<torch::Tensor, torch::Tensor> FastRCNNOutputLayersImpl::forward(
    torch::Tensor x) {
  if (x.dim() > 2) x = torch::flatten(x, 1);
  return {cls_score_->forward(x), bbox_pred_->forward(x)};
}

LossDict FastRCNNOutputLayersImpl::Losses(
    const std::pair<torch::Tensor, torch::Tensor>& predictions,
    const std::vector<Instances>& proposals) const {
  const auto& [scores, proposal_deltas] = predictions;
  std::vector<torch::Tensor> classes, boxes, gt_boxes_list;
  for (const Instances& p : proposals) {
    classes.push_back(p.gt_classes);
    boxes.push_back(p.proposal_boxes);
    gt_boxes_list.push_back(p.gt_boxes.defined() ? p.gt_boxes
                                                 : p.proposal_boxes);
  }
  torch::Tensor gt_classes = torch::cat(classes, 0);
  LogClassificationStats(scores, gt_classes);
  torch::Tensor proposal_boxes = torch::cat(boxes, 0);
  torch::Tensor gt_boxes = torch::cat(gt_boxes_list, 0);

  // box_reg_loss.
  const int64_t k = options_.num_classes;
  torch::Tensor fg_inds =
      ((gt_classes >= 0) & (gt_classes < k)).nonzero().select(1, 0);
  torch::Tensor fg_pred_deltas =
      proposal_deltas.size(1) == 4
          ? proposal_deltas.index({fg_inds})
          : proposal_deltas.view({-1, k, 4})
                .index({fg_inds, gt_classes.index({fg_inds})});
  TORCH_CHECK(options_.bbox_reg_loss_type == "smooth_l1", "ROI box loss ",
              options_.bbox_reg_loss_type,
              " is not ported (no TorchBench config uses it)");
  torch::Tensor gt_deltas = box2box_transform_.GetDeltas(
      proposal_boxes.index({fg_inds}), gt_boxes.index({fg_inds}));
  torch::Tensor loss_box_reg =
      SmoothL1LossSum(fg_pred_deltas.unsqueeze(0), gt_deltas.unsqueeze(0),
                      options_.smooth_l1_beta) /
      std::max(static_cast<double>(gt_classes.numel()), 1.0);
  return {{"loss_cls", RoiCrossEntropyMean(scores, gt_classes)},
          {"loss_box_reg", loss_box_reg * options_.bbox_reg_loss_weight}};
}

std::vector<Instances> FastRCNNOutputLayersImpl::Inference(
    const std::pair<torch::Tensor, torch::Tensor>& predictions,
    const std::vector<Instances>& proposals) const {
  const auto& [logits, proposal_deltas] = predictions;
  std::vector<torch::Tensor> boxes_list;
  for (const Instances& p : proposals) boxes_list.push_back(p.proposal_boxes);
  const std::vector<int64_t> sizes = InstanceSizes(proposals);
  std::vector<torch::Tensor> all_boxes =
      box2box_transform_.ApplyDeltas(proposal_deltas, torch::cat(boxes_list, 0))
          .split_with_sizes(sizes);
  std::vector<torch::Tensor> all_scores =
      torch::softmax(logits, -1).split_with_sizes(sizes, 0);

  std::vector<Instances> results;
  for (size_t i = 0; i < proposals.size(); ++i) {
    torch::Tensor boxes = all_boxes[i];
    torch::Tensor scores = all_scores[i];
    // fast_rcnn_inference_single_image.
    torch::Tensor valid =
        torch::isfinite(boxes).all(1) & torch::isfinite(scores).all(1);
    if (!valid.all().item<bool>()) {
      boxes = boxes.index({valid});
      scores = scores.index({valid});
    }
    scores = scores.index({Slice(), Slice(None, -1)});
    const int64_t num_bbox_reg_classes = boxes.size(1) / 4;
    boxes = ClipBoxes(boxes.reshape({-1, 4}), proposals[i].image_height,
                      proposals[i].image_width)
                .view({-1, num_bbox_reg_classes, 4});
    torch::Tensor filter_mask = scores > options_.test_score_thresh;
    torch::Tensor filter_inds = filter_mask.nonzero();
    boxes = num_bbox_reg_classes == 1
                ? boxes.index({filter_inds.select(1, 0), 0})
                : boxes.index({filter_mask});
    scores = scores.index({filter_mask});
    torch::Tensor keep = BatchedNms(boxes, scores, filter_inds.select(1, 1),
                                    options_.test_nms_thresh);
    if (options_.test_detections_per_image >= 0) {
      keep = keep.index({Slice(None, options_.test_detections_per_image)});
    }
    Instances result;
    result.image_height = proposals[i].image_height;
    result.image_width = proposals[i].image_width;
    result.pred_boxes = boxes.index({keep});
    result.scores = scores.index({keep});
    result.pred_classes = filter_inds.index({keep}).select(1, 1);
    results.push_back(std::move(result));
  }
  return results;
}

ROIHeadsImpl::ROIHeadsImpl(const RoiHeadsOptions& options,
                           torch::nn::Sequential res5,
                           std::shared_ptr<MaskHead> mask_head)
    : options_(options),
      proposal_matcher_(options.iou_thresholds, options.iou_labels,
                        /*allow_low_quality_matches=*/false),
      box_pooler_(options.pooler_resolution, PoolerScales(options.in_strides),
                  options.pooler_sampling_ratio),
      mask_head_(std::move(mask_head)) {
  int64_t predictor_input = 0;
  if (options.res5_heads) {
    TORCH_CHECK(!res5.is_empty(), "Res5ROIHeads needs its res5 stage");
    res5_ = register_module("res5", res5);
    predictor_input = options.in_channels * 2;  // res5 doubles res4's
  } else {
    const int64_t pooled = options.in_channels * options.pooler_resolution *
                           options.pooler_resolution;
    TORCH_CHECK(options.num_conv == 0, "box head convs are not ported");
    box_head_ = register_module(
        "box_head", FastRCNNConvFCHead(pooled, options.num_fc, options.fc_dim));
    predictor_input = options.num_fc > 0 ? options.fc_dim : pooled;
  }
  box_predictor_ = register_module(
      "box_predictor", FastRCNNOutputLayers(predictor_input, options));
  if (mask_head_ != nullptr) {
    if (!options.res5_heads) {
      mask_pooler_.emplace(options.mask_pooler_resolution,
                           PoolerScales(options.in_strides),
                           options.mask_pooler_sampling_ratio);
    }
    register_module("mask_head", mask_head_);
  }
}

std::vector<torch::Tensor> ROIHeadsImpl::InFeatures(
    const FeatureMap& features) const {
  std::vector<torch::Tensor> out;
  for (const std::string& f : options_.in_features)
    out.push_back(features.at(f));
  return out;
}

std::vector<Instances> ROIHeadsImpl::LabelAndSampleProposals(
    std::vector<Instances> proposals,
    const std::vector<ImageTargets>& targets) const {
  torch::NoGradGuard no_grad;
  TORCH_CHECK(proposals.size() == targets.size());
  if (options_.proposal_append_gt) {
    // add_ground_truth_to_proposals: gt boxes with logit(1 - 1e-10).
    const double gt_logit_value = std::log((1.0 - 1e-10) / (1 - (1.0 - 1e-10)));
    for (size_t i = 0; i < proposals.size(); ++i) {
      Instances gt;
      gt.image_height = proposals[i].image_height;
      gt.image_width = proposals[i].image_width;
      gt.proposal_boxes = targets[i].gt_boxes;
      // torch.ones(len(gt_boxes), device=device): float32 whatever the
      // model's dtype (the cat below promotes half logits to it).
      gt.objectness_logits =
          gt_logit_value *
          torch::ones({targets[i].size()},
                      torch::TensorOptions().device(
                          proposals[i].objectness_logits.device()));
      proposals[i] = Instances::Cat({proposals[i], gt});
    }
  }
  std::vector<Instances> out;
  for (size_t i = 0; i < proposals.size(); ++i) {
    const ImageTargets& t = targets[i];
    const bool has_gt = t.size() > 0;
    torch::Tensor match_quality_matrix =
        PairwiseIou(t.gt_boxes, proposals[i].proposal_boxes);
    auto [matched_idxs, matched_labels] =
        proposal_matcher_(match_quality_matrix);
    // _sample_proposals.
    torch::Tensor gt_classes;
    if (has_gt) {
      gt_classes = t.gt_classes.index({matched_idxs});
      gt_classes.index_put_({matched_labels == 0}, options_.num_classes);
      gt_classes.index_put_({matched_labels == -1}, -1);
    } else {
      gt_classes = torch::zeros_like(matched_idxs) + options_.num_classes;
    }
    auto [fg, bg] =
        SubsampleLabels(gt_classes, options_.batch_size_per_image,
                        options_.positive_fraction, options_.num_classes);
    torch::Tensor sampled_idxs = torch::cat({fg, bg}, 0);
    Instances sampled = proposals[i].Index(sampled_idxs);
    sampled.gt_classes = gt_classes.index({sampled_idxs});
    if (has_gt) {
      torch::Tensor sampled_targets = matched_idxs.index({sampled_idxs});
      sampled.gt_boxes = t.gt_boxes.index({sampled_targets});
      sampled.gt_index = sampled_targets;
    }
    // num_bg_samples for the EventStorage: a host read per image.
    (sampled.gt_classes == options_.num_classes).sum().item<int64_t>();
    out.push_back(std::move(sampled));
  }
  return out;
}

torch::Tensor ROIHeadsImpl::BoxFeatures(
    const FeatureMap& features, const std::vector<torch::Tensor>& boxes) {
  torch::Tensor pooled = box_pooler_(InFeatures(features), boxes);
  if (options_.res5_heads) return res5_->forward(pooled);
  return box_head_->forward(pooled);
}

std::pair<torch::Tensor, torch::Tensor> ROIHeadsImpl::Predict(
    const torch::Tensor& box_features) {
  if (options_.res5_heads) {
    return box_predictor_->forward(box_features.mean({2, 3}));
  }
  return box_predictor_->forward(box_features);
}

ROIHeadsImpl::Output ROIHeadsImpl::forward(
    const FeatureMap& features, std::vector<Instances> proposals,
    const std::vector<ImageTargets>* targets) {
  Output out;
  if (is_training()) {
    TORCH_CHECK(targets != nullptr,
                "'targets' argument is required during training");
    proposals = LabelAndSampleProposals(std::move(proposals), *targets);
  }
  std::vector<torch::Tensor> proposal_boxes;
  for (const Instances& p : proposals)
    proposal_boxes.push_back(p.proposal_boxes);
  torch::Tensor box_features = BoxFeatures(features, proposal_boxes);
  auto predictions = Predict(box_features);

  if (is_training()) {
    out.losses = box_predictor_->Losses(predictions, proposals);
    if (mask_head_ != nullptr) {
      // select_foreground_proposals.
      std::vector<Instances> fg_proposals;
      std::vector<torch::Tensor> fg_masks, fg_boxes;
      for (const Instances& p : proposals) {
        torch::Tensor mask =
            (p.gt_classes != -1) & (p.gt_classes != options_.num_classes);
        fg_proposals.push_back(p.Index(mask.nonzero().squeeze(1)));
        fg_masks.push_back(mask);
        fg_boxes.push_back(fg_proposals.back().proposal_boxes);
      }
      torch::Tensor mask_features =
          options_.res5_heads ? box_features.index({torch::cat(fg_masks, 0)})
                              : (*mask_pooler_)(InFeatures(features), fg_boxes);
      out.losses.emplace_back(
          "loss_mask",
          mask_head_->Losses(mask_features, fg_proposals, *targets));
    }
    return out;
  }

  out.instances = box_predictor_->Inference(predictions, proposals);
  if (mask_head_ != nullptr) {
    // forward_with_given_boxes.
    std::vector<torch::Tensor> pred_boxes;
    for (const Instances& i : out.instances) pred_boxes.push_back(i.pred_boxes);
    torch::Tensor mask_features =
        options_.res5_heads ? BoxFeatures(features, pred_boxes)
                            : (*mask_pooler_)(InFeatures(features), pred_boxes);
    mask_head_->Inference(mask_features, out.instances);
  }
  return out;
}

}  // namespace torchbench::detectron2
