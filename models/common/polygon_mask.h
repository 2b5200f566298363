// Polygon masks rasterized exactly as pycocotools (2.0.11, COCO's maskApi.c)
// does, so that mask targets built from COCO polygons are the reference's
// pixels:
//   - torchvision's ConvertCocoPolysToMask (full-image masks of each object:
//     decode(frPyObjects(polygons, h, w)).any(-1)) -> PolygonsToMask;
//   - detectron2's PolygonMasks.crop_and_resize (each instance's polygons
//     shifted to a box, scaled to M x M, then decode(merge(frPyObjects)))
//     -> RasterizePolygonsWithinBox / CropAndResize.
//
// pycocotools' rasterizer is not a plain scanline fill: it scales the
// vertices by 5 and rounds them to integers, walks each edge on that grid,
// keeps the points where the walk crosses a pixel-centre column, downsamples
// them back and turns them into a column-major run-length encoding (RLE).
// Its rounding is C's truncating (int)(v + .5), which is not floor(v + .5) for
// negative coordinates, so polygons crossing the left/top border come out
// differently from any textbook fill; hence this reimplementation of the same
// arithmetic step by step (in double, without FMA contraction as the
// reference's x86-64 build computes it).
#ifndef TORCHBENCH_MODELS_COMMON_POLYGON_MASK_H_
#define TORCHBENCH_MODELS_COMMON_POLYGON_MASK_H_

#include <torch/types.h>

#include <array>
#include <cstdint>
#include <vector>

namespace torchbench::polygon_mask {

// One closed polygon: x0, y0, x1, y1, ... in pixel coordinates (pixel (x, y)
// covers [x, x + 1) x [y, y + 1) as in COCO). At least 3 points.
using Polygon = std::vector<double>;

// pycocotools' RLE: run lengths of alternating 0s and 1s (starting with 0s)
// over the mask read column by column (Fortran order), summing to h * w.
struct Rle {
  int64_t height = 0;
  int64_t width = 0;
  std::vector<uint32_t> counts;
};

// rleFrPoly: one polygon -> RLE of an h x w mask.
Rle FromPolygon(const Polygon& polygon, int64_t height, int64_t width);

// rleMerge: the union (or intersection) of RLEs of one size.
Rle Merge(const std::vector<Rle>& rles, bool intersect = false);

// rleEncode: a uint8/bool [h, w] mask (row-major, any values; nonzero is 1)
// -> RLE.
Rle Encode(const torch::Tensor& mask);

// rleDecode: RLE -> bool [h, w] tensor (row-major, CPU).
torch::Tensor Decode(const Rle& rle);

// Number of foreground pixels (rleArea).
int64_t Area(const Rle& rle);

// decode(merge(frPyObjects(polygons, h, w))): the union of an object's
// polygons as a bool [h, w] mask; all false when `polygons` is empty (as
// detectron2's polygons_to_bitmask). torchvision's
// decode(frPyObjects(...)).any(dim=2) is the same union.
torch::Tensor PolygonsToMask(const std::vector<Polygon>& polygons,
                             int64_t height, int64_t width);

// detectron2's rasterize_polygons_within_box: polygons shifted by the box's
// top-left corner and scaled by mask_size / max(box side, 0.1) (figured in
// float32 as the reference's box.numpy() does; the polygons stay double),
// then rasterized to a bool [mask_size, mask_size] mask.
torch::Tensor RasterizePolygonsWithinBox(const std::vector<Polygon>& polygons,
                                         const std::array<float, 4>& box_xyxy,
                                         int64_t mask_size);

// PolygonMasks.crop_and_resize: instance i's polygons rasterized within
// boxes[i] (float32 [N, 4] x1, y1, x2, y2, any device). Returns bool
// [N, mask_size, mask_size] on the boxes' device.
torch::Tensor CropAndResize(
    const std::vector<std::vector<Polygon>>& polygons_per_instance,
    const torch::Tensor& boxes, int64_t mask_size);

}  // namespace torchbench::polygon_mask

#endif  // TORCHBENCH_MODELS_COMMON_POLYGON_MASK_H_
