#include "program/slow_op.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <thread>

namespace torchbench {
namespace {

TEST(SlowOpTest, ParsesOperatorAndFactor) {
  auto spec = ParseSlowOp("aten::mm:0.2");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->op, "aten::mm");
  EXPECT_DOUBLE_EQ(spec->extra, 0.2);
  for (const char* bad : {"aten::mm", "mm:0.2", "aten::mm:0", "aten::mm:-1",
                          "aten::mm:x", ":0.2", "aten::mm:1000"}) {
    EXPECT_FALSE(ParseSlowOp(bad).ok()) << bad;
  }
}

// The kernels turn on for the installing thread only, so the check runs on
// a thread of its own and leaves the rest of this process alone.
TEST(SlowOpTest, SlowsOnlyThatOperatorAndKeepsItsResult) {
  torch::manual_seed(0);
  const torch::Tensor a = torch::randn({32, 32});
  const torch::Tensor expected = torch::mm(a, a);
  int64_t after = 0;
  std::thread([&] {
    EXPECT_EQ(InstallSlowOp({"aten::no_such_op", 0.5}).code(),
              absl::StatusCode::kNotFound);
    ASSERT_TRUE(InstallSlowOp({"aten::mm", 0.5}).ok());
    const int64_t before = SlowedCalls();
    const torch::Tensor got = torch::mm(a, a);
    EXPECT_EQ(SlowedCalls(), before + 1);
    EXPECT_TRUE(torch::equal(got, expected));
    (void)torch::add(a, a);
    EXPECT_EQ(SlowedCalls(), before + 1);
    // Through autograd: the forward mm and the one of its backward (a
    // needs no gradient), on the engine's thread.
    const torch::Tensor w = a.clone().requires_grad_();
    torch::mm(w, a).sum().backward();
    EXPECT_EQ(SlowedCalls(), before + 3);
    EXPECT_FALSE(InstallSlowOp({"aten::mm", 0.5}).ok());
    after = SlowedCalls();
  }).join();
  (void)torch::mm(a, a);  // this thread: not slowed
  EXPECT_EQ(SlowedCalls(), after);
}

}  // namespace
}  // namespace torchbench
