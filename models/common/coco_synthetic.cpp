#include "common/coco_synthetic.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "torchbench/deterministic_fill.h"

namespace torchbench::coco_synthetic {
namespace {

// Common COCO val sizes (H, W); image i has kSizes[i % 10].
constexpr std::array<std::array<int64_t, 2>, 10> kSizes = {{{480, 640},
                                                            {427, 640},
                                                            {640, 480},
                                                            {424, 640},
                                                            {640, 427},
                                                            {426, 640},
                                                            {480, 640},
                                                            {612, 612},
                                                            {425, 640},
                                                            {640, 428}}};

// Rounds to 0.01 half up (Python's round() would round half to even).
double RoundToHundredths(double v) {
  return std::floor(v * 100.0 + 0.5) / 100.0;
}

}  // namespace

const std::array<int, 80>& CocoCategoryIds() {
  static const std::array<int, 80> ids = {
      1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 13, 14, 15, 16, 17,
      18, 19, 20, 21, 22, 23, 24, 25, 27, 28, 31, 32, 33, 34, 35, 36,
      37, 38, 39, 40, 41, 42, 43, 44, 46, 47, 48, 49, 50, 51, 52, 53,
      54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 67, 70, 72, 73,
      74, 75, 76, 77, 78, 79, 80, 81, 82, 84, 85, 86, 87, 88, 89, 90};
  return ids;
}

ImageInfo MakeImageInfo(int index) {
  TORCH_CHECK(index >= 0 && index < kNumImages, "coco_synthetic: image ", index,
              " out of range [0, ", kNumImages, ")");
  ImageInfo info;
  info.height = kSizes[index % kSizes.size()][0];
  info.width = kSizes[index % kSizes.size()][1];
  const double h_img = static_cast<double>(info.height);
  const double w_img = static_cast<double>(info.width);
  for (int j = 0; j < kObjectsPerImage; ++j) {
    const std::string name =
        "coco_synthetic/" + std::to_string(index) + "/" + std::to_string(j);
    // Six uniforms in [0, 1), computed in float64 as fill.py computes them.
    const torch::Tensor u_t =
        DeterministicTensor(name, {6}, torch::kDouble, 0.5, 0.5);
    const double* u = u_t.data_ptr<double>();
    double lo = 96.0;
    double hi = 0.9 * std::min(h_img, w_img);
    if (j < 3) {
      lo = 8.0;
      hi = 32.0;
    } else if (j < 5) {
      lo = 32.0;
      hi = 96.0;
    }
    const double side = lo + (hi - lo) * u[0];
    const double aspect = 0.5 + 1.5 * u[1];
    const double w = std::min(side * std::sqrt(aspect), w_img - 2.0);
    const double h = std::min(side / std::sqrt(aspect), h_img - 2.0);
    const double x0 = 1.0 + (w_img - 2.0 - w) * u[2];
    const double y0 = 1.0 + (h_img - 2.0 - h) * u[3];
    const int vertices = 12 + static_cast<int>(std::floor(u[4] * 5.0));
    const int label = static_cast<int>(std::floor(u[5] * 80.0));
    const double cx = x0 + 0.5 * w;
    const double cy = y0 + 0.5 * h;

    Annotation a;
    a.contiguous_label = label;
    a.category_id = CocoCategoryIds()[label];
    double min_x = w_img, min_y = h_img, max_x = 0, max_y = 0;
    for (int v = 0; v < vertices; ++v) {
      const double t = 2.0 * std::numbers::pi * v / vertices;
      const double px = RoundToHundredths(cx + 0.5 * w * std::cos(t));
      const double py = RoundToHundredths(cy + 0.5 * h * std::sin(t));
      a.polygon.push_back(px);
      a.polygon.push_back(py);
      min_x = std::min(min_x, px);
      min_y = std::min(min_y, py);
      max_x = std::max(max_x, px);
      max_y = std::max(max_y, py);
    }
    a.bbox_xywh = {min_x, min_y, max_x - min_x, max_y - min_y};
    double twice_area = 0;  // shoelace
    for (int v = 0; v < vertices; ++v) {
      const int n = (v + 1) % vertices;
      twice_area += a.polygon[2 * v] * a.polygon[2 * n + 1] -
                    a.polygon[2 * n] * a.polygon[2 * v + 1];
    }
    a.area = 0.5 * std::abs(twice_area);
    info.annotations.push_back(std::move(a));
  }
  return info;
}

torch::Tensor MakeImagePixels(int index) {
  const ImageInfo info = MakeImageInfo(index);
  return DeterministicIntegers("coco_synthetic/pixels/" + std::to_string(index),
                               {info.height, info.width, 3}, 0, 256)
      .to(torch::kUInt8);
}

torch::Tensor BoxesXyxy(const ImageInfo& info, double scale_x, double scale_y) {
  std::vector<float> flat;
  for (const Annotation& a : info.annotations) {
    const auto& b = a.bbox_xywh;
    flat.insert(flat.end(), {static_cast<float>(b[0] * scale_x),
                             static_cast<float>(b[1] * scale_y),
                             static_cast<float>((b[0] + b[2]) * scale_x),
                             static_cast<float>((b[1] + b[3]) * scale_y)});
  }
  return torch::tensor(flat, torch::kFloat)
      .reshape({static_cast<int64_t>(info.annotations.size()), 4});
}

}  // namespace torchbench::coco_synthetic
