// models/common/polygon_mask.h against pycocotools 2.0.11 and detectron2's
// rasterize_polygons_within_box / PolygonMasks.crop_and_resize
// (tests/golden/polygon_mask.golden, made by
// tools/golden/make_polygon_mask_golden.py): every mask must be the
// reference's, pixel for pixel.
#include "common/polygon_mask.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/coco_synthetic.h"

namespace torchbench::polygon_mask {
namespace {

// What the golden file records of a mask's RLE.
struct ExpectedRle {
  size_t runs = 0;
  uint64_t hash = 0;
  int64_t area = 0;
  std::vector<uint32_t> counts;  // only when short
};

uint64_t Fnv1a(const std::vector<uint32_t>& counts) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (const uint32_t c : counts) {
    for (int byte = 0; byte < 4; ++byte) {
      h ^= (c >> (8 * byte)) & 0xFFu;
      h *= 0x100000001B3ull;
    }
  }
  return h;
}

ExpectedRle ParseRle(const std::string& line) {
  std::istringstream in(line);
  std::string tag, hash;
  ExpectedRle e;
  in >> tag >> e.runs >> hash >> e.area;
  EXPECT_EQ(tag, "rle") << line;
  e.hash = std::stoull(hash, nullptr, 16);
  for (uint32_t c; in >> c;) e.counts.push_back(c);
  return e;
}

// Empty when `actual` is the expected RLE, else what differs.
std::string Compare(const ExpectedRle& e, const Rle& actual) {
  std::ostringstream out;
  if (actual.counts.size() != e.runs) {
    out << "runs " << actual.counts.size() << " != " << e.runs << "; ";
  }
  if (Fnv1a(actual.counts) != e.hash) out << "run hash differs; ";
  if (Area(actual) != e.area) {
    out << "area " << Area(actual) << " != " << e.area << "; ";
  }
  if (!e.counts.empty() && actual.counts != e.counts) {
    out << "runs differ: got";
    for (const uint32_t c : actual.counts) out << " " << c;
  }
  return out.str();
}

std::vector<double> Numbers(std::istringstream& in) {
  std::vector<double> v;
  for (std::string s; in >> s;) v.push_back(std::stod(s));
  return v;
}

std::array<float, 4> Box(const std::vector<double>& v, size_t first) {
  return {static_cast<float>(v[first]), static_cast<float>(v[first + 1]),
          static_cast<float>(v[first + 2]), static_cast<float>(v[first + 3])};
}

std::vector<std::string> GoldenLines() {
  std::ifstream file(std::string(TORCHBENCH_TEST_GOLDEN_DIR) +
                     "/polygon_mask.golden");
  EXPECT_TRUE(file.good()) << "tests/golden/polygon_mask.golden missing";
  std::vector<std::string> lines;
  for (std::string line; std::getline(file, line);) lines.push_back(line);
  return lines;
}

TEST(PolygonMaskTest, MatchesPycocotoolsAndDetectron2) {
  const std::vector<std::string> lines = GoldenLines();
  ASSERT_GT(lines.size(), 2u);
  ASSERT_EQ(lines[0], "polygon-mask-golden 1");
  int checked = 0, failed = 0;
  const auto check = [&](const std::string& what, const std::string& rle_line,
                         const Rle& actual) {
    ++checked;
    const std::string diff = Compare(ParseRle(rle_line), actual);
    if (!diff.empty() && ++failed <= 20) ADD_FAILURE() << what << ": " << diff;
  };
  std::vector<Polygon> polygons;
  int64_t height = 0, width = 0;
  std::map<int, std::vector<std::array<float, 4>>> coco_boxes;
  std::map<int, std::vector<std::string>> coco_expected;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::istringstream in(lines[i]);
    std::string tag;
    in >> tag;
    if (tag == "case") {
      int id = 0, count = 0;
      in >> id >> height >> width >> count;
      polygons.clear();
      for (int p = 0; p < count; ++p) {
        std::istringstream poly(lines[++i]);
        std::string poly_tag;
        size_t n = 0;
        poly >> poly_tag >> n;
        polygons.push_back(Numbers(poly));
        ASSERT_EQ(polygons.back().size(), n) << lines[i];
      }
      std::vector<Rle> rles;
      for (const Polygon& p : polygons) {
        rles.push_back(FromPolygon(p, height, width));
      }
      const Rle merged = Merge(rles);
      const torch::Tensor mask = PolygonsToMask(polygons, height, width);
      ASSERT_EQ(mask.sizes(), (std::vector<int64_t>{height, width}));
      check("case " + std::to_string(id), lines[i + 1], merged);
      check("case " + std::to_string(id) + " decoded", lines[i + 1],
            Encode(mask));
      ++i;
    } else if (tag == "crop") {
      const std::vector<double> v = Numbers(in);
      const auto size = static_cast<int64_t>(v[0]);
      const torch::Tensor mask =
          RasterizePolygonsWithinBox(polygons, Box(v, 1), size);
      ASSERT_EQ(mask.scalar_type(), torch::kBool);
      check("crop of " + lines[i], lines[i + 1], Encode(mask));
      ++i;
    } else if (tag == "coco") {
      const std::vector<double> v = Numbers(in);
      const int image = static_cast<int>(v[0]);
      const int object = static_cast<int>(v[1]);
      if (v[2] == 0) {
        const coco_synthetic::ImageInfo info =
            coco_synthetic::MakeImageInfo(image);
        check("coco " + std::to_string(image) + "/" + std::to_string(object),
              lines[i + 1],
              Encode(PolygonsToMask({info.annotations[object].polygon},
                                    info.height, info.width)));
      } else {
        coco_boxes[image].push_back(Box(v, 3));
        coco_expected[image].push_back(lines[i + 1]);
      }
      ++i;
    }
  }
  // Each image's objects through CropAndResize at once, as Mask R-CNN's
  // loss builds its targets.
  for (const auto& [image, boxes] : coco_boxes) {
    const coco_synthetic::ImageInfo info = coco_synthetic::MakeImageInfo(image);
    std::vector<std::vector<Polygon>> instances;
    for (const auto& a : info.annotations) instances.push_back({a.polygon});
    const torch::Tensor box_tensor =
        torch::from_blob(const_cast<float*>(boxes[0].data()),
                         {static_cast<int64_t>(boxes.size()), 4}, torch::kFloat)
            .clone();
    const torch::Tensor masks = CropAndResize(instances, box_tensor, 28);
    ASSERT_EQ(masks.sizes(), (std::vector<int64_t>{
                                 static_cast<int64_t>(boxes.size()), 28, 28}));
    for (size_t j = 0; j < boxes.size(); ++j) {
      check("coco crop " + std::to_string(image) + "/" + std::to_string(j),
            coco_expected[image][j], Encode(masks[static_cast<int64_t>(j)]));
    }
  }
  EXPECT_EQ(failed, 0) << failed << " of " << checked << " masks differ";
  EXPECT_GT(checked, 1000);
}

TEST(PolygonMaskTest, EncodeDecodeRoundTrip) {
  const torch::Tensor mask = torch::rand({7, 5}).gt(0.5);
  const Rle rle = Encode(mask);
  EXPECT_TRUE(torch::equal(Decode(rle), mask));
  EXPECT_EQ(Area(rle), mask.sum().item<int64_t>());
  // A mask whose first pixel is set starts with an empty run of 0s.
  EXPECT_EQ(Encode(torch::ones({2, 2}, torch::kBool)).counts,
            (std::vector<uint32_t>{0, 4}));
}

TEST(PolygonMaskTest, EmptyInputs) {
  EXPECT_FALSE(PolygonsToMask({}, 3, 4).any().item<bool>());
  EXPECT_EQ(PolygonsToMask({}, 3, 4).sizes(), (std::vector<int64_t>{3, 4}));
  const torch::Tensor none =
      CropAndResize({}, torch::zeros({0, 4}, torch::kFloat), 28);
  EXPECT_EQ(none.sizes(), (std::vector<int64_t>{0, 28, 28}));
  EXPECT_EQ(none.scalar_type(), torch::kBool);
  // A square covering pixels 1..2 in both directions.
  const torch::Tensor square = PolygonsToMask({{1, 1, 3, 1, 3, 3, 1, 3}}, 4, 4);
  EXPECT_EQ(square.sum().item<int64_t>(), 4);
  EXPECT_TRUE(square[1][1].item<bool>() && square[2][2].item<bool>());
}

}  // namespace
}  // namespace torchbench::polygon_mask
