// File: models/common/detectron2/image_list.h
//
// detectron2's input side (structures/image_list.py, the meta-archs'
// preprocess_image, data/transforms ResizeShortestEdge at c470ca3):
//   - TestImage: what detectron2's DatasetMapper gives a model at test time
//     (cfg.INPUT.FORMAT "BGR", ResizeShortestEdge): a uint8 [3, H, W] BGR
//     tensor resized with detectron2's size rounding;
//   - PreprocessImages: (x - pixel_mean) / pixel_std per image, then
//     ImageList.from_tensors (zero padding to size_divisibility).
#ifndef TORCHBENCH_MODELS_COMMON_DETECTRON2_IMAGE_LIST_H_
#define TORCHBENCH_MODELS_COMMON_DETECTRON2_IMAGE_LIST_H_

#include <torch/types.h>

#include <array>
#include <cstdint>
#include <vector>

namespace torchbench::detectron2 {

// cfg.MODEL.PIXEL_MEAN / PIXEL_STD defaults (BGR, 0..255 scale).
inline constexpr std::array<double, 3> kPixelMean = {103.530, 116.280, 123.675};
inline constexpr std::array<double, 3> kPixelStd = {1.0, 1.0, 1.0};

struct ImageList {
  torch::Tensor tensor;                             // [N, C, H, W], padded
  std::vector<std::array<int64_t, 2>> image_sizes;  // (h, w) before padding
};

// ImageList.from_tensors: pads every [C, Hi, Wi] image (bottom and right)
// with pad_value to the largest size rounded up to size_divisibility.
ImageList ImageListFromTensors(const std::vector<torch::Tensor>& tensors,
                               int64_t size_divisibility,
                               double pad_value = 0.0);

// preprocess_image: images as the mapper gives them (any dtype, [C, H, W]),
// converted to the dtype of pixel_mean, normalised and padded. pixel_mean
// and pixel_std are the model's [C, 1, 1] buffers.
ImageList PreprocessImages(const std::vector<torch::Tensor>& images,
                           const torch::Tensor& pixel_mean,
                           const torch::Tensor& pixel_std,
                           int64_t size_divisibility);

// ResizeShortestEdge.get_output_shape: (new_h, new_w) with the short side
// at short_edge, the long side at most max_size, both rounded half up
// (int(x + 0.5)).
std::array<int64_t, 2> ResizeShortestEdgeSize(int64_t h, int64_t w,
                                              int64_t short_edge,
                                              int64_t max_size);

// A uint8 [H, W, 3] RGB image (as a decoded COCO file) as detectron2's test
// mapper makes it: channels flipped to BGR, resized to (new_h, new_w), [3,
// new_h, new_w] uint8 on the CPU. detectron2 resizes with PIL's bilinear
// filter; this runs LibTorch's uint8 bilinear antialias kernel, written to
// reproduce Pillow: on the synthetic COCO image 0 at 800x1067 0.14% of the
// values differ from PIL's, by 1.
torch::Tensor TestImage(const torch::Tensor& rgb_hwc, int64_t new_h,
                        int64_t new_w);

}  // namespace torchbench::detectron2

#endif  // TORCHBENCH_MODELS_COMMON_DETECTRON2_IMAGE_LIST_H_
