// detectron2's GeneralizedRCNN (modeling/meta_arch/rcnn.py,
// postprocessing.py at c470ca3) as its yaml R-CNN configs build it, the
// inputs detectron2's DatasetMapper gives it, and TorchBench's optimizer for
// it (detectron2.solver.build_optimizer).
#ifndef TORCHBENCH_MODELS_COMMON_DETECTRON2_GENERALIZED_RCNN_H_
#define TORCHBENCH_MODELS_COMMON_DETECTRON2_GENERALIZED_RCNN_H_

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/detectron2/backbone.h"
#include "common/detectron2/box_ops.h"
#include "common/detectron2/image_list.h"
#include "common/detectron2/roi_heads.h"
#include "common/detectron2/rpn.h"
#include "torchbench/model.h"
#include "torchbench/optim.h"

namespace torchbench::detectron2 {

// The three R-CNN backbone layouts of detectron2's COCO-Detection configs.
enum class RcnnArch {
  kFPN,  // Base-RCNN-FPN: ResNet + FPN p2..p6, StandardROIHeads on p2..p5
  kC4,   // Base-RCNN-C4: ResNet to res4, Res5ROIHeads (res5 on 14x14 ROIs)
  kDC5,  // Base-RCNN-DilatedC5: ResNet to res5 (dilation 2), StandardROIHeads
};

struct RcnnConfig {
  RcnnArch arch = RcnnArch::kFPN;
  int64_t depth = 50;  // MODEL.RESNETS.DEPTH
};

// The options a config's yaml chain gives each part.
ResNetOptions MakeResNetOptions(const RcnnConfig& config);
RpnOptions MakeRpnOptions(const RcnnConfig& config,
                          const std::map<std::string, ShapeSpec>& shapes);
RoiHeadsOptions MakeRoiHeadsOptions(
    const RcnnConfig& config, const std::map<std::string, ShapeSpec>& shapes);

// One image as detectron2's DatasetMapper gives it to the model (the
// batched_inputs dict): image float [3, H, W] BGR 0..255 (TorchBench's
// prefetch converts it to float), the original size (height, width) the
// outputs are scaled back to, and in training the gt instances.
struct RcnnInput {
  torch::Tensor image;
  int64_t height = 0;
  int64_t width = 0;
  ImageTargets targets;
};

// coco_synthetic image `index` through the mapper: BGR, ResizeShortestEdge
// to (short_edge, max_size), annotations transformed as
// transform_instance_annotations does (boxes and polygons scaled, boxes
// clipped to the image); image in `options`' device and dtype.
RcnnInput MakeCocoSyntheticInput(int index, int64_t short_edge,
                                 int64_t max_size,
                                 const torch::TensorOptions& options);

// meta_arch.GeneralizedRCNN: children backbone, proposal_generator,
// roi_heads; buffers pixel_mean, pixel_std.
class GeneralizedRCNNImpl : public torch::nn::Module {
 public:
  GeneralizedRCNNImpl(const RcnnConfig& config,
                      std::shared_ptr<MaskHead> mask_head = nullptr,
                      RoiHeadsOptions* roi_options_override = nullptr);

  // forward() in training: the loss dict (detector losses, then proposal
  // losses, as the reference's dict is ordered).
  LossDict Losses(const std::vector<RcnnInput>& inputs);
  // forward() in inference: per image the detections after
  // detector_postprocess (boxes in the original image size).
  std::vector<Instances> Inference(const std::vector<RcnnInput>& inputs);

  // The pieces, for golden checks.
  ImageList Preprocess(const std::vector<RcnnInput>& inputs) const;
  BackboneImpl& backbone() { return *backbone_; }
  RPNImpl& proposal_generator() { return *proposal_generator_; }
  ROIHeadsImpl& roi_heads() { return *roi_heads_; }
  std::shared_ptr<MaskHead> mask_head() const { return mask_head_; }

 private:
  std::shared_ptr<BackboneImpl> backbone_;
  RPN proposal_generator_{nullptr};
  ROIHeads roi_heads_{nullptr};
  std::shared_ptr<MaskHead> mask_head_;
  torch::Tensor pixel_mean_, pixel_std_;
};
TORCH_MODULE(GeneralizedRCNN);

// postprocessing.detector_postprocess: boxes scaled to (height, width),
// clipped, empty ones dropped, masks pasted (with `mask_head`).
Instances DetectorPostprocess(const Instances& results, int64_t height,
                              int64_t width, MaskHead* mask_head,
                              double mask_threshold = 0.5);

// solver.build_optimizer for the yaml configs with TorchBench's BASE_LR
// 0.001: SGD, momentum 0.9, weight decay 1e-4 (WEIGHT_DECAY_NORM 0 only
// concerns norm layers with parameters; FrozenBN has none, so every
// trainable parameter is in one group), over the parameters that require
// grad.
std::unique_ptr<optim::Optimizer> BuildOptimizer(torch::nn::Module& model,
                                                 OptimizerPath path);

// The stand-in for the model zoo's COCO-trained weights TorchBench loads
// (not available here). detectron2's own initialisation leaves every FrozenBN
// the identity, so the 16 or 33 residual blocks, each roughly
// doubling the activations' variance, make features in the tens of
// thousands and the first Train steps at 800x1067 diverge
// (find_top_rpn_proposals raises "Training has diverged"). Scaling each
// bottleneck's last FrozenBN (conv3.norm.weight) by `residual_scale` keeps
// the features near the stem's scale, as trained statistics do, and costs
// nothing.
void StandInForCheckpoint(torch::nn::Module& model,
                          double residual_scale = 0.2);

// Golden runs (tools/golden/detectron2_rcnn_common.py): after the
// deterministic fill, gives back the constants it overwrote (pixel_mean,
// pixel_std, cell anchors) and scales the RPN and box predictors' weights
// (the adapter's SCALES) so the filled network proposes and detects.
void PrepareGoldenWeights(GeneralizedRCNNImpl& model, const RcnnConfig& config);

}  // namespace torchbench::detectron2

#endif  // TORCHBENCH_MODELS_COMMON_DETECTRON2_GENERALIZED_RCNN_H_
