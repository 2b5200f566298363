// File: models/common/torchvision_detection/box_ops.h
//
// torchvision's box utilities for its two-stage detectors
// (torchvision/ops/boxes.py and torchvision/models/detection/_utils.py):
// box_area, box_iou, clip_boxes_to_image, remove_small_boxes, BoxCoder,
// Matcher and BalancedPositiveNegativeSampler, with torchvision's order of
// operations so that results match it bit for bit on the CPU.
#ifndef TORCHBENCH_MODELS_COMMON_TORCHVISION_DETECTION_BOX_OPS_H_
#define TORCHBENCH_MODELS_COMMON_TORCHVISION_DETECTION_BOX_OPS_H_

#include <torch/types.h>

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

namespace torchbench::torchvision_detection {

// (x2 - x1) * (y2 - y1) of (x1, y1, x2, y2) rows.
torch::Tensor BoxArea(const torch::Tensor& boxes);

// The [N, M] IoU matrix of two sets of (x1, y1, x2, y2) boxes.
torch::Tensor BoxIou(const torch::Tensor& boxes1, const torch::Tensor& boxes2);

// Clamps x to [0, width] and y to [0, height].
torch::Tensor ClipBoxesToImage(const torch::Tensor& boxes, int64_t height,
                               int64_t width);

// Indices of the boxes whose sides are both >= min_size.
torch::Tensor RemoveSmallBoxes(const torch::Tensor& boxes, double min_size);

// det_utils.BoxCoder: (dx, dy, dw, dh) codes weighted by `weights`, dw/dh
// clamped at log(1000 / 16) when decoding.
class BoxCoder {
 public:
  explicit BoxCoder(std::array<double, 4> weights);

  // Per image: the codes of reference_boxes[i] relative to proposals[i].
  std::vector<torch::Tensor> Encode(
      const std::vector<torch::Tensor>& reference_boxes,
      const std::vector<torch::Tensor>& proposals) const;
  torch::Tensor EncodeSingle(const torch::Tensor& reference_boxes,
                             const torch::Tensor& proposals) const;
  // rel_codes [sum of boxes, K * 4] against the concatenated boxes: returns
  // [sum of boxes, K, 4].
  torch::Tensor Decode(const torch::Tensor& rel_codes,
                       const std::vector<torch::Tensor>& boxes) const;
  torch::Tensor DecodeSingle(const torch::Tensor& rel_codes,
                             const torch::Tensor& boxes) const;

 private:
  std::array<double, 4> weights_;
  double bbox_xform_clip_;
};

// det_utils.Matcher: for each prediction (column) the best ground truth, or
// kBelowLowThreshold / kBetweenThresholds.
class Matcher {
 public:
  static constexpr int64_t kBelowLowThreshold = -1;
  static constexpr int64_t kBetweenThresholds = -2;

  Matcher(double high_threshold, double low_threshold,
          bool allow_low_quality_matches);
  torch::Tensor operator()(const torch::Tensor& match_quality_matrix) const;

 private:
  double high_threshold_;
  double low_threshold_;
  bool allow_low_quality_matches_;
};

// det_utils.BalancedPositiveNegativeSampler: per image, uint8 masks of the
// sampled positives (label >= 1) and negatives (label == 0), drawn with
// torch::randperm in torchvision's order (positives, then negatives, image
// by image), so that a seeded generator samples what Python samples.
class BalancedPositiveNegativeSampler {
 public:
  BalancedPositiveNegativeSampler(int64_t batch_size_per_image,
                                  double positive_fraction);
  std::pair<std::vector<torch::Tensor>, std::vector<torch::Tensor>> operator()(
      const std::vector<torch::Tensor>& matched_idxs) const;

 private:
  int64_t batch_size_per_image_;
  double positive_fraction_;
};

}  // namespace torchbench::torchvision_detection

#endif  // TORCHBENCH_MODELS_COMMON_TORCHVISION_DETECTION_BOX_OPS_H_
