#include "common/torchvision_detection/mask_rcnn.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

namespace torchbench::torchvision_detection {

using torch::indexing::Slice;

namespace {

// resize_boxes: the ratios are float32 0-d tensors, as torchvision makes
// them.
torch::Tensor ResizeBoxes(const torch::Tensor& boxes,
                          std::pair<int64_t, int64_t> original,
                          std::pair<int64_t, int64_t> resized) {
  const auto ratio = [&](int64_t s, int64_t s_orig) {
    return torch::scalar_tensor(static_cast<double>(s),
                                boxes.options().dtype(torch::kFloat)) /
           torch::scalar_tensor(static_cast<double>(s_orig),
                                boxes.options().dtype(torch::kFloat));
  };
  const torch::Tensor ratio_h = ratio(resized.first, original.first);
  const torch::Tensor ratio_w = ratio(resized.second, original.second);
  const auto xyxy = boxes.unbind(1);
  return torch::stack({xyxy[0] * ratio_w, xyxy[1] * ratio_h, xyxy[2] * ratio_w,
                       xyxy[3] * ratio_h},
                      1);
}

}  // namespace

GeneralizedRCNNTransform::GeneralizedRCNNTransform(int64_t min_size,
                                                   int64_t max_size)
    : min_size_(min_size), max_size_(max_size) {}

ImageList GeneralizedRCNNTransform::operator()(
    const std::vector<torch::Tensor>& images, std::vector<Target>* targets,
    bool training) const {
  std::vector<torch::Tensor> resized;
  ImageList out;
  for (size_t i = 0; i < images.size(); ++i) {
    const torch::Tensor& image = images[i];
    TORCH_CHECK(image.dim() == 3 && image.is_floating_point(),
                "images must be float [C, H, W] tensors in [0, 1]");
    // normalize
    const auto options = image.options();
    const torch::Tensor mean =
        torch::tensor({0.485, 0.456, 0.406}, torch::kDouble).to(options);
    const torch::Tensor std =
        torch::tensor({0.229, 0.224, 0.225}, torch::kDouble).to(options);
    torch::Tensor x = (image - mean.view({-1, 1, 1})) / std.view({-1, 1, 1});
    // resize: torch_choice(min_size) draws even from one candidate.
    if (training) {
      (void)torch::empty({1}).uniform_(0.0, 1.0);
    }
    const int64_t h = x.size(-2);
    const int64_t w = x.size(-1);
    const double scale = std::min(
        static_cast<double>(min_size_) / static_cast<double>(std::min(h, w)),
        static_cast<double>(max_size_) / static_cast<double>(std::max(h, w)));
    const std::vector<int64_t> size = {
        static_cast<int64_t>(std::floor(static_cast<double>(h) * scale)),
        static_cast<int64_t>(std::floor(static_cast<double>(w) * scale))};
    x = torch::nn::functional::interpolate(
            x.unsqueeze(0), torch::nn::functional::InterpolateFuncOptions()
                                .size(size)
                                .mode(torch::kBilinear)
                                .align_corners(false))
            .squeeze(0);
    if (targets != nullptr) {
      Target& t = (*targets)[i];
      if (t.masks.defined()) {
        t.masks =
            torch::nn::functional::interpolate(
                t.masks.unsqueeze(1).to(torch::kFloat),
                torch::nn::functional::InterpolateFuncOptions().size(size).mode(
                    torch::kNearest))
                .select(1, 0)
                .to(torch::kUInt8);
      }
      t.boxes = ResizeBoxes(t.boxes, {h, w}, {size[0], size[1]});
    }
    out.image_sizes.emplace_back(size[0], size[1]);
    resized.push_back(x);
  }
  // batch_images: pad to the largest size, rounded up to a multiple of 32.
  int64_t max_h = 0;
  int64_t max_w = 0;
  for (const auto& img : resized) {
    max_h = std::max(max_h, img.size(1));
    max_w = std::max(max_w, img.size(2));
  }
  max_h =
      static_cast<int64_t>(std::ceil(static_cast<double>(max_h) / 32.0) * 32.0);
  max_w =
      static_cast<int64_t>(std::ceil(static_cast<double>(max_w) / 32.0) * 32.0);
  out.tensors = resized[0].new_full(
      {static_cast<int64_t>(resized.size()), resized[0].size(0), max_h, max_w},
      0);
  for (size_t i = 0; i < resized.size(); ++i) {
    out.tensors[static_cast<int64_t>(i)]
        .slice(1, 0, resized[i].size(1))
        .slice(2, 0, resized[i].size(2))
        .copy_(resized[i]);
  }
  return out;
}

namespace {

// What Python's max(t, 0) / min(t, bound) leave for a 0-dim int64 tensor t:
// t itself or the int, decided by a device comparison read back by the
// builtin (0 > t and bound < t run as the reflected t < 0 and t > bound).
struct PyIndex {
  torch::Tensor tensor;  // undefined when the int won
  int64_t value = 0;

  // operator.index(): a host read when a tensor.
  int64_t Index() const {
    return tensor.defined() ? tensor.item<int64_t>() : value;
  }
  // self - t: a device subtraction (int - tensor is t.__rsub__(int)).
  torch::Tensor Minus(const torch::Tensor& t) const {
    return tensor.defined() ? tensor - t : torch::rsub(t, value);
  }
};

PyIndex PyMax(const torch::Tensor& t, int64_t bound) {
  if (torch::lt(t, bound).item<bool>()) return {torch::Tensor(), bound};
  return {t, 0};
}

PyIndex PyMin(const torch::Tensor& t, int64_t bound) {
  if (torch::gt(t, bound).item<bool>()) return {torch::Tensor(), bound};
  return {t, 0};
}

// paste_mask_in_image: one padded mask and its int64 box, both on the
// device, as torchvision runs it: int() of the box's width and height, the
// builtin max/min of its coordinates against the image, and tensor slice
// bounds read with __index__ (about fourteen host syncs a mask).
torch::Tensor PasteMaskInImage(const torch::Tensor& mask_in,
                               const torch::Tensor& box, int64_t im_h,
                               int64_t im_w) {
  const int64_t w = std::max<int64_t>((box[2] - box[0] + 1).item<int64_t>(), 1);
  const int64_t h = std::max<int64_t>((box[3] - box[1] + 1).item<int64_t>(), 1);
  const torch::Tensor mask = torch::nn::functional::interpolate(
      mask_in.expand({1, 1, -1, -1}),
      torch::nn::functional::InterpolateFuncOptions()
          .size(std::vector<int64_t>{h, w})
          .mode(torch::kBilinear)
          .align_corners(false))[0][0];
  torch::Tensor im_mask = torch::zeros({im_h, im_w}, mask.options());
  const PyIndex x_0 = PyMax(box[0], 0);
  const PyIndex x_1 = PyMin(box[2] + 1, im_w);
  const PyIndex y_0 = PyMax(box[1], 0);
  const PyIndex y_1 = PyMin(box[3] + 1, im_h);
  // im_mask[y_0:y_1, x_0:x_1] = mask[(y_0 - box[1]):(y_1 - box[1]),
  //                                  (x_0 - box[0]):(x_1 - box[0])]: the
  // right side's bounds first, then the left side's.
  const torch::Tensor src_y0 = y_0.Minus(box[1]);
  const torch::Tensor src_y1 = y_1.Minus(box[1]);
  const torch::Tensor src_x0 = x_0.Minus(box[0]);
  const torch::Tensor src_x1 = x_1.Minus(box[0]);
  const torch::Tensor src =
      mask.slice(0, src_y0.item<int64_t>(), src_y1.item<int64_t>())
          .slice(1, src_x0.item<int64_t>(), src_x1.item<int64_t>());
  const int64_t dst_y0 = y_0.Index();
  const int64_t dst_y1 = y_1.Index();
  const int64_t dst_x0 = x_0.Index();
  const int64_t dst_x1 = x_1.Index();
  if (dst_y1 > dst_y0 && dst_x1 > dst_x0) {
    im_mask.slice(0, dst_y0, dst_y1).slice(1, dst_x0, dst_x1).copy_(src);
  }
  return im_mask;
}

}  // namespace

torch::Tensor PasteMasksInImage(const torch::Tensor& masks,
                                const torch::Tensor& boxes, int64_t im_h,
                                int64_t im_w) {
  // expand_masks / expand_boxes (padding 1).
  const int64_t m = masks.size(-1);
  const double scale = static_cast<double>(m + 2) / m;
  const torch::Tensor padded = torch::constant_pad_nd(masks, {1, 1, 1, 1}, 0);
  torch::Tensor w_half = (boxes.select(1, 2) - boxes.select(1, 0)) * 0.5;
  torch::Tensor h_half = (boxes.select(1, 3) - boxes.select(1, 1)) * 0.5;
  const torch::Tensor x_c = (boxes.select(1, 2) + boxes.select(1, 0)) * 0.5;
  const torch::Tensor y_c = (boxes.select(1, 3) + boxes.select(1, 1)) * 0.5;
  w_half = w_half * scale;
  h_half = h_half * scale;
  const torch::Tensor expanded =
      torch::stack({x_c - w_half, y_c - h_half, x_c + w_half, y_c + h_half}, 1)
          .to(torch::kLong);
  std::vector<torch::Tensor> res;
  for (int64_t i = 0; i < padded.size(0); ++i) {
    res.push_back(PasteMaskInImage(padded[i][0], expanded[i], im_h, im_w));
  }
  if (res.empty()) return masks.new_empty({0, 1, im_h, im_w});
  return torch::stack(res).unsqueeze(1);
}

void GeneralizedRCNNTransform::Postprocess(
    std::vector<Detection>* result,
    const std::vector<std::pair<int64_t, int64_t>>& image_shapes,
    const std::vector<std::pair<int64_t, int64_t>>& original_sizes) const {
  for (size_t i = 0; i < result->size(); ++i) {
    Detection& d = (*result)[i];
    d.boxes = ResizeBoxes(d.boxes, image_shapes[i], original_sizes[i]);
    d.masks = PasteMasksInImage(d.masks, d.boxes, original_sizes[i].first,
                                original_sizes[i].second);
  }
}

BackboneWithFPNImpl::BackboneWithFPNImpl(int64_t trainable_layers,
                                         double frozen_bn_eps) {
  body_ = register_module(
      "body",
      torchvision_resnet::ResNet(torchvision_resnet::ResNetOptions()
                                     .features_only(true)
                                     .frozen_batch_norm(true)
                                     .frozen_batch_norm_eps(frozen_bn_eps)));
  // _resnet_fpn_extractor: parameters outside the last `trainable_layers`
  // of (layer4, layer3, layer2, layer1, conv1) stop training.
  const std::vector<std::string> order = {"layer4", "layer3", "layer2",
                                          "layer1", "conv1"};
  std::vector<std::string> to_train(order.begin(),
                                    order.begin() + trainable_layers);
  if (trainable_layers == 5) to_train.push_back("bn1");
  for (auto& p : body_->named_parameters()) {
    const bool trains = std::any_of(
        to_train.begin(), to_train.end(),
        [&](const std::string& l) { return p.key().rfind(l, 0) == 0; });
    if (!trains) p.value().set_requires_grad(false);
  }
  auto fpn = std::make_shared<torch::nn::Module>();
  register_module("fpn", fpn);
  inner_blocks_ = fpn->register_module("inner_blocks", torch::nn::ModuleList());
  layer_blocks_ = fpn->register_module("layer_blocks", torch::nn::ModuleList());
  for (int64_t in : {256, 512, 1024, 2048}) {
    inner_blocks_->push_back(ConvNormActivation(in, 256, 1, /*relu=*/false));
    layer_blocks_->push_back(ConvNormActivation(256, 256, 3, /*relu=*/false));
  }
  torch::NoGradGuard no_grad;
  for (auto& p : fpn->named_parameters()) {
    if (p.key().ends_with("weight")) {
      torch::nn::init::kaiming_uniform_(p.value(), /*a=*/1);
    } else {
      torch::nn::init::zeros_(p.value());
    }
  }
}

std::vector<torch::Tensor> BackboneWithFPNImpl::forward(
    const torch::Tensor& x) {
  const std::vector<torch::Tensor> c = body_->Features(x);
  const auto inner = [&](size_t i, const torch::Tensor& t) {
    return inner_blocks_->ptr<ConvNormActivationImpl>(i)->forward(t);
  };
  const auto layer = [&](size_t i, const torch::Tensor& t) {
    return layer_blocks_->ptr<ConvNormActivationImpl>(i)->forward(t);
  };
  const size_t n = c.size();
  torch::Tensor last_inner = inner(n - 1, c[n - 1]);
  std::vector<torch::Tensor> results(n + 1);
  results[n - 1] = layer(n - 1, last_inner);
  for (size_t idx = n - 1; idx-- > 0;) {
    const torch::Tensor lateral = inner(idx, c[idx]);
    const torch::Tensor top_down = torch::nn::functional::interpolate(
        last_inner,
        torch::nn::functional::InterpolateFuncOptions()
            .size(std::vector<int64_t>{lateral.size(-2), lateral.size(-1)})
            .mode(torch::kNearest));
    last_inner = lateral + top_down;
    results[idx] = layer(idx, last_inner);
  }
  // LastLevelMaxPool ("pool").
  results[n] = torch::max_pool2d(results[n - 1], /*kernel_size=*/1,
                                 /*stride=*/2, /*padding=*/0);
  return results;
}

MaskRCNNImpl::MaskRCNNImpl(const MaskRCNNOptions& options)
    : transform_(options.min_size, options.max_size) {
  backbone_ = register_module("backbone",
                              BackboneWithFPN(options.trainable_backbone_layers,
                                              options.frozen_bn_eps));
  AnchorGenerator anchors({{32}, {64}, {128}, {256}, {512}},
                          std::vector<std::vector<double>>(5, {0.5, 1.0, 2.0}));
  const int64_t num_anchors = anchors.NumAnchorsPerLocation();
  rpn_ = register_module(
      "rpn", RegionProposalNetwork(std::move(anchors),
                                   RPNHead(256, num_anchors), RpnOptions()));
  RoIHeadsOptions roi_options;
  roi_options.num_classes = options.num_classes;
  roi_heads_ = register_module("roi_heads", RoIHeads(256, roi_options));
}

void MaskRCNNImpl::CalibrateFrozenBatchNorm(
    const std::vector<torch::Tensor>& images) {
  torch::NoGradGuard no_grad;
  std::vector<torchvision_resnet::FrozenBatchNorm2dImpl*> norms;
  for (auto& m : modules(/*include_self=*/false)) {
    if (auto* n = m->as<torchvision_resnet::FrozenBatchNorm2dImpl>()) {
      norms.push_back(n);
    }
  }
  for (auto* n : norms) n->calibrate = true;
  const ImageList image_list =
      transform_(images, /*targets=*/nullptr, /*training=*/false);
  backbone_->forward(image_list.tensors);
  for (auto* n : norms) n->calibrate = false;
}

std::pair<std::map<std::string, torch::Tensor>, std::vector<Detection>>
MaskRCNNImpl::forward(const std::vector<torch::Tensor>& images,
                      std::vector<Target>* targets) {
  TORCH_CHECK(!is_training() || targets != nullptr,
              "targets should not be none when in training mode");
  std::vector<std::pair<int64_t, int64_t>> original_sizes;
  for (const auto& img : images) {
    original_sizes.emplace_back(img.size(-2), img.size(-1));
  }
  const ImageList image_list = transform_(images, targets, is_training());
  if (targets != nullptr) {
    for (const Target& t : *targets) {
      const torch::Tensor degenerate =
          t.boxes.slice(1, 2) <= t.boxes.slice(1, 0, 2);
      TORCH_CHECK(!degenerate.any().item<bool>(),
                  "All bounding boxes should have positive height and width.");
    }
  }
  const std::vector<torch::Tensor> features =
      backbone_->forward(image_list.tensors);
  auto [proposals, proposal_losses] =
      rpn_->forward(image_list, features, is_training() ? targets : nullptr);
  auto [detections, detector_losses] = roi_heads_->forward(
      features, std::move(proposals), image_list.image_sizes,
      is_training() ? targets : nullptr);
  if (!is_training()) {
    transform_.Postprocess(&detections, image_list.image_sizes, original_sizes);
  }
  std::map<std::string, torch::Tensor> losses = std::move(detector_losses);
  for (auto& [k, v] : proposal_losses) losses[k] = v;
  return {losses, detections};
}

}  // namespace torchbench::torchvision_detection
