#include "common/polygon_mask.h"

#include <torch/torch.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <utility>

namespace torchbench::polygon_mask {
namespace {

// pycocotools works on a grid 5 times finer than the pixels.
constexpr double kUpsample = 5.0;

// C's (int)(v + .5): rounds half up for v >= 0 but truncates toward zero, so
// -0.7 -> 0 and -1.2 -> 0 (not -1): the reference's rounding, kept.
int CRoundHalf(double v) { return static_cast<int>(v + .5); }

// One point of the dense boundary on the fine grid.
struct FinePoint {
  int u;  // x
  int v;  // y
};

// The boundary of the polygon on the fine grid: every edge walked one step
// per unit of its longer axis, listed from its first vertex to its second,
// but with the minor axis interpolated from the end with the smaller major
// coordinate (as the reference does), so the rounding does not depend on the
// edge's direction.
std::vector<FinePoint> DenseBoundary(const std::vector<int>& xs,
                                     const std::vector<int>& ys) {
  const size_t vertices = xs.size() - 1;  // xs/ys repeat vertex 0 at the end
  std::vector<FinePoint> points;
  for (size_t j = 0; j < vertices; ++j) {
    int x0 = xs[j], x1 = xs[j + 1], y0 = ys[j], y1 = ys[j + 1];
    const int dx = std::abs(x1 - x0);
    const int dy = std::abs(y0 - y1);
    const bool along_x = dx >= dy;
    const bool reversed = along_x ? x0 > x1 : y0 > y1;
    if (reversed) {
      std::swap(x0, x1);
      std::swap(y0, y1);
    }
    if (along_x && dx == 0) {
      // A repeated vertex: the reference divides 0 by 0 and converts NaN to
      // int, which x86-64 (cvttsd2si) turns into INT_MIN. The point's x
      // equals its neighbours', so its y is never read; kept for parity.
      points.push_back({x0, INT_MIN});
      continue;
    }
    if (along_x) {
      const double slope = static_cast<double>(y1 - y0) / dx;
      for (int d = 0; d <= dx; ++d) {
        const int t = reversed ? dx - d : d;
        const double exact = static_cast<double>(y0) + slope * t;
        points.push_back({x0 + t, CRoundHalf(exact)});
      }
    } else {
      const double slope = static_cast<double>(x1 - x0) / dy;
      for (int d = 0; d <= dy; ++d) {
        const int t = reversed ? dy - d : d;
        const double exact = static_cast<double>(x0) + slope * t;
        points.push_back({CRoundHalf(exact), y0 + t});
      }
    }
  }
  return points;
}

}  // namespace

Rle FromPolygon(const Polygon& polygon, int64_t height, int64_t width) {
  TORCH_CHECK(height > 0 && width > 0, "polygon_mask: empty mask size ", height,
              "x", width);
  const size_t vertices = polygon.size() / 2;
  TORCH_CHECK(vertices >= 1, "polygon_mask: a polygon needs coordinates");
  std::vector<int> xs(vertices + 1), ys(vertices + 1);
  for (size_t j = 0; j < vertices; ++j) {
    xs[j] = CRoundHalf(kUpsample * polygon[2 * j]);
    ys[j] = CRoundHalf(kUpsample * polygon[2 * j + 1]);
  }
  xs[vertices] = xs[0];
  ys[vertices] = ys[0];
  const std::vector<FinePoint> boundary = DenseBoundary(xs, ys);

  // Where the boundary crosses a pixel-centre column (x + .5 on the fine
  // grid divided by 5 an integer), the pixel rows from the crossing's y down
  // flip in and out of the mask: collect those column-major start indices.
  const auto h = static_cast<double>(height);
  std::vector<uint32_t> flips;
  for (size_t j = 1; j < boundary.size(); ++j) {
    const FinePoint& cur = boundary[j];
    const FinePoint& prev = boundary[j - 1];
    if (cur.u == prev.u) continue;
    double xd = cur.u < prev.u ? cur.u : cur.u - 1;
    xd = (xd + .5) / kUpsample - .5;
    if (std::floor(xd) != xd || xd < 0 || xd > static_cast<double>(width - 1)) {
      continue;
    }
    double yd = std::min(cur.v, prev.v);
    yd = (yd + .5) / kUpsample - .5;
    yd = std::ceil(std::clamp(yd, 0.0, h));
    flips.push_back(
        static_cast<uint32_t>(static_cast<int>(xd) * static_cast<int>(height) +
                              static_cast<int>(yd)));
  }
  flips.push_back(static_cast<uint32_t>(height * width));
  std::sort(flips.begin(), flips.end());

  // Run lengths between consecutive flips; a zero-length run means two flips
  // at one index, which cancel: the run after them joins the one before.
  uint32_t previous = 0;
  for (uint32_t& f : flips) {
    const uint32_t at = f;
    f -= previous;
    previous = at;
  }
  Rle rle{height, width, {}};
  rle.counts.push_back(flips[0]);
  for (size_t j = 1; j < flips.size();) {
    if (flips[j] > 0) {
      rle.counts.push_back(flips[j++]);
    } else if (++j < flips.size()) {
      rle.counts.back() += flips[j++];
    }
  }
  return rle;
}

Rle Merge(const std::vector<Rle>& rles, bool intersect) {
  if (rles.empty()) return Rle{};
  Rle merged = rles[0];
  for (size_t i = 1; i < rles.size(); ++i) {
    const Rle& b = rles[i];
    if (b.height != merged.height || b.width != merged.width) {
      return Rle{};  // the reference's answer to mismatched sizes
    }
    const std::vector<uint32_t> a = std::move(merged.counts);
    merged.counts.clear();
    // Walk both run lists in lockstep; a run of the result ends where the
    // combined value changes or where both inputs end.
    uint32_t run_a = a[0], run_b = b.counts[0], run = 0;
    size_t next_a = 1, next_b = 1;
    bool in_a = false, in_b = false, value = false;
    for (uint32_t remaining = 1; remaining > 0;) {
      const uint32_t step = std::min(run_a, run_b);
      run += step;
      run_a -= step;
      if (run_a == 0 && next_a < a.size()) {
        run_a = a[next_a++];
        in_a = !in_a;
      }
      run_b -= step;
      if (run_b == 0 && next_b < b.counts.size()) {
        run_b = b.counts[next_b++];
        in_b = !in_b;
      }
      remaining = run_a + run_b;
      const bool before = value;
      value = intersect ? (in_a && in_b) : (in_a || in_b);
      if (value != before || remaining == 0) {
        merged.counts.push_back(run);
        run = 0;
      }
    }
  }
  return merged;
}

Rle Encode(const torch::Tensor& mask) {
  TORCH_CHECK(mask.dim() == 2, "polygon_mask::Encode: want [h, w], got ",
              mask.sizes());
  // Column-major, as pycocotools reads a Fortran-ordered mask.
  const torch::Tensor columns =
      mask.ne(0).t().contiguous().to(torch::kCPU, torch::kUInt8);
  const uint8_t* data = columns.data_ptr<uint8_t>();
  Rle rle{mask.size(0), mask.size(1), {}};
  uint8_t current = 0;
  uint32_t run = 0;
  for (int64_t i = 0; i < columns.numel(); ++i) {
    if (data[i] != current) {
      rle.counts.push_back(run);
      run = 0;
      current = data[i];
    }
    ++run;
  }
  rle.counts.push_back(run);
  return rle;
}

torch::Tensor Decode(const Rle& rle) {
  const int64_t total = rle.height * rle.width;
  torch::Tensor columns = torch::zeros({rle.width, rle.height}, torch::kBool);
  bool* data = columns.data_ptr<bool>();
  int64_t at = 0;
  bool value = false;
  for (const uint32_t count : rle.counts) {
    TORCH_CHECK(at + count <= total,
                "polygon_mask::Decode: invalid RLE (runs exceed ", rle.height,
                "x", rle.width, ")");
    if (value) std::fill(data + at, data + at + count, true);
    at += count;
    value = !value;
  }
  return columns.t().contiguous();
}

int64_t Area(const Rle& rle) {
  int64_t area = 0;
  for (size_t j = 1; j < rle.counts.size(); j += 2) area += rle.counts[j];
  return area;
}

torch::Tensor PolygonsToMask(const std::vector<Polygon>& polygons,
                             int64_t height, int64_t width) {
  if (polygons.empty()) return torch::zeros({height, width}, torch::kBool);
  // frPyObjects reads a list whose first entry has 4 numbers as boxes.
  TORCH_CHECK(polygons[0].size() > 4,
              "polygon_mask: a polygon needs at least 3 points, got ",
              polygons[0].size(), " coordinates");
  std::vector<Rle> rles;
  rles.reserve(polygons.size());
  for (const Polygon& polygon : polygons) {
    rles.push_back(FromPolygon(polygon, height, width));
  }
  return Decode(Merge(rles));
}

torch::Tensor RasterizePolygonsWithinBox(const std::vector<Polygon>& polygons,
                                         const std::array<float, 4>& box_xyxy,
                                         int64_t mask_size) {
  // The box is a float32 numpy array in the reference: its sides and the
  // ratios are float32 (mask_size / np.float32), except that max(side, 0.1)
  // yields the Python float 0.1 for a side below float32(0.1).
  const float w = box_xyxy[2] - box_xyxy[0];
  const float h = box_xyxy[3] - box_xyxy[1];
  const auto ratio = [mask_size](float side) -> double {
    if (side < 0.1f) return static_cast<double>(mask_size) / 0.1;
    return static_cast<double>(static_cast<float>(mask_size) / side);
  };
  const double ratio_w = ratio(w);
  const double ratio_h = ratio(h);
  std::vector<Polygon> scaled = polygons;
  for (Polygon& p : scaled) {
    for (size_t i = 0; i + 1 < p.size(); i += 2) {
      p[i] = (p[i] - static_cast<double>(box_xyxy[0])) * ratio_w;
      p[i + 1] = (p[i + 1] - static_cast<double>(box_xyxy[1])) * ratio_h;
    }
  }
  return PolygonsToMask(scaled, mask_size, mask_size);
}

torch::Tensor CropAndResize(
    const std::vector<std::vector<Polygon>>& polygons_per_instance,
    const torch::Tensor& boxes, int64_t mask_size) {
  TORCH_CHECK(boxes.dim() == 2 && boxes.size(1) == 4,
              "polygon_mask::CropAndResize: boxes must be [N, 4], got ",
              boxes.sizes());
  TORCH_CHECK(
      static_cast<int64_t>(polygons_per_instance.size()) == boxes.size(0),
      "polygon_mask::CropAndResize: ", polygons_per_instance.size(),
      " instances but ", boxes.size(0), " boxes");
  if (boxes.size(0) == 0) {
    return torch::empty({0, mask_size, mask_size},
                        boxes.options().dtype(torch::kBool));
  }
  const torch::Tensor cpu_boxes =
      boxes.detach().to(torch::kCPU, torch::kFloat).contiguous();
  const float* b = cpu_boxes.data_ptr<float>();
  std::vector<torch::Tensor> masks;
  masks.reserve(polygons_per_instance.size());
  for (size_t i = 0; i < polygons_per_instance.size(); ++i) {
    const std::array<float, 4> box = {b[4 * i], b[4 * i + 1], b[4 * i + 2],
                                      b[4 * i + 3]};
    masks.push_back(
        RasterizePolygonsWithinBox(polygons_per_instance[i], box, mask_size));
  }
  return torch::stack(masks).to(boxes.device());
}

}  // namespace torchbench::polygon_mask
