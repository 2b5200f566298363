#include "common/detectron2/mask_head.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "common/polygon_mask.h"

namespace torchbench::detectron2 {
namespace {

// detectron2's GPU_MEM_LIMIT / BYTES_PER_FLOAT in layers/mask_ops.py.
constexpr double kPasteGpuMemLimit = 1024.0 * 1024.0 * 1024.0;
constexpr double kPasteBytesPerFloat = 4.0;

// fvcore's c2_msra_fill.
void C2MsraFill(torch::Tensor weight, torch::Tensor bias) {
  torch::NoGradGuard no_grad;
  torch::nn::init::kaiming_normal_(weight, 0.0, torch::kFanOut, torch::kReLU);
  if (bias.defined()) bias.zero_();
}

// _do_paste_mask: masks [N, 1, M, M] sampled at the pixel centres of the
// region [y0, y1) x [x0, x1) of the image, for boxes [N, 4].
torch::Tensor DoPasteMask(torch::Tensor masks, const torch::Tensor& boxes,
                          int64_t x0_int, int64_t y0_int, int64_t x1_int,
                          int64_t y1_int) {
  const auto options = boxes.options().dtype(torch::kFloat);
  const std::vector<torch::Tensor> corners = boxes.split(1, 1);  // each [N, 1]
  const int64_t n = masks.size(0);
  torch::Tensor img_y = torch::arange(y0_int, y1_int, options) + 0.5;
  torch::Tensor img_x = torch::arange(x0_int, x1_int, options) + 0.5;
  img_y = (img_y - corners[1]) / (corners[3] - corners[1]) * 2 - 1;
  img_x = (img_x - corners[0]) / (corners[2] - corners[0]) * 2 - 1;
  const torch::Tensor gx =
      img_x.unsqueeze(1).expand({n, img_y.size(1), img_x.size(1)});
  const torch::Tensor gy =
      img_y.unsqueeze(2).expand({n, img_y.size(1), img_x.size(1)});
  const torch::Tensor grid = torch::stack({gx, gy}, 3);
  if (!masks.is_floating_point()) masks = masks.to(torch::kFloat);
  namespace F = torch::nn::functional;
  return F::grid_sample(masks, grid.to(masks.scalar_type()),
                        F::GridSampleFuncOptions()
                            .mode(torch::kBilinear)
                            .padding_mode(torch::kZeros)
                            .align_corners(false))
      .select(1, 0);
}

}  // namespace

torch::Tensor MaskRcnnLoss(const torch::Tensor& pred_mask_logits,
                           const std::vector<Instances>& instances,
                           const std::vector<ImageTargets>& targets) {
  TORCH_CHECK(pred_mask_logits.size(2) == pred_mask_logits.size(3),
              "Mask prediction must be square!");
  TORCH_CHECK(instances.size() == targets.size(),
              "MaskRcnnLoss: one ImageTargets per image");
  const bool cls_agnostic_mask = pred_mask_logits.size(1) == 1;
  const int64_t total_num_masks = pred_mask_logits.size(0);
  const int64_t mask_side_len = pred_mask_logits.size(2);

  std::vector<torch::Tensor> gt_classes, gt_masks;
  for (size_t i = 0; i < instances.size(); ++i) {
    const Instances& image = instances[i];
    if (image.size() == 0) continue;
    if (!cls_agnostic_mask)
      gt_classes.push_back(image.gt_classes.to(torch::kLong));
    // gt_masks[matched_idxs]: each proposal's matched object's polygons.
    const torch::Tensor index = image.gt_index.to(torch::kCPU, torch::kLong);
    const int64_t* idx = index.data_ptr<int64_t>();
    std::vector<std::vector<polygon_mask::Polygon>> polygons;
    polygons.reserve(static_cast<size_t>(index.numel()));
    for (int64_t r = 0; r < index.numel(); ++r) {
      polygons.push_back(
          targets[i].gt_polygons.at(static_cast<size_t>(idx[r])));
    }
    gt_masks.push_back(polygon_mask::CropAndResize(
                           polygons, image.proposal_boxes, mask_side_len)
                           .to(pred_mask_logits.device()));
  }
  if (gt_masks.empty()) return pred_mask_logits.sum() * 0;

  const torch::Tensor gt_masks_bool = torch::cat(gt_masks, 0);
  torch::Tensor logits;
  if (cls_agnostic_mask) {
    logits = pred_mask_logits.select(1, 0);
  } else {
    const torch::Tensor indices = torch::arange(total_num_masks);
    logits = pred_mask_logits.index({indices, torch::cat(gt_classes, 0)});
  }
  const torch::Tensor gt = gt_masks_bool.to(torch::kFloat);

  // The EventStorage figures (mask_rcnn/accuracy, false_positive,
  // false_negative): computed for their cost and syncs, then dropped.
  {
    torch::NoGradGuard no_grad;
    const torch::Tensor incorrect = logits.gt(0.0).ne(gt_masks_bool);
    const auto numel = static_cast<double>(incorrect.numel());
    const double accuracy =
        1 - incorrect.sum().item<double>() / std::max(numel, 1.0);
    const double num_positive = gt_masks_bool.sum().item<double>();
    const double false_positive =
        incorrect.logical_and(gt_masks_bool.logical_not())
            .sum()
            .item<double>() /
        std::max(numel - num_positive, 1.0);
    const double false_negative =
        incorrect.logical_and(gt_masks_bool).sum().item<double>() /
        std::max(num_positive, 1.0);
    (void)accuracy;
    (void)false_positive;
    (void)false_negative;
  }
  return torch::binary_cross_entropy_with_logits(
      logits, gt, /*weight=*/{}, /*pos_weight=*/{}, at::Reduction::Mean);
}

void MaskRcnnInference(const torch::Tensor& pred_mask_logits,
                       std::vector<Instances>& instances) {
  torch::Tensor probs;
  if (pred_mask_logits.size(1) == 1) {
    probs = pred_mask_logits.sigmoid();
  } else {
    std::vector<torch::Tensor> classes;
    for (const Instances& image : instances) {
      classes.push_back(image.pred_classes);
    }
    const torch::Tensor class_pred = torch::cat(classes, 0);
    const torch::Tensor indices = torch::arange(
        pred_mask_logits.size(0), class_pred.options().dtype(torch::kLong));
    probs =
        pred_mask_logits.index({indices, class_pred}).unsqueeze(1).sigmoid();
  }
  int64_t start = 0;
  for (Instances& image : instances) {
    const int64_t n = image.size();
    image.pred_masks = probs.narrow(0, start, n);
    start += n;
  }
}

torch::Tensor PasteMasksInImage(const torch::Tensor& masks,
                                const torch::Tensor& boxes, int64_t height,
                                int64_t width, double threshold) {
  TORCH_CHECK(masks.size(-1) == masks.size(-2),
              "Only square mask predictions are supported");
  const int64_t n = masks.size(0);
  if (n == 0) {
    return torch::empty({0, height, width},
                        masks.options().dtype(torch::kByte));
  }
  TORCH_CHECK(boxes.size(0) == n, "PasteMasksInImage: ", n, " masks but ",
              boxes.size(0), " boxes");
  const bool on_cpu = boxes.device().is_cpu();
  // CPU: one mask at a time within the boxes' bounding region; GPU: chunks
  // of the whole image.
  const int64_t num_chunks =
      on_cpu ? n
             : static_cast<int64_t>(std::ceil(
                   static_cast<double>(n) * static_cast<double>(height) *
                   static_cast<double>(width) * kPasteBytesPerFloat /
                   kPasteGpuMemLimit));
  TORCH_CHECK(num_chunks <= n,
              "Default GPU_MEM_LIMIT in mask_ops.py is too small");
  const std::vector<torch::Tensor> chunks =
      torch::arange(n, boxes.options().dtype(torch::kLong)).chunk(num_chunks);
  torch::Tensor img_masks = torch::zeros(
      {n, height, width},
      boxes.options().dtype(threshold >= 0 ? torch::kBool : torch::kByte));
  using torch::indexing::Slice;
  for (const torch::Tensor& inds : chunks) {
    const torch::Tensor chunk_boxes = boxes.index({inds});
    int64_t x0 = 0, y0 = 0, x1 = width, y1 = height;
    if (on_cpu) {
      const torch::Tensor low =
          torch::clamp(
              std::get<0>(chunk_boxes.min(0)).floor().narrow(0, 0, 2) - 1, 0)
              .to(torch::kInt);
      x0 = low[0].item<int64_t>();
      y0 = low[1].item<int64_t>();
      x1 = torch::clamp(chunk_boxes.select(1, 2).max().ceil() + 1, std::nullopt,
                        width)
               .to(torch::kInt)
               .item<int64_t>();
      y1 = torch::clamp(chunk_boxes.select(1, 3).max().ceil() + 1, std::nullopt,
                        height)
               .to(torch::kInt)
               .item<int64_t>();
    }
    torch::Tensor pasted = DoPasteMask(masks.index({inds}).unsqueeze(1),
                                       chunk_boxes, x0, y0, x1, y1);
    pasted = threshold >= 0 ? pasted.ge(threshold).to(torch::kBool)
                            : (pasted * 255).to(torch::kByte);
    if (on_cpu) {
      img_masks.index_put_({inds, Slice(y0, y1), Slice(x0, x1)}, pasted);
    } else {
      img_masks.index_put_({inds}, pasted);
    }
  }
  return img_masks;
}

MaskRCNNConvUpsampleHead::MaskRCNNConvUpsampleHead(
    const MaskHeadOptions& options)
    : options_(options) {
  int64_t channels = options.in_channels;
  for (int64_t k = 0; k < options.num_conv; ++k) {
    mask_fcn_.push_back(
        register_module("mask_fcn" + std::to_string(k + 1),
                        torch::nn::Conv2d(torch::nn::Conv2dOptions(
                                              channels, options.conv_dim, 3)
                                              .stride(1)
                                              .padding(1)
                                              .bias(true))));
    C2MsraFill(mask_fcn_.back()->weight, mask_fcn_.back()->bias);
    channels = options.conv_dim;
  }
  deconv_ = register_module(
      "deconv", torch::nn::ConvTranspose2d(torch::nn::ConvTranspose2dOptions(
                                               channels, options.conv_dim, 2)
                                               .stride(2)
                                               .padding(0)));
  C2MsraFill(deconv_->weight, deconv_->bias);
  predictor_ = register_module(
      "predictor",
      torch::nn::Conv2d(
          torch::nn::Conv2dOptions(options.conv_dim, options.num_classes, 1)
              .stride(1)
              .padding(0)));
  torch::NoGradGuard no_grad;
  torch::nn::init::normal_(predictor_->weight, 0.0, 0.001);
  predictor_->bias.zero_();
}

torch::Tensor MaskRCNNConvUpsampleHead::Layers(const torch::Tensor& features) {
  torch::Tensor x = features;
  for (torch::nn::Conv2d& conv : mask_fcn_) x = torch::relu(conv->forward(x));
  x = torch::relu(deconv_->forward(x));
  return predictor_->forward(x);
}

torch::Tensor MaskRCNNConvUpsampleHead::Losses(
    const torch::Tensor& features, const std::vector<Instances>& instances,
    const std::vector<ImageTargets>& targets) {
  return MaskRcnnLoss(Layers(features), instances, targets) *
         options_.loss_weight;
}

void MaskRCNNConvUpsampleHead::Inference(const torch::Tensor& features,
                                         std::vector<Instances>& instances) {
  MaskRcnnInference(Layers(features), instances);
}

torch::Tensor MaskRCNNConvUpsampleHead::PasteMasks(
    const torch::Tensor& pred_masks, const torch::Tensor& boxes, int64_t height,
    int64_t width, double threshold) {
  return PasteMasksInImage(pred_masks.select(1, 0), boxes, height, width,
                           threshold);
}

}  // namespace torchbench::detectron2
