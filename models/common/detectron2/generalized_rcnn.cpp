#include "common/detectron2/generalized_rcnn.h"

#include <algorithm>
#include <string>
#include <utility>

#include "common/coco_synthetic.h"

namespace torchbench::detectron2 {

namespace {

std::vector<std::string> RcnnInFeatures(const RcnnConfig& config, bool rpn) {
  switch (config.arch) {
    case RcnnArch::kFPN:
      return rpn ? std::vector<std::string>{"p2", "p3", "p4", "p5", "p6"}
                 : std::vector<std::string>{"p2", "p3", "p4", "p5"};
    case RcnnArch::kC4:
      return {"res4"};
    case RcnnArch::kDC5:
      return {"res5"};
  }
  return {};
}

}  // namespace

ResNetOptions MakeResNetOptions(const RcnnConfig& config) {
  ResNetOptions o;
  o.depth(config.depth);
  switch (config.arch) {
    case RcnnArch::kFPN:
      o.out_features({"res2", "res3", "res4", "res5"});
      break;
    case RcnnArch::kC4:
      o.out_features({"res4"});
      break;
    case RcnnArch::kDC5:
      o.out_features({"res5"});
      o.res5_dilation(2);
      break;
  }
  return o;
}

RpnOptions MakeRpnOptions(const RcnnConfig& config,
                          const std::map<std::string, ShapeSpec>& shapes) {
  RpnOptions o;
  o.in_features = RcnnInFeatures(config, /*rpn=*/true);
  o.in_channels = shapes.at(o.in_features[0]).channels;
  o.strides.clear();
  for (const std::string& f : o.in_features) {
    o.strides.push_back(shapes.at(f).stride);
  }
  if (config.arch == RcnnArch::kFPN) {
    o.anchor_sizes = {{32}, {64}, {128}, {256}, {512}};
    o.pre_nms_topk_train = 2000;
    o.pre_nms_topk_test = 1000;
    o.post_nms_topk_train = 1000;
    o.post_nms_topk_test = 1000;
  }
  return o;
}

RoiHeadsOptions MakeRoiHeadsOptions(
    const RcnnConfig& config, const std::map<std::string, ShapeSpec>& shapes) {
  RoiHeadsOptions o;
  o.in_features = RcnnInFeatures(config, /*rpn=*/false);
  o.in_channels = shapes.at(o.in_features[0]).channels;
  for (const std::string& f : o.in_features) {
    o.in_strides.push_back(shapes.at(f).stride);
  }
  if (config.arch == RcnnArch::kC4) {
    o.res5_heads = true;
    o.pooler_resolution = 14;  // defaults.py; Base-RCNN-C4 keeps it
    o.num_fc = 0;
  } else {
    o.pooler_resolution = 7;
    o.num_fc = 2;
  }
  return o;
}

RcnnInput MakeCocoSyntheticInput(int index, int64_t short_edge,
                                 int64_t max_size,
                                 const torch::TensorOptions& options) {
  namespace cs = coco_synthetic;
  const cs::ImageInfo info = cs::MakeImageInfo(index);
  const auto [new_h, new_w] =
      ResizeShortestEdgeSize(info.height, info.width, short_edge, max_size);
  RcnnInput input;
  input.height = info.height;
  input.width = info.width;
  input.image = TestImage(cs::MakeImagePixels(index), new_h, new_w).to(options);
  // ResizeTransform.apply_coords scales by new / old in float64;
  // transform_instance_annotations clips boxes to [0, image size].
  const double scale_x = static_cast<double>(new_w) / info.width;
  const double scale_y = static_cast<double>(new_h) / info.height;
  torch::Tensor boxes = cs::BoxesXyxy(info, scale_x, scale_y);
  boxes = torch::minimum(
      boxes.clamp_min(0),
      torch::tensor({static_cast<float>(new_w), static_cast<float>(new_h),
                     static_cast<float>(new_w), static_cast<float>(new_h)}));
  std::vector<int64_t> classes;
  for (const cs::Annotation& a : info.annotations) {
    classes.push_back(a.contiguous_label);
    std::vector<double> polygon = a.polygon;
    for (size_t k = 0; k < polygon.size(); ++k) {
      polygon[k] *= (k % 2 == 0) ? scale_x : scale_y;
    }
    input.targets.gt_polygons.push_back({polygon});
  }
  input.targets.gt_boxes = boxes.to(options.device());
  input.targets.gt_classes =
      torch::tensor(classes, torch::TensorOptions().dtype(torch::kLong))
          .to(options.device());
  return input;
}

GeneralizedRCNNImpl::GeneralizedRCNNImpl(const RcnnConfig& config,
                                         std::shared_ptr<MaskHead> mask_head,
                                         RoiHeadsOptions* roi_options_override)
    : mask_head_(std::move(mask_head)) {
  const ResNetOptions resnet = MakeResNetOptions(config);
  if (config.arch == RcnnArch::kFPN) {
    backbone_ = BuildResNetFPNBackbone(resnet, FPNOptions()).ptr();
  } else {
    backbone_ = ResNet(resnet).ptr();
  }
  register_module("backbone", backbone_);
  const auto shapes = backbone_->output_shape();
  proposal_generator_ = register_module("proposal_generator",
                                        RPN(MakeRpnOptions(config, shapes)));
  RoiHeadsOptions roi_options = roi_options_override != nullptr
                                    ? *roi_options_override
                                    : MakeRoiHeadsOptions(config, shapes);
  torch::nn::Sequential res5{nullptr};
  if (roi_options.res5_heads) {
    // Res5ROIHeads._build_res5_block: res5 is 8x res2.
    BottleneckOptions b;
    b.in_channels = resnet.res2_out_channels() * 4;
    b.out_channels = resnet.res2_out_channels() * 8;
    b.bottleneck_channels = resnet.num_groups() * resnet.width_per_group() * 8;
    b.stride = 2;
    b.num_groups = resnet.num_groups();
    b.norm = resnet.norm();
    b.stride_in_1x1 = resnet.stride_in_1x1();
    res5 = MakeBottleneckStage(3, b);
  }
  roi_heads_ =
      register_module("roi_heads", ROIHeads(roi_options, res5, mask_head_));
  pixel_mean_ = register_buffer(
      "pixel_mean", torch::tensor({kPixelMean[0], kPixelMean[1], kPixelMean[2]},
                                  torch::kFloat)
                        .view({-1, 1, 1}));
  pixel_std_ = register_buffer(
      "pixel_std",
      torch::tensor({kPixelStd[0], kPixelStd[1], kPixelStd[2]}, torch::kFloat)
          .view({-1, 1, 1}));
}

ImageList GeneralizedRCNNImpl::Preprocess(
    const std::vector<RcnnInput>& inputs) const {
  std::vector<torch::Tensor> images;
  for (const RcnnInput& in : inputs) images.push_back(in.image);
  return PreprocessImages(images, pixel_mean_, pixel_std_,
                          backbone_->size_divisibility());
}

LossDict GeneralizedRCNNImpl::Losses(const std::vector<RcnnInput>& inputs) {
  ImageList images = Preprocess(inputs);
  std::vector<ImageTargets> targets;
  for (const RcnnInput& in : inputs) targets.push_back(in.targets);
  FeatureMap features = backbone_->forward(images.tensor);
  RpnOutput rpn =
      proposal_generator_->forward(images.image_sizes, features, &targets);
  ROIHeadsImpl::Output heads =
      roi_heads_->forward(features, std::move(rpn.proposals), &targets);
  LossDict losses = std::move(heads.losses);
  losses.insert(losses.end(), rpn.losses.begin(), rpn.losses.end());
  return losses;
}

std::vector<Instances> GeneralizedRCNNImpl::Inference(
    const std::vector<RcnnInput>& inputs) {
  ImageList images = Preprocess(inputs);
  FeatureMap features = backbone_->forward(images.tensor);
  RpnOutput rpn =
      proposal_generator_->forward(images.image_sizes, features, nullptr);
  ROIHeadsImpl::Output heads =
      roi_heads_->forward(features, std::move(rpn.proposals), nullptr);
  std::vector<Instances> out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    out.push_back(DetectorPostprocess(heads.instances[i], inputs[i].height,
                                      inputs[i].width, mask_head_.get()));
  }
  return out;
}

Instances DetectorPostprocess(const Instances& results, int64_t height,
                              int64_t width, MaskHead* mask_head,
                              double mask_threshold) {
  const double scale_x =
      static_cast<double>(width) / static_cast<double>(results.image_width);
  const double scale_y =
      static_cast<double>(height) / static_cast<double>(results.image_height);
  Instances out = results;
  out.image_height = height;
  out.image_width = width;
  torch::Tensor& boxes =
      out.pred_boxes.defined() ? out.pred_boxes : out.proposal_boxes;
  TORCH_CHECK(boxes.defined(), "Predictions must contain boxes!");
  boxes = ClipBoxes(ScaleBoxes(boxes, scale_x, scale_y), height, width);
  out = out.Index(NonemptyBoxes(boxes));
  if (out.pred_masks.defined()) {
    TORCH_CHECK(mask_head != nullptr, "pred_masks without a mask head");
    out.pred_masks = mask_head->PasteMasks(out.pred_masks, out.pred_boxes,
                                           height, width, mask_threshold);
  }
  return out;
}

std::unique_ptr<optim::Optimizer> BuildOptimizer(torch::nn::Module& model,
                                                 OptimizerPath path) {
  std::vector<torch::Tensor> params;
  for (const torch::Tensor& p : model.parameters()) {
    if (p.requires_grad()) params.push_back(p);
  }
  optim::SgdOptions options;
  options.lr = 0.001;  // TorchBench's setup(): cfg.SOLVER.BASE_LR = 0.001
  options.momentum = 0.9;
  options.weight_decay = 1e-4;
  return std::make_unique<optim::Sgd>(std::move(params), options, path);
}

void StandInForCheckpoint(torch::nn::Module& model, double residual_scale) {
  torch::NoGradGuard no_grad;
  const std::string suffix = "conv3.norm.weight";
  for (auto& b : model.named_buffers()) {
    const std::string& name = b.key();
    if (name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      b.value().fill_(residual_scale);
    }
  }
}

void PrepareGoldenWeights(GeneralizedRCNNImpl& model,
                          const RcnnConfig& config) {
  torch::NoGradGuard no_grad;
  auto buffers = model.named_buffers();
  buffers["pixel_mean"].copy_(
      torch::tensor({kPixelMean[0], kPixelMean[1], kPixelMean[2]})
          .view({-1, 1, 1}));
  buffers["pixel_std"].copy_(
      torch::tensor({kPixelStd[0], kPixelStd[1], kPixelStd[2]})
          .view({-1, 1, 1}));
  const RpnOptions rpn =
      MakeRpnOptions(config, model.backbone().output_shape());
  for (size_t i = 0; i < rpn.strides.size(); ++i) {
    const size_t s = rpn.anchor_sizes.size() > 1 ? i : 0;
    const size_t r = rpn.aspect_ratios.size() > 1 ? i : 0;
    buffers["proposal_generator.anchor_generator.cell_anchors." +
            std::to_string(i)]
        .copy_(GenerateCellAnchors(rpn.anchor_sizes[s], rpn.aspect_ratios[r]));
  }
  auto params = model.named_parameters();
  for (const auto& [name, factor] : std::vector<std::pair<std::string, double>>{
           {"proposal_generator.rpn_head.objectness_logits.weight", 0.01},
           {"proposal_generator.rpn_head.anchor_deltas.weight", 0.001},
           {"roi_heads.box_predictor.cls_score.weight", 0.01},
           {"roi_heads.box_predictor.bbox_pred.weight", 0.001}}) {
    params[name].mul_(factor);
  }
}

}  // namespace torchbench::detectron2
