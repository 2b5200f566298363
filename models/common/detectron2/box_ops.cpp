#include "common/detectron2/box_ops.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "torchbench/vision_ops.h"

namespace torchbench::detectron2 {

using torch::indexing::None;
using torch::indexing::Slice;

torch::Tensor BoxArea(const torch::Tensor& boxes) {
  return (boxes.select(1, 2) - boxes.select(1, 0)) *
         (boxes.select(1, 3) - boxes.select(1, 1));
}

torch::Tensor PairwiseIou(const torch::Tensor& boxes1,
                          const torch::Tensor& boxes2) {
  torch::Tensor area1 = BoxArea(boxes1);
  torch::Tensor area2 = BoxArea(boxes2);
  torch::Tensor width_height =
      torch::min(boxes1.index({Slice(), None, Slice(2, None)}),
                 boxes2.index({Slice(), Slice(2, None)})) -
      torch::max(boxes1.index({Slice(), None, Slice(None, 2)}),
                 boxes2.index({Slice(), Slice(None, 2)}));
  width_height.clamp_(0);
  torch::Tensor inter = width_height.prod(2);
  return torch::where(inter > 0,
                      inter / (area1.index({Slice(), None}) + area2 - inter),
                      torch::zeros({1}, inter.options()));
}

torch::Tensor ClipBoxes(const torch::Tensor& boxes, int64_t height,
                        int64_t width) {
  TORCH_CHECK(torch::isfinite(boxes).all().item<bool>(),
              "Box tensor contains infinite or NaN!");
  const double w = static_cast<double>(width);
  const double h = static_cast<double>(height);
  return torch::stack(
      {boxes.select(1, 0).clamp(0, w), boxes.select(1, 1).clamp(0, h),
       boxes.select(1, 2).clamp(0, w), boxes.select(1, 3).clamp(0, h)},
      -1);
}

torch::Tensor NonemptyBoxes(const torch::Tensor& boxes, double threshold) {
  torch::Tensor widths = boxes.select(1, 2) - boxes.select(1, 0);
  torch::Tensor heights = boxes.select(1, 3) - boxes.select(1, 1);
  return (widths > threshold) & (heights > threshold);
}

torch::Tensor ScaleBoxes(const torch::Tensor& boxes, double scale_x,
                         double scale_y) {
  torch::Tensor out = boxes.clone();
  out.index({Slice(), Slice(0, None, 2)}).mul_(scale_x);
  out.index({Slice(), Slice(1, None, 2)}).mul_(scale_y);
  return out;
}

torch::Tensor BatchedNms(const torch::Tensor& boxes,
                         const torch::Tensor& scores, const torch::Tensor& idxs,
                         double iou_threshold) {
  TORCH_CHECK(boxes.size(-1) == 4);
  if (boxes.size(0) < 40000) {
    return vision_ops::BatchedNms(boxes.to(torch::kFloat), scores, idxs,
                                  iou_threshold);
  }
  torch::Tensor result_mask =
      torch::zeros(scores.sizes(), scores.options().dtype(torch::kBool));
  torch::Tensor ids = std::get<0>(torch::_unique(idxs)).cpu();
  for (int64_t k = 0; k < ids.numel(); ++k) {
    torch::Tensor mask = (idxs == ids[k].item<int64_t>()).nonzero().view(-1);
    torch::Tensor keep = vision_ops::Nms(boxes.index({mask}),
                                         scores.index({mask}), iou_threshold);
    result_mask.index_put_({mask.index({keep})}, true);
  }
  torch::Tensor keep = result_mask.nonzero().view(-1);
  return keep.index({scores.index({keep}).argsort(/*dim=*/-1,
                                                  /*descending=*/true)});
}

Box2BoxTransform::Box2BoxTransform(std::array<double, 4> weights,
                                   double scale_clamp)
    : weights_(weights), scale_clamp_(scale_clamp) {}

torch::Tensor Box2BoxTransform::GetDeltas(
    const torch::Tensor& src_boxes, const torch::Tensor& target_boxes) const {
  torch::Tensor src_widths = src_boxes.select(1, 2) - src_boxes.select(1, 0);
  torch::Tensor src_heights = src_boxes.select(1, 3) - src_boxes.select(1, 1);
  torch::Tensor src_ctr_x = src_boxes.select(1, 0) + 0.5 * src_widths;
  torch::Tensor src_ctr_y = src_boxes.select(1, 1) + 0.5 * src_heights;
  torch::Tensor target_widths =
      target_boxes.select(1, 2) - target_boxes.select(1, 0);
  torch::Tensor target_heights =
      target_boxes.select(1, 3) - target_boxes.select(1, 1);
  torch::Tensor target_ctr_x = target_boxes.select(1, 0) + 0.5 * target_widths;
  torch::Tensor target_ctr_y = target_boxes.select(1, 1) + 0.5 * target_heights;
  const auto [wx, wy, ww, wh] = weights_;
  torch::Tensor dx = wx * (target_ctr_x - src_ctr_x) / src_widths;
  torch::Tensor dy = wy * (target_ctr_y - src_ctr_y) / src_heights;
  torch::Tensor dw = ww * torch::log(target_widths / src_widths);
  torch::Tensor dh = wh * torch::log(target_heights / src_heights);
  TORCH_CHECK((src_widths > 0).all().item<bool>(),
              "Input boxes to Box2BoxTransform are not valid!");
  return torch::stack({dx, dy, dw, dh}, 1);
}

torch::Tensor Box2BoxTransform::ApplyDeltas(
    const torch::Tensor& deltas_in, const torch::Tensor& boxes_in) const {
  torch::Tensor deltas = deltas_in.to(torch::kFloat);
  torch::Tensor boxes = boxes_in.to(deltas.scalar_type());
  torch::Tensor widths = boxes.select(1, 2) - boxes.select(1, 0);
  torch::Tensor heights = boxes.select(1, 3) - boxes.select(1, 1);
  torch::Tensor ctr_x = boxes.select(1, 0) + 0.5 * widths;
  torch::Tensor ctr_y = boxes.select(1, 1) + 0.5 * heights;
  const auto [wx, wy, ww, wh] = weights_;
  torch::Tensor dx = deltas.index({Slice(), Slice(0, None, 4)}) / wx;
  torch::Tensor dy = deltas.index({Slice(), Slice(1, None, 4)}) / wy;
  torch::Tensor dw = deltas.index({Slice(), Slice(2, None, 4)}) / ww;
  torch::Tensor dh = deltas.index({Slice(), Slice(3, None, 4)}) / wh;
  dw = torch::clamp(dw, c10::nullopt, scale_clamp_);
  dh = torch::clamp(dh, c10::nullopt, scale_clamp_);
  torch::Tensor pred_ctr_x =
      dx * widths.index({Slice(), None}) + ctr_x.index({Slice(), None});
  torch::Tensor pred_ctr_y =
      dy * heights.index({Slice(), None}) + ctr_y.index({Slice(), None});
  torch::Tensor pred_w = torch::exp(dw) * widths.index({Slice(), None});
  torch::Tensor pred_h = torch::exp(dh) * heights.index({Slice(), None});
  torch::Tensor x1 = pred_ctr_x - 0.5 * pred_w;
  torch::Tensor y1 = pred_ctr_y - 0.5 * pred_h;
  torch::Tensor x2 = pred_ctr_x + 0.5 * pred_w;
  torch::Tensor y2 = pred_ctr_y + 0.5 * pred_h;
  return torch::stack({x1, y1, x2, y2}, -1).reshape(deltas.sizes());
}

Matcher::Matcher(std::vector<double> thresholds, std::vector<int64_t> labels,
                 bool allow_low_quality_matches)
    : labels_(std::move(labels)),
      allow_low_quality_matches_(allow_low_quality_matches) {
  TORCH_CHECK(!thresholds.empty() && thresholds.front() > 0);
  TORCH_CHECK(labels_.size() == thresholds.size() + 1);
  thresholds_.push_back(-std::numeric_limits<double>::infinity());
  thresholds_.insert(thresholds_.end(), thresholds.begin(), thresholds.end());
  thresholds_.push_back(std::numeric_limits<double>::infinity());
}

std::pair<torch::Tensor, torch::Tensor> Matcher::operator()(
    const torch::Tensor& match_quality_matrix) const {
  TORCH_CHECK(match_quality_matrix.dim() == 2);
  if (match_quality_matrix.numel() == 0) {
    const int64_t n = match_quality_matrix.size(1);
    return {
        torch::zeros({n}, match_quality_matrix.options().dtype(torch::kLong)),
        torch::full({n}, labels_[0],
                    match_quality_matrix.options().dtype(torch::kChar))};
  }
  auto [matched_vals, matches] = match_quality_matrix.max(0);
  torch::Tensor match_labels = torch::ones_like(matches, torch::kChar);
  for (size_t i = 0; i < labels_.size(); ++i) {
    torch::Tensor low_high =
        (matched_vals >= thresholds_[i]) & (matched_vals < thresholds_[i + 1]);
    match_labels.index_put_({low_high}, labels_[i]);
  }
  if (allow_low_quality_matches_) {
    torch::Tensor highest = std::get<0>(match_quality_matrix.max(1));
    torch::Tensor pred_inds =
        (match_quality_matrix == highest.index({Slice(), None}))
            .nonzero()
            .select(1, 1);
    match_labels.index_put_({pred_inds}, 1);
  }
  return {matches, match_labels};
}

std::pair<torch::Tensor, torch::Tensor> SubsampleLabels(
    const torch::Tensor& labels, int64_t num_samples, double positive_fraction,
    int64_t bg_label) {
  torch::Tensor positive =
      ((labels != -1) & (labels != bg_label)).nonzero().select(1, 0);
  torch::Tensor negative = (labels == bg_label).nonzero().select(1, 0);
  int64_t num_pos = static_cast<int64_t>(num_samples * positive_fraction);
  num_pos = std::min(positive.numel(), num_pos);
  int64_t num_neg = std::min(negative.numel(), num_samples - num_pos);
  auto long_options = torch::TensorOptions().dtype(torch::kLong);
  torch::Tensor perm1 =
      torch::randperm(positive.numel(), long_options.device(positive.device()))
          .index({Slice(None, num_pos)});
  torch::Tensor perm2 =
      torch::randperm(negative.numel(), long_options.device(negative.device()))
          .index({Slice(None, num_neg)});
  return {positive.index({perm1}), negative.index({perm2})};
}

namespace {

// Every per-instance field, for size, Index and Cat.
constexpr std::array<torch::Tensor Instances::*, 9> kFields = {
    &Instances::proposal_boxes, &Instances::objectness_logits,
    &Instances::gt_classes,     &Instances::gt_boxes,
    &Instances::gt_index,       &Instances::pred_boxes,
    &Instances::scores,         &Instances::pred_classes,
    &Instances::pred_masks};

}  // namespace

int64_t Instances::size() const {
  for (auto field : kFields) {
    if ((this->*field).defined()) return (this->*field).size(0);
  }
  return 0;
}

Instances Instances::Index(const torch::Tensor& index) const {
  Instances out;
  out.image_height = image_height;
  out.image_width = image_width;
  for (auto field : kFields) {
    if ((this->*field).defined()) out.*field = (this->*field).index({index});
  }
  return out;
}

Instances Instances::Cat(const std::vector<Instances>& parts) {
  TORCH_CHECK(!parts.empty(), "Instances::Cat of nothing");
  Instances out;
  out.image_height = parts[0].image_height;
  out.image_width = parts[0].image_width;
  for (auto field : kFields) {
    if (!(parts[0].*field).defined()) continue;
    std::vector<torch::Tensor> column;
    for (const Instances& part : parts) column.push_back(part.*field);
    out.*field = torch::cat(column, 0);
  }
  return out;
}

}  // namespace torchbench::detectron2
