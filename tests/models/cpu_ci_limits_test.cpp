#include "cpu_ci_limits.h"

#include <gtest/gtest.h>

#include "torchbench/registry.h"

namespace torchbench::testing {
namespace {

// A limit is for a model that exists, and says why: an entry left behind by
// a rename would skip nothing and hide nothing.
TEST(CpuCiLimitsTest, EveryEntryNamesARegisteredModelAndSaysWhy) {
  for (const auto& [model, limits] : AllCpuCiLimits()) {
    EXPECT_NE(Registry::Global().Find(model), nullptr)
        << model << " is not a registered model";
    EXPECT_FALSE(limits.skip_smoke_test.empty() &&
                 limits.skip_fp16_modes.empty())
        << model << " has an entry that limits nothing";
    EXPECT_EQ(limits.skip_fp16_modes.empty(), limits.skip_fp16_reason.empty())
        << model << ": fp16 modes skipped without a reason, or the reverse";
  }
  EXPECT_TRUE(CpuCiLimitsOf("no_such_model").skip_smoke_test.empty());
}

}  // namespace
}  // namespace torchbench::testing
