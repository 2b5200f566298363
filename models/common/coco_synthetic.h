// A deterministic COCO-like detection set for the detection models, made the
// same way by tools/golden/coco_synthetic.py (golden adapters feed the
// reference models the very same images and annotations).
//
// TorchBench reads the first images of COCO 2017 val ("coco_2017_val_100");
// the data set is not on the machine, so this stands in with the same shapes
// and per-image statistics:
//   - 100 images; sizes cycle through common COCO val sizes, image 0 is
//     480x640 (H x W, the modal COCO size). Pixels are RGB uint8, HWC (as a
//     decoded COCO JPEG), uniform over 0..255 from the deterministic fill
//     (COCO's mean is about 118, this one 127.5; the models do not care).
//   - 7 objects per image (COCO val: 7.36 per image on average): 3 small
//     (sqrt(area) 8..32 px), 2 medium (32..96), 2 large (96..0.9 x the short
//     side), roughly COCO's 41/34/24 % area mix; aspect ratio 0.5..2.
//   - Each object's segmentation is one polygon: a 12..16-vertex ellipse
//     inscribed in its box, coordinates rounded to 0.01 px as COCO stores
//     them; the bbox is the polygon's tight extent (COCO's bbox is tight
//     around the mask), iscrowd 0, area the polygon's area.
//   - Categories are drawn uniformly from COCO's 80 (ids 1..90 with gaps).
#ifndef TORCHBENCH_MODELS_COMMON_COCO_SYNTHETIC_H_
#define TORCHBENCH_MODELS_COMMON_COCO_SYNTHETIC_H_

#include <torch/types.h>

#include <array>
#include <cstdint>
#include <vector>

namespace torchbench::coco_synthetic {

inline constexpr int kNumImages = 100;
inline constexpr int kObjectsPerImage = 7;

struct Annotation {
  int category_id = 0;       // COCO id (1..90)
  int contiguous_label = 0;  // 0..79, as detectron2's dataset mapper maps ids
  std::array<double, 4> bbox_xywh{};  // COCO order: x, y, width, height
  std::vector<double> polygon;        // x0, y0, x1, y1, ...
  double area = 0;
  int iscrowd = 0;
};

struct ImageInfo {
  int64_t height = 0;
  int64_t width = 0;
  std::vector<Annotation> annotations;
};

// COCO's 80 category ids, in order (contiguous label i <-> id i).
const std::array<int, 80>& CocoCategoryIds();

// The size and annotations of image `index` (0 <= index < kNumImages).
ImageInfo MakeImageInfo(int index);

// The pixels of image `index`: uint8 [H, W, 3], RGB.
torch::Tensor MakeImagePixels(int index);

// Boxes as float [N, 4] x1, y1, x2, y2 (COCO xywh -> xyxy), scaled by
// (scale_x, scale_y) as a resize of the image scales them.
torch::Tensor BoxesXyxy(const ImageInfo& info, double scale_x = 1.0,
                        double scale_y = 1.0);

}  // namespace torchbench::coco_synthetic

#endif  // TORCHBENCH_MODELS_COMMON_COCO_SYNTHETIC_H_
