// effdet's (rwightman/efficientdet-pytorch at 79d26d8) anchors, anchor
// labeler, detection loss and post-processing, for timm_efficientdet:
//
//   GenerateAnchors   anchors.Anchors._generate_boxes (y0, x0, y1, x1 rows;
//                     numpy float64, then float32)
//   LabelAnchors      anchors.AnchorLabeler.label_anchors with
//                     filter_valid=False, as DetectionFastCollate calls it:
//                     IouSimilarity, ArgMaxMatcher(0.5, 0.5,
//                     negatives_lower_than_unmatched,
//                     force_match_for_each_row), FasterRcnnBoxCoder (eps 1e-8,
//                     no scale factors)
//   DetectionLoss     loss.loss_fn with new_focal_loss (alpha 0.25, gamma 1.5,
//                     no label smoothing) and the Huber box loss (delta 0.1,
//                     weight 50), TorchBench's effdet.patch included
//   Detect            bench._post_process + _batch_detection +
//                     anchors.generate_detections (batched NMS at IoU 0.5,
//                     100 detections per image)
#ifndef TORCHBENCH_MODELS_VISION_EFFDET_ANCHORS_H_
#define TORCHBENCH_MODELS_VISION_EFFDET_ANCHORS_H_

#include <torch/nn/functional/loss.h>
#include <torch/types.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "torchbench/vision_ops.h"

namespace torchbench::effdet {

inline constexpr int64_t kMinLevel = 3;
inline constexpr int64_t kNumLevels = 5;
inline constexpr int64_t kAnchorsPerLocation = 9;  // 3 scales x 3 ratios

// anchors.get_feat_sizes for levels kMinLevel..kMinLevel + 4: (H, W).
inline std::vector<std::pair<int64_t, int64_t>> FeatSizes(int64_t height,
                                                          int64_t width) {
  std::vector<std::pair<int64_t, int64_t>> sizes;
  int64_t h = height;
  int64_t w = width;
  for (int64_t level = 1; level <= kMinLevel + kNumLevels - 1; ++level) {
    h = (h - 1) / 2 + 1;
    w = (w - 1) / 2 + 1;
    if (level >= kMinLevel) sizes.emplace_back(h, w);
  }
  return sizes;
}

// (num_anchors, 4) float32 anchors, level by level, each level's rows by
// (y, x, octave scale, aspect ratio) as numpy's meshgrid/reshape orders
// them. anchor_scale 4, octave scales 2^(0, 1/3, 2/3), aspect ratios
// (1, 1), (1.4, 0.7), (0.7, 1.4).
inline torch::Tensor GenerateAnchors(int64_t height, int64_t width) {
  const double aspects[3][2] = {{1.0, 1.0}, {1.4, 0.7}, {0.7, 1.4}};
  const auto sizes = FeatSizes(height, width);
  const auto f64 = torch::TensorOptions().dtype(torch::kDouble);
  std::vector<torch::Tensor> levels;
  for (const auto& [fh, fw] : sizes) {
    const double stride_y =
        static_cast<double>(height) / static_cast<double>(fh);
    const double stride_x =
        static_cast<double>(width) / static_cast<double>(fw);
    // np.arange(stride / 2, size, stride): start + i * step.
    torch::Tensor ys = torch::arange(fh, f64) * stride_y + stride_y / 2;
    torch::Tensor xs = torch::arange(fw, f64) * stride_x + stride_x / 2;
    torch::Tensor yv = ys.view({fh, 1}).expand({fh, fw}).reshape({-1});
    torch::Tensor xv = xs.view({1, fw}).expand({fh, fw}).reshape({-1});
    std::vector<torch::Tensor> per_anchor;
    for (int octave = 0; octave < 3; ++octave) {
      const double octave_scale = std::pow(2.0, octave / 3.0);
      for (const auto& aspect : aspects) {
        const double size_x = 4.0 * stride_x * octave_scale;
        const double size_y = 4.0 * stride_y * octave_scale;
        const double half_x = size_x * aspect[0] / 2.0;
        const double half_y = size_y * aspect[1] / 2.0;
        per_anchor.push_back(torch::stack(
            {yv - half_y, xv - half_x, yv + half_y, xv + half_x}, 1));
      }
    }
    levels.push_back(torch::stack(per_anchor, 1).reshape({-1, 4}));
  }
  return torch::cat(levels).to(torch::kFloat);
}

// One image's anchor targets: per level (H, W, 9) class targets (label - 1,
// -1 for background/ignored) as int64 and (H, W, 36) box targets, plus the
// number of matched anchors. `boxes` (M, 4) y0, x0, y1, x1 and `classes` (M)
// 1-based labels, both floating, on the anchors' device and dtype.
struct AnchorTargets {
  std::vector<torch::Tensor> cls;
  std::vector<torch::Tensor> box;
  torch::Tensor num_positives;
};

inline AnchorTargets LabelAnchors(const torch::Tensor& anchors,
                                  const torch::Tensor& boxes,
                                  const torch::Tensor& classes, int64_t height,
                                  int64_t width) {
  using torch::indexing::Slice;
  // region_similarity_calculator.iou(gt, anchors): (M, N).
  auto area = [](const torch::Tensor& b) {
    auto c = b.chunk(4, 1);
    return (c[2] - c[0]).squeeze(1) * (c[3] - c[1]).squeeze(1);
  };
  auto g = boxes.chunk(4, 1);
  auto a = anchors.chunk(4, 1);
  torch::Tensor ih =
      torch::clamp(torch::min(g[2], a[2].t()) - torch::max(g[0], a[0].t()), 0);
  torch::Tensor iw =
      torch::clamp(torch::min(g[3], a[3].t()) - torch::max(g[1], a[1].t()), 0);
  torch::Tensor inter = ih * iw;
  torch::Tensor unions =
      area(boxes).unsqueeze(1) + area(anchors).unsqueeze(0) - inter;
  torch::Tensor sim =
      torch::where(inter == 0.0, torch::zeros_like(inter), inter / unions);

  // ArgMaxMatcher._match_when_rows_are_non_empty (or all -1 without rows).
  torch::Tensor matches;
  if (boxes.size(0) == 0) {
    matches = -torch::ones(
        {anchors.size(0)},
        torch::TensorOptions().dtype(torch::kLong).device(anchors.device()));
  } else {
    auto [matched_vals, argmax] = torch::max(sim, 0);
    matches = argmax;
    // matched 0.5 == unmatched 0.5: the "between" band is empty.
    torch::Tensor below = (0.5 > matched_vals).to(matches.scalar_type());
    matches = matches * (1 - below) + -1 * below;
    torch::Tensor between = ((matched_vals >= 0.5) & (0.5 > matched_vals))
                                .to(matches.scalar_type());
    matches = matches * (1 - between) + -2 * between;
    torch::Tensor force_ids = torch::argmax(sim, 1);
    torch::Tensor onehot =
        torch::zeros(
            {sim.size(0), sim.size(1)},
            torch::TensorOptions().dtype(torch::kBool).device(sim.device()))
            .scatter_(1, force_ids.unsqueeze(1), 1);
    auto [force_mask, force_rows] = torch::max(onehot, 0);
    matches = torch::where(force_mask, force_rows, matches);
  }

  // Match.gather_based_on_match: rows 0 (ignored) and 1 (unmatched), then
  // the ground truth, indexed by clamp(match + 2, 0).
  torch::Tensor gather = torch::clamp(matches + 2, 0);
  torch::Tensor zero_box = torch::zeros({1, 4}, boxes.options());
  torch::Tensor matched_boxes =
      torch::cat({zero_box, zero_box, boxes}).index_select(0, gather);
  // FasterRcnnBoxCoder.encode(matched, anchors).
  auto center = [](const torch::Tensor& b) {
    auto c = b.t().unbind();
    torch::Tensor w = c[3] - c[1];
    torch::Tensor h = c[2] - c[0];
    return std::vector<torch::Tensor>{c[0] + h / 2., c[1] + w / 2., h, w};
  };
  constexpr double kEps = 1e-8;
  auto ca = center(anchors);
  auto cb = center(matched_boxes);
  torch::Tensor ha = ca[2] + kEps;
  torch::Tensor wa = ca[3] + kEps;
  torch::Tensor h = cb[2] + kEps;
  torch::Tensor w = cb[3] + kEps;
  torch::Tensor tx = (cb[1] - ca[1]) / wa;
  torch::Tensor ty = (cb[0] - ca[0]) / ha;
  torch::Tensor tw = torch::log(w / wa);
  torch::Tensor th = torch::log(h / ha);
  torch::Tensor encoded = torch::stack({ty, tx, th, tw}).t();
  torch::Tensor box_targets = torch::where(
      (matches >= 0).unsqueeze(1), encoded,
      torch::zeros({1, 4}, encoded.options()).repeat({matches.size(0), 1}));
  torch::Tensor cls_targets =
      torch::cat({torch::zeros({2}, classes.options()), classes})
          .index_select(0, gather);
  cls_targets = (cls_targets - 1).to(torch::kLong);

  AnchorTargets out;
  int64_t count = 0;
  for (const auto& [fh, fw] : FeatSizes(height, width)) {
    const int64_t steps = fh * fw * kAnchorsPerLocation;
    out.cls.push_back(
        cls_targets.index({Slice(count, count + steps)}).reshape({fh, fw, -1}));
    out.box.push_back(
        box_targets.index({Slice(count, count + steps)}).reshape({fh, fw, -1}));
    count += steps;
  }
  out.num_positives = (matches > -1).to(torch::kFloat).sum();
  return out;
}

// loss.loss_fn for one batch. `cls_targets` are TorchBench's prefetched
// float32 copies of the labels (its prefetch() casts every target tensor),
// hence effdet.patch's cast of the one-hot index to int64. `loss_dtype` is
// what the reference's .float() gives (float32; float64 in the golden run).
struct DetectionLosses {
  torch::Tensor loss;
  torch::Tensor class_loss;
  torch::Tensor box_loss;
};

inline DetectionLosses DetectionLoss(
    const std::vector<torch::Tensor>& cls_outputs,
    const std::vector<torch::Tensor>& box_outputs,
    const std::vector<torch::Tensor>& cls_targets,
    const std::vector<torch::Tensor>& box_targets,
    const torch::Tensor& num_positives, int64_t num_classes,
    torch::ScalarType loss_dtype) {
  constexpr double kAlpha = 0.25;
  constexpr double kGamma = 1.5;
  constexpr double kDelta = 0.1;
  constexpr double kBoxLossWeight = 50.0;
  torch::Tensor num_positives_sum = (num_positives.sum() + 1.0).to(loss_dtype);
  std::vector<torch::Tensor> cls_losses;
  std::vector<torch::Tensor> box_losses;
  for (size_t l = 0; l < cls_outputs.size(); ++l) {
    const torch::Tensor& x = cls_targets[l];
    // one_hot (patched): scatter 1 at the label, masked where label < 0.
    torch::Tensor non_neg = (x >= 0).unsqueeze(-1);
    std::vector<int64_t> shape = x.sizes().vec();
    shape.push_back(num_classes);
    torch::Tensor onehot =
        torch::zeros(shape, x.options().dtype(torch::kFloat))
            .scatter(-1, (x.unsqueeze(-1) * non_neg).to(torch::kLong), 1) *
        non_neg;
    const int64_t bs = onehot.size(0);
    const int64_t height = onehot.size(1);
    const int64_t width = onehot.size(2);
    onehot = onehot.view({bs, height, width, -1});
    torch::Tensor logits = cls_outputs[l].permute({0, 2, 3, 1}).to(loss_dtype);
    // new_focal_loss.
    torch::Tensor pred_prob = logits.sigmoid();
    torch::Tensor targets = onehot.to(logits.scalar_type());
    torch::Tensor onem_targets = 1. - targets;
    torch::Tensor p_t = targets * pred_prob + onem_targets * (1. - pred_prob);
    torch::Tensor alpha_factor =
        targets * kAlpha + onem_targets * (1. - kAlpha);
    torch::Tensor modulating_factor = torch::pow(1. - p_t, kGamma);
    torch::Tensor ce = torch::binary_cross_entropy_with_logits(
        logits, targets, {}, {}, at::Reduction::None);
    // Python's 1 / tensor is reciprocal() * 1.
    torch::Tensor cls_loss =
        num_positives_sum.reciprocal() * alpha_factor * modulating_factor * ce;
    cls_loss = cls_loss.view({bs, height, width, -1, num_classes});
    cls_loss = cls_loss * (x != -2).unsqueeze(-1);
    cls_losses.push_back(cls_loss.sum());
    // _box_loss: huber_loss(weights=targets != 0, sum) / (num_pos * 4).
    torch::Tensor err =
        box_outputs[l].permute({0, 2, 3, 1}).to(loss_dtype) - box_targets[l];
    torch::Tensor abs_err = err.abs();
    torch::Tensor quadratic = torch::clamp(abs_err, std::nullopt, kDelta);
    torch::Tensor linear = abs_err - quadratic;
    torch::Tensor box_loss = 0.5 * quadratic.pow(2) + kDelta * linear;
    box_loss = box_loss * (box_targets[l] != 0.0);
    box_losses.push_back(box_loss.sum() / (num_positives_sum * 4.0));
  }
  DetectionLosses out;
  out.class_loss = torch::sum(torch::stack(cls_losses, -1), -1);
  out.box_loss = torch::sum(torch::stack(box_losses, -1), -1);
  out.loss = out.class_loss + kBoxLossWeight * out.box_loss;
  return out;
}

// DetBenchPredict's post-processing: top 5000 (anchor, class) logits over
// all levels, then per image decode, clip to img_size / img_scale, batched
// NMS (IoU 0.5), the best 100, rescale by img_scale, rows (x0, y0, x1, y1,
// score, class + 1), zero-padded to 100. `img_scale` (B) and `img_size`
// (B, 2) as (W, H) are the eval loader's targets. The box outputs and
// scores are cast to float32 as in the reference, whose _batch_detection is
// TorchScript (its .float() casts even in a float64 run).
inline torch::Tensor Detect(const std::vector<torch::Tensor>& cls_outputs,
                            const std::vector<torch::Tensor>& box_outputs,
                            const torch::Tensor& anchors,
                            const torch::Tensor& img_scale,
                            const torch::Tensor& img_size,
                            int64_t num_classes) {
  constexpr auto float_dtype = torch::kFloat;
  constexpr int64_t kMaxDetectionPoints = 5000;
  constexpr int64_t kMaxDetPerImage = 100;
  const int64_t batch = cls_outputs[0].size(0);
  std::vector<torch::Tensor> cls_all;
  std::vector<torch::Tensor> box_all;
  for (size_t l = 0; l < cls_outputs.size(); ++l) {
    cls_all.push_back(
        cls_outputs[l].permute({0, 2, 3, 1}).reshape({batch, -1, num_classes}));
    box_all.push_back(
        box_outputs[l].permute({0, 2, 3, 1}).reshape({batch, -1, 4}));
  }
  torch::Tensor cls = torch::cat(cls_all, 1);
  torch::Tensor box = torch::cat(box_all, 1);
  torch::Tensor topk = std::get<1>(
      torch::topk(cls.reshape({batch, -1}), kMaxDetectionPoints, 1));
  torch::Tensor indices = torch::floor_divide(topk, num_classes);
  torch::Tensor classes = topk % num_classes;
  torch::Tensor box_topk =
      torch::gather(box, 1, indices.unsqueeze(2).expand({-1, -1, 4}));
  torch::Tensor cls_topk =
      torch::gather(cls, 1, indices.unsqueeze(2).expand({-1, -1, num_classes}));
  cls_topk = torch::gather(cls_topk, 2, classes.unsqueeze(2));

  std::vector<torch::Tensor> detections;
  for (int64_t i = 0; i < batch; ++i) {
    torch::Tensor a = anchors.index_select(0, indices[i]);
    // decode_box_outputs(output_xyxy=True).
    torch::Tensor ycenter_a = (a.select(1, 0) + a.select(1, 2)) / 2;
    torch::Tensor xcenter_a = (a.select(1, 1) + a.select(1, 3)) / 2;
    torch::Tensor ha = a.select(1, 2) - a.select(1, 0);
    torch::Tensor wa = a.select(1, 3) - a.select(1, 1);
    auto rel = box_topk[i].to(float_dtype).unbind(1);
    torch::Tensor w = torch::exp(rel[3]) * wa;
    torch::Tensor h = torch::exp(rel[2]) * ha;
    torch::Tensor ycenter = rel[0] * ha + ycenter_a;
    torch::Tensor xcenter = rel[1] * wa + xcenter_a;
    torch::Tensor boxes = torch::stack({xcenter - w / 2., ycenter - h / 2.,
                                        xcenter + w / 2., ycenter + h / 2.},
                                       1);
    // clip_boxes_xyxy(boxes, img_size / img_scale).
    torch::Tensor size = img_size[i] / img_scale[i];
    boxes = torch::min(boxes.clamp_min(0), torch::cat({size, size}, 0));
    torch::Tensor scores = cls_topk[i].sigmoid().squeeze(1).to(float_dtype);
    torch::Tensor keep =
        vision_ops::BatchedNms(boxes, scores, classes[i], /*iou=*/0.5);
    keep = keep.slice(0, 0, kMaxDetPerImage);
    torch::Tensor det = torch::cat(
        {boxes.index_select(0, keep) * img_scale[i],
         scores.index_select(0, keep).unsqueeze(1),
         (classes[i].index_select(0, keep).unsqueeze(1) + 1).to(float_dtype)},
        1);
    if (det.size(0) < kMaxDetPerImage) {
      det = torch::cat({det, torch::zeros({kMaxDetPerImage - det.size(0), 6},
                                          det.options())},
                       0);
    }
    detections.push_back(det);
  }
  return torch::stack(detections, 0);
}

}  // namespace torchbench::effdet

#endif  // TORCHBENCH_MODELS_VISION_EFFDET_ANCHORS_H_
