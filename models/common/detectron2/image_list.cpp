#include "common/detectron2/image_list.h"

#include <torch/nn/functional/upsampling.h>
#include <torch/torch.h>

#include <algorithm>

namespace torchbench::detectron2 {

namespace F = torch::nn::functional;

ImageList ImageListFromTensors(const std::vector<torch::Tensor>& tensors,
                               int64_t size_divisibility, double pad_value) {
  TORCH_CHECK(!tensors.empty(), "ImageList needs at least one image");
  ImageList out;
  int64_t max_h = 0, max_w = 0;
  for (const auto& t : tensors) {
    TORCH_CHECK(t.sizes().slice(0, t.dim() - 2) ==
                    tensors[0].sizes().slice(0, tensors[0].dim() - 2),
                "ImageList: images differ in their leading dimensions");
    out.image_sizes.push_back({t.size(-2), t.size(-1)});
    max_h = std::max(max_h, t.size(-2));
    max_w = std::max(max_w, t.size(-1));
  }
  if (size_divisibility > 1) {
    const int64_t s = size_divisibility;
    max_h = (max_h + s - 1) / s * s;
    max_w = (max_w + s - 1) / s * s;
  }
  if (tensors.size() == 1) {
    const auto& t = tensors[0];
    out.tensor =
        torch::constant_pad_nd(
            t, {0, max_w - t.size(-1), 0, max_h - t.size(-2)}, pad_value)
            .unsqueeze_(0);
  } else {
    std::vector<int64_t> shape = {static_cast<int64_t>(tensors.size())};
    for (int64_t d = 0; d < tensors[0].dim() - 2; ++d) {
      shape.push_back(tensors[0].size(d));
    }
    shape.push_back(max_h);
    shape.push_back(max_w);
    out.tensor = tensors[0].new_full(shape, pad_value);
    for (size_t i = 0; i < tensors.size(); ++i) {
      const auto& t = tensors[i];
      out.tensor[static_cast<int64_t>(i)]
          .narrow(-2, 0, t.size(-2))
          .narrow(-1, 0, t.size(-1))
          .copy_(t);
    }
  }
  out.tensor = out.tensor.contiguous();
  return out;
}

ImageList PreprocessImages(const std::vector<torch::Tensor>& images,
                           const torch::Tensor& pixel_mean,
                           const torch::Tensor& pixel_std,
                           int64_t size_divisibility) {
  std::vector<torch::Tensor> normalized;
  normalized.reserve(images.size());
  for (const auto& x : images) {
    normalized.push_back((x.to(pixel_mean.device()) - pixel_mean) / pixel_std);
  }
  return ImageListFromTensors(normalized, size_divisibility);
}

std::array<int64_t, 2> ResizeShortestEdgeSize(int64_t h, int64_t w,
                                              int64_t short_edge,
                                              int64_t max_size) {
  const double size = static_cast<double>(short_edge);
  const double scale = size / static_cast<double>(std::min(h, w));
  double new_h, new_w;
  if (h < w) {
    new_h = size;
    new_w = scale * static_cast<double>(w);
  } else {
    new_h = scale * static_cast<double>(h);
    new_w = size;
  }
  if (std::max(new_h, new_w) > static_cast<double>(max_size)) {
    const double s = static_cast<double>(max_size) / std::max(new_h, new_w);
    new_h *= s;
    new_w *= s;
  }
  return {static_cast<int64_t>(new_h + 0.5), static_cast<int64_t>(new_w + 0.5)};
}

torch::Tensor TestImage(const torch::Tensor& rgb_hwc, int64_t new_h,
                        int64_t new_w) {
  TORCH_CHECK(rgb_hwc.dim() == 3 && rgb_hwc.size(2) == 3 &&
                  rgb_hwc.scalar_type() == torch::kUInt8,
              "TestImage takes a uint8 [H, W, 3] image");
  auto bgr = rgb_hwc.to(torch::kCPU).flip({2}).permute({2, 0, 1}).unsqueeze(0);
  if (bgr.size(2) == new_h && bgr.size(3) == new_w) {
    return bgr[0].contiguous();
  }
  auto resized = F::interpolate(bgr.contiguous(),
                                F::InterpolateFuncOptions()
                                    .size(std::vector<int64_t>{new_h, new_w})
                                    .mode(torch::kBilinear)
                                    .align_corners(false)
                                    .antialias(true));
  return resized[0].contiguous();
}

}  // namespace torchbench::detectron2
