// models/common/coco_synthetic.h against its Python twin
// (tools/golden/coco_synthetic.py, figures printed with %.17g): the golden
// adapters of the detection models see exactly these images and objects.
#include "common/coco_synthetic.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace torchbench::coco_synthetic {
namespace {

TEST(CocoSyntheticTest, ImageZeroMatchesPython) {
  const ImageInfo info = MakeImageInfo(0);
  EXPECT_EQ(info.height, 480);
  EXPECT_EQ(info.width, 640);
  ASSERT_EQ(info.annotations.size(), 7u);
  const Annotation& first = info.annotations[0];
  EXPECT_EQ(first.category_id, 41);
  EXPECT_EQ(first.contiguous_label, 36);
  EXPECT_EQ(first.bbox_xywh[0], 577.92999999999995);
  EXPECT_EQ(first.bbox_xywh[1], 184.36000000000001);
  EXPECT_EQ(first.bbox_xywh[2], 24.490000000000009);
  EXPECT_EQ(first.bbox_xywh[3], 18.469999999999999);
  EXPECT_EQ(first.polygon.size(), 24u);
  EXPECT_EQ(first.area, 339.35754999999335);
  const Annotation& large = info.annotations[5];
  EXPECT_EQ(large.category_id, 37);
  EXPECT_EQ(large.bbox_xywh[2], 444.37000000000006);
  EXPECT_EQ(large.polygon.size(), 30u);
  EXPECT_EQ(large.area, 97606.390649999987);
  EXPECT_EQ(MakeImagePixels(0).to(torch::kLong).sum().item<int64_t>(),
            117484551);
}

TEST(CocoSyntheticTest, OtherSizesMatchPython) {
  const ImageInfo seven = MakeImageInfo(7);
  EXPECT_EQ(seven.height, 612);
  EXPECT_EQ(seven.width, 612);
  EXPECT_EQ(seven.annotations[6].bbox_xywh[0], 1.0);  // clamped to the image
  EXPECT_EQ(seven.annotations[6].area, 174153.89240000001);
  const ImageInfo last = MakeImageInfo(kNumImages - 1);
  EXPECT_EQ(last.height, 640);
  EXPECT_EQ(last.width, 428);
  EXPECT_EQ(last.annotations[4].category_id, 10);
  EXPECT_EQ(last.annotations[4].area, 2241.8223500000004);
  EXPECT_EQ(
      MakeImagePixels(kNumImages - 1).to(torch::kLong).sum().item<int64_t>(),
      104709018);
}

TEST(CocoSyntheticTest, BoxesAreTightAndScaled) {
  const ImageInfo info = MakeImageInfo(0);
  const torch::Tensor boxes = BoxesXyxy(info, 2.0, 0.5);
  ASSERT_EQ(boxes.sizes(), (std::vector<int64_t>{7, 4}));
  EXPECT_FLOAT_EQ(boxes[0][0].item<float>(), 577.93f * 2);
  EXPECT_FLOAT_EQ(boxes[0][3].item<float>(), (184.36f + 18.47f) * 0.5f);
  EXPECT_THROW(MakeImageInfo(kNumImages), c10::Error);
}

}  // namespace
}  // namespace torchbench::coco_synthetic
