#include "common/torchvision_detection/roi_heads.h"

#include <torch/torch.h>

#include <cmath>

#include "torchbench/vision_ops.h"

namespace torchbench::torchvision_detection {

using torch::indexing::Slice;

MultiScaleRoIAlign::MultiScaleRoIAlign(int64_t output_size,
                                       int64_t sampling_ratio)
    : output_size_(output_size), sampling_ratio_(sampling_ratio) {}

torch::Tensor MultiScaleRoIAlign::operator()(
    const std::vector<torch::Tensor>& features,
    const std::vector<torch::Tensor>& boxes,
    const std::vector<std::pair<int64_t, int64_t>>& image_shapes) const {
  // _setup_scales: the largest image size, each level's power-of-two scale
  // (log2 rounded in float32, as torch.tensor(approx_scale) is).
  int64_t max_h = 0;
  int64_t max_w = 0;
  for (const auto& [h, w] : image_shapes) {
    max_h = std::max(h, max_h);
    max_w = std::max(w, max_w);
  }
  std::vector<double> scales;
  for (const torch::Tensor& f : features) {
    const double approx =
        static_cast<double>(f.size(-2)) / static_cast<double>(max_h);
    const float log2 = torch::scalar_tensor(approx, torch::kFloat)
                           .log2()
                           .round()
                           .item<float>();
    scales.push_back(std::pow(2.0, static_cast<double>(log2)));
  }
  const auto level_of = [](double scale) {
    return -torch::log2(torch::scalar_tensor(scale, torch::kFloat))
                .item<float>();
  };
  const int64_t k_min = static_cast<int64_t>(level_of(scales.front()));
  const int64_t k_max = static_cast<int64_t>(level_of(scales.back()));

  // _convert_to_roi_format
  const torch::Tensor concat_boxes = torch::cat(boxes);
  std::vector<torch::Tensor> ids;
  for (size_t i = 0; i < boxes.size(); ++i) {
    ids.push_back(
        torch::full_like(boxes[i].slice(1, 0, 1), static_cast<double>(i)));
  }
  const torch::Tensor rois = torch::cat({torch::cat(ids), concat_boxes}, 1);

  // LevelMapper (canonical scale 224, level 4, eps 1e-6).
  const torch::Tensor s = torch::sqrt(BoxArea(concat_boxes));
  const torch::Tensor target_lvls = torch::floor(
      4 + torch::log2(s / 224) + torch::scalar_tensor(1e-6, s.options()));
  const torch::Tensor levels =
      torch::clamp(target_lvls, k_min, k_max).to(torch::kLong) - k_min;

  const torch::Tensor& first = features.front();
  torch::Tensor result =
      torch::zeros({rois.size(0), first.size(1), output_size_, output_size_},
                   first.options());
  for (size_t level = 0; level < features.size(); ++level) {
    const torch::Tensor idx =
        torch::where(levels == static_cast<int64_t>(level))[0];
    const torch::Tensor pooled = vision_ops::RoiAlign(
        features[level], rois.index({idx}), scales[level], output_size_,
        output_size_, sampling_ratio_, /*aligned=*/false);
    result.index_put_({idx}, pooled.to(result.scalar_type()));
  }
  return result;
}

TwoMLPHeadImpl::TwoMLPHeadImpl(int64_t in_channels, int64_t representation_size)
    : fc6_(register_module(
          "fc6", torch::nn::Linear(in_channels, representation_size))),
      fc7_(register_module(
          "fc7", torch::nn::Linear(representation_size, representation_size))) {
}

torch::Tensor TwoMLPHeadImpl::forward(const torch::Tensor& x) {
  return torch::relu(fc7_(torch::relu(fc6_(x.flatten(1)))));
}

FastRCNNPredictorImpl::FastRCNNPredictorImpl(int64_t in_channels,
                                             int64_t num_classes)
    : cls_score_(register_module("cls_score",
                                 torch::nn::Linear(in_channels, num_classes))),
      bbox_pred_(register_module(
          "bbox_pred", torch::nn::Linear(in_channels, num_classes * 4))) {}

std::pair<torch::Tensor, torch::Tensor> FastRCNNPredictorImpl::forward(
    const torch::Tensor& x) {
  const torch::Tensor flat = x.flatten(1);
  return {cls_score_(flat), bbox_pred_(flat)};
}

RoIHeadsImpl::RoIHeadsImpl(int64_t in_channels, RoIHeadsOptions options)
    : options_(options),
      box_roi_pool_(/*output_size=*/7, /*sampling_ratio=*/2),
      mask_roi_pool_(/*output_size=*/14, /*sampling_ratio=*/2),
      box_coder_({10.0, 10.0, 5.0, 5.0}),
      proposal_matcher_(options.fg_iou_thresh, options.bg_iou_thresh,
                        /*allow_low_quality_matches=*/false),
      fg_bg_sampler_(options.batch_size_per_image, options.positive_fraction) {
  box_head_ =
      register_module("box_head", TwoMLPHead(in_channels * 7 * 7, 1024));
  box_predictor_ = register_module(
      "box_predictor", FastRCNNPredictor(1024, options.num_classes));
  mask_head_ = register_module("mask_head", torch::nn::Sequential());
  int64_t next = in_channels;
  for (int i = 0; i < 4; ++i) {
    mask_head_->push_back(ConvNormActivation(next, 256, 3, /*relu=*/true));
    next = 256;
  }
  mask_predictor_ = register_module(
      "mask_predictor",
      torch::nn::Sequential(
          {{"conv5_mask",
            torch::nn::ConvTranspose2d(
                torch::nn::ConvTranspose2dOptions(256, 256, 2).stride(2))},
           {"relu", torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true))},
           {"mask_fcn_logits", torch::nn::Conv2d(torch::nn::Conv2dOptions(
                                   256, options.num_classes, 1))}}));
  // MaskRCNNHeads: kaiming_normal(fan_out, relu) weights, zero biases;
  // MaskRCNNPredictor: kaiming_normal(fan_out, relu) weights.
  torch::NoGradGuard no_grad;
  for (auto& p : mask_head_->named_parameters()) {
    if (p.key().ends_with("weight")) {
      torch::nn::init::kaiming_normal_(p.value(), 0.0, torch::kFanOut,
                                       torch::kReLU);
    } else {
      torch::nn::init::zeros_(p.value());
    }
  }
  for (auto& p : mask_predictor_->named_parameters()) {
    if (p.key().ends_with("weight")) {
      torch::nn::init::kaiming_normal_(p.value(), 0.0, torch::kFanOut,
                                       torch::kReLU);
    }
  }
}

RoIHeadsImpl::Samples RoIHeadsImpl::SelectTrainingSamples(
    std::vector<torch::Tensor> proposals, const std::vector<Target>& targets) {
  const auto dtype = proposals[0].scalar_type();
  Samples out;
  std::vector<torch::Tensor> gt_boxes;
  for (size_t i = 0; i < proposals.size(); ++i) {
    gt_boxes.push_back(targets[i].boxes.to(dtype));
    // add_gt_proposals
    proposals[i] = torch::cat({proposals[i], gt_boxes[i]});
  }
  // assign_targets_to_proposals
  for (size_t i = 0; i < proposals.size(); ++i) {
    if (gt_boxes[i].numel() == 0) {
      const auto options = proposals[i].options().dtype(torch::kLong);
      out.matched_idxs.push_back(torch::zeros({proposals[i].size(0)}, options));
      out.labels.push_back(torch::zeros({proposals[i].size(0)}, options));
      continue;
    }
    const torch::Tensor matched =
        proposal_matcher_(BoxIou(gt_boxes[i], proposals[i]));
    const torch::Tensor clamped = matched.clamp_min(0);
    torch::Tensor labels = targets[i].labels.index({clamped}).to(torch::kLong);
    labels.masked_fill_(matched == Matcher::kBelowLowThreshold, 0);
    labels.masked_fill_(matched == Matcher::kBetweenThresholds, -1);
    out.matched_idxs.push_back(clamped);
    out.labels.push_back(labels);
  }
  // subsample
  auto [pos, neg] = fg_bg_sampler_(out.labels);
  std::vector<torch::Tensor> matched_gt_boxes;
  for (size_t i = 0; i < proposals.size(); ++i) {
    const torch::Tensor sampled = torch::where(pos[i].logical_or(neg[i]))[0];
    proposals[i] = proposals[i].index({sampled});
    out.labels[i] = out.labels[i].index({sampled});
    out.matched_idxs[i] = out.matched_idxs[i].index({sampled});
    torch::Tensor gt = gt_boxes[i];
    if (gt.numel() == 0) gt = torch::zeros({1, 4}, proposals[i].options());
    matched_gt_boxes.push_back(gt.index({out.matched_idxs[i]}));
  }
  out.regression_targets = box_coder_.Encode(matched_gt_boxes, proposals);
  out.proposals = std::move(proposals);
  return out;
}

std::vector<Detection> RoIHeadsImpl::PostprocessDetections(
    const torch::Tensor& class_logits, const torch::Tensor& box_regression,
    const std::vector<torch::Tensor>& proposals,
    const std::vector<std::pair<int64_t, int64_t>>& image_shapes) const {
  const int64_t num_classes = class_logits.size(-1);
  std::vector<int64_t> per_image;
  for (const auto& p : proposals) per_image.push_back(p.size(0));
  const torch::Tensor pred_boxes = box_coder_.Decode(box_regression, proposals);
  const torch::Tensor pred_scores = torch::softmax(class_logits, -1);
  const auto boxes_list = pred_boxes.split_with_sizes(per_image, 0);
  const auto scores_list = pred_scores.split_with_sizes(per_image, 0);
  std::vector<Detection> result;
  for (size_t i = 0; i < proposals.size(); ++i) {
    torch::Tensor boxes = ClipBoxesToImage(boxes_list[i], image_shapes[i].first,
                                           image_shapes[i].second);
    torch::Tensor scores = scores_list[i];
    torch::Tensor labels =
        torch::arange(num_classes,
                      torch::TensorOptions().device(class_logits.device()))
            .view({1, -1})
            .expand_as(scores);
    // Drop the background column, then one candidate per (box, class).
    boxes = boxes.slice(1, 1).reshape({-1, 4});
    scores = scores.slice(1, 1).reshape(-1);
    labels = labels.slice(1, 1).reshape(-1);
    torch::Tensor keep = torch::where(scores > options_.score_thresh)[0];
    boxes = boxes.index({keep});
    scores = scores.index({keep});
    labels = labels.index({keep});
    keep = RemoveSmallBoxes(boxes, 1e-2);
    boxes = boxes.index({keep});
    scores = scores.index({keep});
    labels = labels.index({keep});
    keep = vision_ops::BatchedNms(boxes, scores, labels, options_.nms_thresh)
               .slice(0, 0, options_.detections_per_img);
    result.push_back({boxes.index({keep}), labels.index({keep}),
                      scores.index({keep}), torch::Tensor()});
  }
  return result;
}

std::pair<std::vector<Detection>, std::map<std::string, torch::Tensor>>
RoIHeadsImpl::forward(
    const std::vector<torch::Tensor>& features,
    std::vector<torch::Tensor> proposals,
    const std::vector<std::pair<int64_t, int64_t>>& image_shapes,
    const std::vector<Target>* targets) {
  // The poolers read levels "0".."3", not "pool".
  const std::vector<torch::Tensor> pooled(features.begin(),
                                          features.begin() + 4);
  std::map<std::string, torch::Tensor> losses;
  std::vector<Detection> result;
  Samples samples;
  if (is_training()) {
    TORCH_CHECK(targets != nullptr, "targets should not be None");
    samples = SelectTrainingSamples(std::move(proposals), *targets);
    proposals = samples.proposals;
  }
  torch::Tensor box_features = box_roi_pool_(pooled, proposals, image_shapes);
  box_features = box_head_->forward(box_features);
  auto [class_logits, box_regression] = box_predictor_->forward(box_features);

  std::vector<torch::Tensor> mask_proposals;
  std::vector<torch::Tensor> pos_matched_idxs;
  if (is_training()) {
    // fastrcnn_loss
    const torch::Tensor labels = torch::cat(samples.labels);
    const torch::Tensor regression_targets =
        torch::cat(samples.regression_targets);
    losses["loss_classifier"] =
        torch::nn::functional::cross_entropy(class_logits, labels);
    const torch::Tensor pos_inds = torch::where(labels > 0)[0];
    const torch::Tensor labels_pos = labels.index({pos_inds});
    const torch::Tensor regression =
        box_regression.reshape({class_logits.size(0), -1, 4});
    losses["loss_box_reg"] =
        torch::smooth_l1_loss(regression.index({pos_inds, labels_pos}),
                              regression_targets.index({pos_inds}),
                              at::Reduction::Sum, 1.0 / 9) /
        labels.numel();
    for (size_t i = 0; i < proposals.size(); ++i) {
      const torch::Tensor pos = torch::where(samples.labels[i] > 0)[0];
      mask_proposals.push_back(proposals[i].index({pos}));
      pos_matched_idxs.push_back(samples.matched_idxs[i].index({pos}));
    }
  } else {
    result = PostprocessDetections(class_logits, box_regression, proposals,
                                   image_shapes);
    for (const Detection& d : result) mask_proposals.push_back(d.boxes);
  }

  torch::Tensor mask_features =
      mask_roi_pool_(pooled, mask_proposals, image_shapes);
  mask_features = mask_head_->forward(mask_features);
  const torch::Tensor mask_logits = mask_predictor_->forward(mask_features);
  if (is_training()) {
    // maskrcnn_loss: targets are the gt masks roi_align'ed (M x M, scale 1,
    // sampling -1, aligned false) onto each positive proposal.
    const int64_t m = mask_logits.size(-1);
    std::vector<torch::Tensor> labels;
    std::vector<torch::Tensor> mask_targets;
    for (size_t i = 0; i < proposals.size(); ++i) {
      const Target& t = (*targets)[i];
      labels.push_back(t.labels.index({pos_matched_idxs[i]}));
      const torch::Tensor rois = torch::cat(
          {pos_matched_idxs[i].to(mask_proposals[i].options()).unsqueeze(1),
           mask_proposals[i]},
          1);
      mask_targets.push_back(
          vision_ops::RoiAlign(t.masks.unsqueeze(1).to(rois.options()), rois,
                               1.0, m, m, -1, /*aligned=*/false)
              .select(1, 0));
    }
    const torch::Tensor all_labels = torch::cat(labels);
    const torch::Tensor all_targets = torch::cat(mask_targets);
    if (all_targets.numel() == 0) {
      losses["loss_mask"] = mask_logits.sum() * 0;
    } else {
      losses["loss_mask"] = torch::binary_cross_entropy_with_logits(
          mask_logits.index(
              {torch::arange(all_labels.size(0), torch::TensorOptions().device(
                                                     all_labels.device())),
               all_labels}),
          all_targets);
    }
  } else {
    // maskrcnn_inference
    const torch::Tensor mask_prob = mask_logits.sigmoid();
    std::vector<torch::Tensor> labels;
    std::vector<int64_t> per_image;
    for (const Detection& d : result) {
      labels.push_back(d.labels);
      per_image.push_back(d.labels.size(0));
    }
    const torch::Tensor all_labels = torch::cat(labels);
    const torch::Tensor index =
        torch::arange(mask_logits.size(0),
                      torch::TensorOptions().device(all_labels.device()));
    const auto probs = mask_prob.index({index, all_labels})
                           .unsqueeze(1)
                           .split_with_sizes(per_image, 0);
    for (size_t i = 0; i < result.size(); ++i) result[i].masks = probs[i];
  }
  return {result, losses};
}

}  // namespace torchbench::torchvision_detection
