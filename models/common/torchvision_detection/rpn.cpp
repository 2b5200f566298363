#include "common/torchvision_detection/rpn.h"

#include <torch/torch.h>

#include <algorithm>

#include "torchbench/vision_ops.h"

namespace torchbench::torchvision_detection {

using torch::indexing::Slice;

AnchorGenerator::AnchorGenerator(std::vector<std::vector<double>> sizes,
                                 std::vector<std::vector<double>> aspect_ratios)
    : sizes_(std::move(sizes)), aspect_ratios_(std::move(aspect_ratios)) {
  for (size_t i = 0; i < sizes_.size(); ++i) {
    // generate_anchors() in float32.
    const torch::Tensor scales =
        torch::tensor(sizes_[i], torch::kDouble).to(torch::kFloat);
    const torch::Tensor ratios =
        torch::tensor(aspect_ratios_[i], torch::kDouble).to(torch::kFloat);
    const torch::Tensor h_ratios = torch::sqrt(ratios);
    const torch::Tensor w_ratios = 1 / h_ratios;
    const torch::Tensor ws =
        (w_ratios.unsqueeze(1) * scales.unsqueeze(0)).view(-1);
    const torch::Tensor hs =
        (h_ratios.unsqueeze(1) * scales.unsqueeze(0)).view(-1);
    cell_anchors_.push_back((torch::stack({-ws, -hs, ws, hs}, 1) / 2).round());
  }
}

int64_t AnchorGenerator::NumAnchorsPerLocation() const {
  return static_cast<int64_t>(sizes_[0].size() * aspect_ratios_[0].size());
}

std::vector<torch::Tensor> AnchorGenerator::operator()(
    const ImageList& images, const std::vector<torch::Tensor>& features) {
  const int64_t image_h = images.tensors.size(-2);
  const int64_t image_w = images.tensors.size(-1);
  const auto options = features[0].options();
  std::vector<torch::Tensor> per_level;
  for (size_t i = 0; i < features.size(); ++i) {
    const int64_t grid_h = features[i].size(-2);
    const int64_t grid_w = features[i].size(-1);
    const torch::Tensor base = cell_anchors_[i].to(options);
    const auto int_options =
        torch::TensorOptions().dtype(torch::kInt32).device(options.device());
    const torch::Tensor shifts_x =
        torch::arange(0, grid_w, int_options) * (image_w / grid_w);
    const torch::Tensor shifts_y =
        torch::arange(0, grid_h, int_options) * (image_h / grid_h);
    const auto grid = torch::meshgrid({shifts_y, shifts_x}, "ij");
    const torch::Tensor shift_x = grid[1].reshape(-1);
    const torch::Tensor shift_y = grid[0].reshape(-1);
    const torch::Tensor shifts =
        torch::stack({shift_x, shift_y, shift_x, shift_y}, 1);
    per_level.push_back(
        (shifts.view({-1, 1, 4}) + base.view({1, -1, 4})).reshape({-1, 4}));
  }
  const torch::Tensor all = torch::cat(per_level);
  return std::vector<torch::Tensor>(images.image_sizes.size(), all);
}

RPNHeadImpl::RPNHeadImpl(int64_t in_channels, int64_t num_anchors) {
  conv_ =
      register_module("conv", torch::nn::Sequential(ConvNormActivation(
                                  in_channels, in_channels, 3, /*relu=*/true)));
  cls_logits_ = register_module(
      "cls_logits",
      torch::nn::Conv2d(torch::nn::Conv2dOptions(in_channels, num_anchors, 1)));
  bbox_pred_ =
      register_module("bbox_pred", torch::nn::Conv2d(torch::nn::Conv2dOptions(
                                       in_channels, num_anchors * 4, 1)));
  torch::NoGradGuard no_grad;
  for (auto& p : named_parameters()) {
    if (p.key().ends_with("weight")) {
      torch::nn::init::normal_(p.value(), 0.0, 0.01);
    } else {
      torch::nn::init::zeros_(p.value());
    }
  }
}

std::pair<std::vector<torch::Tensor>, std::vector<torch::Tensor>>
RPNHeadImpl::forward(const std::vector<torch::Tensor>& features) {
  std::vector<torch::Tensor> logits;
  std::vector<torch::Tensor> bbox_reg;
  for (const torch::Tensor& feature : features) {
    const torch::Tensor t = conv_->forward(feature);
    logits.push_back(cls_logits_(t));
    bbox_reg.push_back(bbox_pred_(t));
  }
  return {logits, bbox_reg};
}

RegionProposalNetworkImpl::RegionProposalNetworkImpl(
    AnchorGenerator anchor_generator, RPNHead head, RpnOptions options)
    : anchor_generator_(std::move(anchor_generator)),
      head_(register_module("head", std::move(head))),
      options_(options),
      box_coder_({1.0, 1.0, 1.0, 1.0}),
      proposal_matcher_(options.fg_iou_thresh, options.bg_iou_thresh,
                        /*allow_low_quality_matches=*/true),
      fg_bg_sampler_(options.batch_size_per_image, options.positive_fraction) {}

namespace {

// permute_and_flatten: [N, A * C, H, W] -> [N, H * W * A, C].
torch::Tensor PermuteAndFlatten(const torch::Tensor& layer, int64_t c) {
  const int64_t n = layer.size(0);
  return layer.view({n, -1, c, layer.size(2), layer.size(3)})
      .permute({0, 3, 4, 1, 2})
      .reshape({n, -1, c});
}

}  // namespace

std::pair<std::vector<torch::Tensor>, std::vector<torch::Tensor>>
RegionProposalNetworkImpl::FilterProposals(
    const torch::Tensor& proposals, torch::Tensor objectness,
    const ImageList& images,
    const std::vector<int64_t>& num_anchors_per_level) {
  const int64_t num_images = proposals.size(0);
  const auto device = proposals.device();
  objectness = objectness.detach().reshape({num_images, -1});
  std::vector<torch::Tensor> levels_list;
  for (size_t i = 0; i < num_anchors_per_level.size(); ++i) {
    levels_list.push_back(
        torch::full({num_anchors_per_level[i]}, static_cast<int64_t>(i),
                    torch::TensorOptions().dtype(torch::kLong).device(device)));
  }
  torch::Tensor levels =
      torch::cat(levels_list).reshape({1, -1}).expand_as(objectness);
  const int64_t pre_nms_top_n = is_training() ? options_.pre_nms_top_n_train
                                              : options_.pre_nms_top_n_test;
  const int64_t post_nms_top_n = is_training() ? options_.post_nms_top_n_train
                                               : options_.post_nms_top_n_test;
  std::vector<torch::Tensor> top_n;
  int64_t offset = 0;
  for (const torch::Tensor& ob :
       objectness.split_with_sizes(num_anchors_per_level, 1)) {
    const int64_t k = std::min(pre_nms_top_n, ob.size(1));
    top_n.push_back(std::get<1>(ob.topk(k, 1)) + offset);
    offset += ob.size(1);
  }
  const torch::Tensor top_n_idx = torch::cat(top_n, 1);
  const torch::Tensor batch_idx =
      torch::arange(num_images, torch::TensorOptions().device(device))
          .unsqueeze(1);
  objectness = objectness.index({batch_idx, top_n_idx});
  levels = levels.index({batch_idx, top_n_idx});
  const torch::Tensor top_proposals = proposals.index({batch_idx, top_n_idx});
  const torch::Tensor objectness_prob = torch::sigmoid(objectness);
  std::vector<torch::Tensor> final_boxes;
  std::vector<torch::Tensor> final_scores;
  for (int64_t i = 0; i < num_images; ++i) {
    const auto [h, w] = images.image_sizes[i];
    torch::Tensor boxes = ClipBoxesToImage(top_proposals[i], h, w);
    torch::Tensor scores = objectness_prob[i];
    torch::Tensor lvl = levels[i];
    torch::Tensor keep = RemoveSmallBoxes(boxes, 1e-3);
    boxes = boxes.index({keep});
    scores = scores.index({keep});
    lvl = lvl.index({keep});
    keep = torch::where(scores >= options_.score_thresh)[0];
    boxes = boxes.index({keep});
    scores = scores.index({keep});
    lvl = lvl.index({keep});
    keep = vision_ops::BatchedNms(boxes, scores, lvl, options_.nms_thresh)
               .slice(0, 0, post_nms_top_n);
    final_boxes.push_back(boxes.index({keep}));
    final_scores.push_back(scores.index({keep}));
  }
  return {final_boxes, final_scores};
}

std::pair<std::vector<torch::Tensor>, std::map<std::string, torch::Tensor>>
RegionProposalNetworkImpl::forward(const ImageList& images,
                                   const std::vector<torch::Tensor>& features,
                                   const std::vector<Target>* targets) {
  auto [objectness_levels, deltas_levels] = head_->forward(features);
  const std::vector<torch::Tensor> anchors =
      anchor_generator_(images, features);
  const int64_t num_images = static_cast<int64_t>(anchors.size());
  std::vector<int64_t> num_anchors_per_level;
  std::vector<torch::Tensor> cls_flat;
  std::vector<torch::Tensor> reg_flat;
  for (size_t i = 0; i < objectness_levels.size(); ++i) {
    const torch::Tensor& o = objectness_levels[i];
    num_anchors_per_level.push_back(o.size(1) * o.size(2) * o.size(3));
    const int64_t a = deltas_levels[i].size(1) / 4;
    cls_flat.push_back(PermuteAndFlatten(o, o.size(1) / a));
    reg_flat.push_back(PermuteAndFlatten(deltas_levels[i], 4));
  }
  const torch::Tensor objectness = torch::cat(cls_flat, 1).flatten(0, -2);
  const torch::Tensor pred_bbox_deltas =
      torch::cat(reg_flat, 1).reshape({-1, 4});
  const torch::Tensor proposals =
      box_coder_.Decode(pred_bbox_deltas.detach(), anchors)
          .view({num_images, -1, 4});
  auto [boxes, scores] =
      FilterProposals(proposals, objectness, images, num_anchors_per_level);

  std::map<std::string, torch::Tensor> losses;
  if (!is_training()) return {boxes, losses};
  TORCH_CHECK(targets != nullptr, "targets should not be None");
  // assign_targets_to_anchors
  std::vector<torch::Tensor> labels;
  std::vector<torch::Tensor> matched_gt_boxes;
  for (int64_t i = 0; i < num_images; ++i) {
    const torch::Tensor& gt_boxes = (*targets)[i].boxes;
    const torch::Tensor& anchors_i = anchors[i];
    if (gt_boxes.numel() == 0) {
      matched_gt_boxes.push_back(torch::zeros(
          anchors_i.sizes(), anchors_i.options().dtype(torch::kFloat)));
      labels.push_back(torch::zeros({anchors_i.size(0)},
                                    anchors_i.options().dtype(torch::kFloat)));
      continue;
    }
    const torch::Tensor matched_idxs =
        proposal_matcher_(BoxIou(gt_boxes, anchors_i));
    matched_gt_boxes.push_back(gt_boxes.index({matched_idxs.clamp_min(0)}));
    torch::Tensor l = (matched_idxs >= 0).to(torch::kFloat);
    l.masked_fill_(matched_idxs == Matcher::kBelowLowThreshold, 0.0);
    l.masked_fill_(matched_idxs == Matcher::kBetweenThresholds, -1.0);
    labels.push_back(l);
  }
  const std::vector<torch::Tensor> regression_targets =
      box_coder_.Encode(matched_gt_boxes, anchors);
  // compute_loss
  auto [pos_masks, neg_masks] = fg_bg_sampler_(labels);
  const torch::Tensor sampled_pos = torch::where(torch::cat(pos_masks))[0];
  const torch::Tensor sampled_neg = torch::where(torch::cat(neg_masks))[0];
  const torch::Tensor sampled = torch::cat({sampled_pos, sampled_neg});
  const torch::Tensor all_labels = torch::cat(labels);
  const torch::Tensor all_targets = torch::cat(regression_targets);
  losses["loss_rpn_box_reg"] =
      torch::smooth_l1_loss(pred_bbox_deltas.index({sampled_pos}),
                            all_targets.index({sampled_pos}),
                            at::Reduction::Sum, 1.0 / 9) /
      sampled.numel();
  losses["loss_objectness"] = torch::binary_cross_entropy_with_logits(
      objectness.flatten().index({sampled}), all_labels.index({sampled}));
  return {boxes, losses};
}

}  // namespace torchbench::torchvision_detection
