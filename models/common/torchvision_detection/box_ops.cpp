#include "common/torchvision_detection/box_ops.h"

#include <torch/torch.h>

#include <cmath>

namespace torchbench::torchvision_detection {

using torch::indexing::None;
using torch::indexing::Slice;

torch::Tensor BoxArea(const torch::Tensor& boxes) {
  return (boxes.select(-1, 2) - boxes.select(-1, 0)) *
         (boxes.select(-1, 3) - boxes.select(-1, 1));
}

torch::Tensor BoxIou(const torch::Tensor& boxes1, const torch::Tensor& boxes2) {
  const torch::Tensor area1 = BoxArea(boxes1);
  const torch::Tensor area2 = BoxArea(boxes2);
  const torch::Tensor lt =
      torch::max(boxes1.index({Slice(), None, Slice(None, 2)}),
                 boxes2.index({None, Slice(), Slice(None, 2)}));
  const torch::Tensor rb =
      torch::min(boxes1.index({Slice(), None, Slice(2, None)}),
                 boxes2.index({None, Slice(), Slice(2, None)}));
  const torch::Tensor wh = (rb - lt).clamp_min(0);
  const torch::Tensor inter = wh.select(-1, 0) * wh.select(-1, 1);
  const torch::Tensor union_area =
      area1.index({Slice(), None}) + area2.index({None, Slice()}) - inter;
  return inter / union_area;
}

torch::Tensor ClipBoxesToImage(const torch::Tensor& boxes, int64_t height,
                               int64_t width) {
  const int64_t dim = boxes.dim();
  const torch::Tensor x =
      boxes.index({"...", Slice(0, None, 2)}).clamp(0, width);
  const torch::Tensor y =
      boxes.index({"...", Slice(1, None, 2)}).clamp(0, height);
  return torch::stack({x, y}, dim).reshape(boxes.sizes());
}

torch::Tensor RemoveSmallBoxes(const torch::Tensor& boxes, double min_size) {
  const torch::Tensor ws = boxes.select(-1, 2) - boxes.select(-1, 0);
  const torch::Tensor hs = boxes.select(-1, 3) - boxes.select(-1, 1);
  return torch::where((ws >= min_size) & (hs >= min_size))[0];
}

BoxCoder::BoxCoder(std::array<double, 4> weights)
    : weights_(weights), bbox_xform_clip_(std::log(1000.0 / 16)) {}

std::vector<torch::Tensor> BoxCoder::Encode(
    const std::vector<torch::Tensor>& reference_boxes,
    const std::vector<torch::Tensor>& proposals) const {
  std::vector<int64_t> per_image;
  for (const auto& b : reference_boxes) per_image.push_back(b.size(0));
  const torch::Tensor targets =
      EncodeSingle(torch::cat(reference_boxes), torch::cat(proposals));
  return targets.split_with_sizes(per_image, 0);
}

torch::Tensor BoxCoder::EncodeSingle(const torch::Tensor& reference_boxes,
                                     const torch::Tensor& proposals) const {
  // encode_boxes() multiplies by 0-d tensors of the boxes' dtype.
  const auto weight = [&](int i) {
    return torch::scalar_tensor(weights_[i], reference_boxes.options());
  };
  const auto column = [](const torch::Tensor& t, int64_t i) {
    return t.select(1, i).unsqueeze(1);
  };
  const torch::Tensor ex_widths = column(proposals, 2) - column(proposals, 0);
  const torch::Tensor ex_heights = column(proposals, 3) - column(proposals, 1);
  const torch::Tensor ex_ctr_x = column(proposals, 0) + 0.5 * ex_widths;
  const torch::Tensor ex_ctr_y = column(proposals, 1) + 0.5 * ex_heights;
  const torch::Tensor gt_widths =
      column(reference_boxes, 2) - column(reference_boxes, 0);
  const torch::Tensor gt_heights =
      column(reference_boxes, 3) - column(reference_boxes, 1);
  const torch::Tensor gt_ctr_x = column(reference_boxes, 0) + 0.5 * gt_widths;
  const torch::Tensor gt_ctr_y = column(reference_boxes, 1) + 0.5 * gt_heights;
  const torch::Tensor dx = weight(0) * (gt_ctr_x - ex_ctr_x) / ex_widths;
  const torch::Tensor dy = weight(1) * (gt_ctr_y - ex_ctr_y) / ex_heights;
  const torch::Tensor dw = weight(2) * torch::log(gt_widths / ex_widths);
  const torch::Tensor dh = weight(3) * torch::log(gt_heights / ex_heights);
  return torch::cat({dx, dy, dw, dh}, 1);
}

torch::Tensor BoxCoder::Decode(const torch::Tensor& rel_codes,
                               const std::vector<torch::Tensor>& boxes) const {
  int64_t box_sum = 0;
  for (const auto& b : boxes) box_sum += b.size(0);
  torch::Tensor codes = rel_codes;
  if (box_sum > 0) codes = codes.reshape({box_sum, -1});
  torch::Tensor pred = DecodeSingle(codes, torch::cat(boxes));
  if (box_sum > 0) pred = pred.reshape({box_sum, -1, 4});
  return pred;
}

torch::Tensor BoxCoder::DecodeSingle(const torch::Tensor& rel_codes,
                                     const torch::Tensor& boxes_in) const {
  const torch::Tensor boxes = boxes_in.to(rel_codes.dtype());
  const torch::Tensor widths = boxes.select(1, 2) - boxes.select(1, 0);
  const torch::Tensor heights = boxes.select(1, 3) - boxes.select(1, 1);
  const torch::Tensor ctr_x = boxes.select(1, 0) + 0.5 * widths;
  const torch::Tensor ctr_y = boxes.select(1, 1) + 0.5 * heights;
  const torch::Tensor dx =
      rel_codes.index({Slice(), Slice(0, None, 4)}) / weights_[0];
  const torch::Tensor dy =
      rel_codes.index({Slice(), Slice(1, None, 4)}) / weights_[1];
  const torch::Tensor dw = torch::clamp_max(
      rel_codes.index({Slice(), Slice(2, None, 4)}) / weights_[2],
      bbox_xform_clip_);
  const torch::Tensor dh = torch::clamp_max(
      rel_codes.index({Slice(), Slice(3, None, 4)}) / weights_[3],
      bbox_xform_clip_);
  const torch::Tensor pred_ctr_x =
      dx * widths.unsqueeze(1) + ctr_x.unsqueeze(1);
  const torch::Tensor pred_ctr_y =
      dy * heights.unsqueeze(1) + ctr_y.unsqueeze(1);
  const torch::Tensor pred_w = torch::exp(dw) * widths.unsqueeze(1);
  const torch::Tensor pred_h = torch::exp(dh) * heights.unsqueeze(1);
  const torch::Tensor half = torch::scalar_tensor(0.5, pred_h.options());
  const torch::Tensor c_to_c_h = half * pred_h;
  const torch::Tensor c_to_c_w = half * pred_w;
  return torch::stack({pred_ctr_x - c_to_c_w, pred_ctr_y - c_to_c_h,
                       pred_ctr_x + c_to_c_w, pred_ctr_y + c_to_c_h},
                      2)
      .flatten(1);
}

Matcher::Matcher(double high_threshold, double low_threshold,
                 bool allow_low_quality_matches)
    : high_threshold_(high_threshold),
      low_threshold_(low_threshold),
      allow_low_quality_matches_(allow_low_quality_matches) {}

torch::Tensor Matcher::operator()(
    const torch::Tensor& match_quality_matrix) const {
  TORCH_CHECK(match_quality_matrix.numel() > 0,
              match_quality_matrix.size(0) == 0
                  ? "No ground-truth boxes available for one of the images "
                    "during training"
                  : "No proposal boxes available for one of the images "
                    "during training");
  auto [matched_vals, matches] = match_quality_matrix.max(0);
  torch::Tensor all_matches;
  if (allow_low_quality_matches_) all_matches = matches.clone();
  const torch::Tensor below = matched_vals < low_threshold_;
  const torch::Tensor between =
      (matched_vals >= low_threshold_) & (matched_vals < high_threshold_);
  matches.masked_fill_(below, kBelowLowThreshold);
  matches.masked_fill_(between, kBetweenThresholds);
  if (allow_low_quality_matches_) {
    // Each ground truth's best predictions (ties included) keep their match.
    const torch::Tensor highest = std::get<0>(match_quality_matrix.max(1));
    const torch::Tensor pred_inds =
        torch::where(match_quality_matrix == highest.unsqueeze(1))[1];
    matches.index_put_({pred_inds}, all_matches.index({pred_inds}));
  }
  return matches;
}

BalancedPositiveNegativeSampler::BalancedPositiveNegativeSampler(
    int64_t batch_size_per_image, double positive_fraction)
    : batch_size_per_image_(batch_size_per_image),
      positive_fraction_(positive_fraction) {}

std::pair<std::vector<torch::Tensor>, std::vector<torch::Tensor>>
BalancedPositiveNegativeSampler::operator()(
    const std::vector<torch::Tensor>& matched_idxs) const {
  std::vector<torch::Tensor> pos_idx;
  std::vector<torch::Tensor> neg_idx;
  for (const torch::Tensor& m : matched_idxs) {
    const torch::Tensor positive = torch::where(m >= 1)[0];
    const torch::Tensor negative = torch::where(m == 0)[0];
    const int64_t num_pos = std::min(
        positive.numel(),
        static_cast<int64_t>(batch_size_per_image_ * positive_fraction_));
    const int64_t num_neg =
        std::min(negative.numel(), batch_size_per_image_ - num_pos);
    const torch::Tensor perm1 =
        torch::randperm(positive.numel(),
                        torch::TensorOptions().device(positive.device()))
            .slice(0, 0, num_pos);
    const torch::Tensor perm2 =
        torch::randperm(negative.numel(),
                        torch::TensorOptions().device(negative.device()))
            .slice(0, 0, num_neg);
    torch::Tensor pos_mask = torch::zeros_like(m, torch::kUInt8);
    torch::Tensor neg_mask = torch::zeros_like(m, torch::kUInt8);
    pos_mask.index_put_({positive.index({perm1})}, 1);
    neg_mask.index_put_({negative.index({perm2})}, 1);
    pos_idx.push_back(pos_mask);
    neg_idx.push_back(neg_mask);
  }
  return {pos_idx, neg_idx};
}

}  // namespace torchbench::torchvision_detection
