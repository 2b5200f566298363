#include "program/progress.h"

#include <gtest/gtest.h>

namespace torchbench {
namespace {

TEST(ProgressTest, CountsElapsedAndEstimatesTheRest) {
  Progress progress(4);
  EXPECT_EQ(progress.Finished("a/Eval/batch_size:1", 10),
            "[1/4] a/Eval/batch_size:1 · 10.0 s · elapsed 0:10 · about 0:30 "
            "left");
  EXPECT_EQ(progress.Finished("b/Eval/batch_size:1", 50),
            "[2/4] b/Eval/batch_size:1 · 50.0 s · elapsed 1:00 · about 1:00 "
            "left");
  progress.Finished("c/Eval/batch_size:1", 0.5);
  // The last line has nothing left to estimate.
  EXPECT_EQ(progress.Finished("d/Train/batch_size:1", 3600),
            "[4/4] d/Train/batch_size:1 · 3600.0 s · elapsed 1:01:01");
}

TEST(ProgressTest, FormatsDurations) {
  EXPECT_EQ(FormatDuration(0), "0:00");
  EXPECT_EQ(FormatDuration(59.6), "1:00");
  EXPECT_EQ(FormatDuration(3599), "59:59");
  EXPECT_EQ(FormatDuration(3600 * 2 + 61), "2:01:01");
  EXPECT_EQ(FormatDuration(-3), "0:00");
}

}  // namespace
}  // namespace torchbench
