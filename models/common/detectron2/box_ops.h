// detectron2's box structures and the box-level pieces of its R-CNN heads
// (detectron2 @ c470ca3: structures/boxes.py, structures/instances.py,
// modeling/box_regression.py, modeling/matcher.py, modeling/sampling.py).
//
// Boxes are plain float [N, 4] tensors (x1, y1, x2, y2), detectron2's
// Boxes.tensor. Instances keeps only the fields the R-CNN models set, as
// named tensors: an undefined tensor is a field the Instances does not have.
#ifndef TORCHBENCH_MODELS_COMMON_DETECTRON2_BOX_OPS_H_
#define TORCHBENCH_MODELS_COMMON_DETECTRON2_BOX_OPS_H_

#include <torch/types.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace torchbench::detectron2 {

// A loss dict in the reference's insertion order (the Train step sums the
// values in this order, as sum(loss_dict.values()) does).
using LossDict = std::vector<std::pair<std::string, torch::Tensor>>;

// Boxes.area(): (x2 - x1) * (y2 - y1).
torch::Tensor BoxArea(const torch::Tensor& boxes);

// structures.pairwise_iou: [N, M] IoU of boxes1 [N, 4] with boxes2 [M, 4],
// 0 where the boxes do not intersect.
torch::Tensor PairwiseIou(const torch::Tensor& boxes1,
                          const torch::Tensor& boxes2);

// Boxes.clip((height, width)): coordinates clamped to [0, width] x [0,
// height] (returns the clipped boxes; detectron2 clips in place).
torch::Tensor ClipBoxes(const torch::Tensor& boxes, int64_t height,
                        int64_t width);

// Boxes.nonempty(threshold): both sides longer than threshold.
torch::Tensor NonemptyBoxes(const torch::Tensor& boxes, double threshold = 0.0);

// Boxes.scale(scale_x, scale_y).
torch::Tensor ScaleBoxes(const torch::Tensor& boxes, double scale_x,
                         double scale_y);

// layers.batched_nms: torchvision's batched_nms on float32 boxes (and the
// scores as they are) below 40000 boxes, else detectron2's own loop of one
// nms per category.
torch::Tensor BatchedNms(const torch::Tensor& boxes,
                         const torch::Tensor& scores, const torch::Tensor& idxs,
                         double iou_threshold);

// box_regression.Box2BoxTransform: R-CNN's (dx, dy, dw, dh) deltas with
// per-coordinate weights; dw, dh clamped at scale_clamp when applied.
class Box2BoxTransform {
 public:
  explicit Box2BoxTransform(std::array<double, 4> weights,
                            double scale_clamp = std::log(1000.0 / 16));

  // Deltas [N, 4] that transform src_boxes into target_boxes.
  torch::Tensor GetDeltas(const torch::Tensor& src_boxes,
                          const torch::Tensor& target_boxes) const;

  // Applies deltas [N, k*4] to boxes [N, 4] (in float32, as detectron2 does
  // "for decoding precision"); returns [N, k*4].
  torch::Tensor ApplyDeltas(const torch::Tensor& deltas,
                            const torch::Tensor& boxes) const;

  const std::array<double, 4>& weights() const { return weights_; }

 private:
  std::array<double, 4> weights_;
  double scale_clamp_;
};

// modeling.Matcher: assigns each prediction (column of an M x N quality
// matrix) its best ground truth and a label from the threshold band its best
// quality falls in; allow_low_quality_matches also labels 1 every prediction
// that ties for some ground truth's highest quality.
class Matcher {
 public:
  // thresholds ascending (first > 0); labels in {-1, 0, 1}, one more than
  // thresholds.
  Matcher(std::vector<double> thresholds, std::vector<int64_t> labels,
          bool allow_low_quality_matches = false);

  // Returns (matches int64 [N], match_labels int8 [N]).
  std::pair<torch::Tensor, torch::Tensor> operator()(
      const torch::Tensor& match_quality_matrix) const;

 private:
  std::vector<double> thresholds_;  // with -inf and +inf added
  std::vector<int64_t> labels_;
  bool allow_low_quality_matches_;
};

// sampling.subsample_labels: up to num_samples indices of labels that are
// not -1, at most positive_fraction of them positive (label not -1 and not
// bg_label). Draws torch::randperm(num positives) then torch::randperm(num
// negatives) from the default generator, as the reference does.
std::pair<torch::Tensor, torch::Tensor> SubsampleLabels(
    const torch::Tensor& labels, int64_t num_samples, double positive_fraction,
    int64_t bg_label);

// The ground truth of one image (detectron2's gt Instances from the
// DatasetMapper): boxes in the resized image, contiguous class labels, and the
// polygons of each object (COCO segmentation, in resized-image coordinates),
// which only a mask head reads.
struct ImageTargets {
  torch::Tensor gt_boxes;                                     // float [G, 4]
  torch::Tensor gt_classes;                                   // int64 [G]
  std::vector<std::vector<std::vector<double>>> gt_polygons;  // [G][poly][xy]
  int64_t size() const { return gt_boxes.defined() ? gt_boxes.size(0) : 0; }
};

// structures.Instances for R-CNN: image_size and the per-instance fields the
// proposal generator, ROI heads and postprocessing set. All defined fields
// have the same length.
struct Instances {
  int64_t image_height = 0;
  int64_t image_width = 0;

  // Proposals (RPN output).
  torch::Tensor proposal_boxes;     // float [R, 4]
  torch::Tensor objectness_logits;  // float [R]

  // Set on sampled proposals in training (label_and_sample_proposals).
  torch::Tensor gt_classes;  // int64 [R]; num_classes = background
  torch::Tensor gt_boxes;    // float [R, 4]; the matched gt's box
  // Index of the matched gt object in the image's ImageTargets (detectron2
  // indexes every gt_* field, e.g. gt_masks, with it); undefined when the
  // image has no gt.
  torch::Tensor gt_index;  // int64 [R]

  // Predictions (box head inference, mask head inference).
  torch::Tensor pred_boxes;    // float [D, 4]
  torch::Tensor scores;        // float [D]
  torch::Tensor pred_classes;  // int64 [D]
  torch::Tensor pred_masks;    // float [D, 1, M, M], then pasted [D, H, W]

  int64_t size() const;
  // Instances[index] (index: int64 indices or a bool mask).
  Instances Index(const torch::Tensor& index) const;
  // Instances.cat: fields of `parts[0]` concatenated; same image size.
  static Instances Cat(const std::vector<Instances>& parts);
};

}  // namespace torchbench::detectron2

#endif  // TORCHBENCH_MODELS_COMMON_DETECTRON2_BOX_OPS_H_
