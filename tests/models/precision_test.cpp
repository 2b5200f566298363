// Every model and supported mode runs every reduced precision on the CPU at
// the CPU default set's batch (the program's resolution of batch 1), or is
// skipped with the reason its ModelSpec gives: fp16/bf16 run with the module
// and inputs converted (the parameters stay in that dtype and Eval returns
// it), amp_* under autocast with fp32 parameters (fp16 Train through the
// GradScaler). One step each: this proves the precision path, not the
// numbers.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <string>
#include <vector>

#include "model_params.h"
#include "torchbench/torchbench.h"

namespace torchbench {
namespace {

struct PrecisionCase {
  testing::ModelMode model;
  Precision precision;
};

std::vector<PrecisionCase> Cases() {
  std::vector<PrecisionCase> out;
  for (const auto& m : testing::ModelModes()) {
    for (Precision p : {Precision::kBf16, Precision::kAmpBf16, Precision::kFp16,
                        Precision::kAmpFp16}) {
      out.push_back({m, p});
    }
  }
  return out;
}

class PrecisionTest : public ::testing::TestWithParam<PrecisionCase> {};

TEST_P(PrecisionTest, OneStepRunsInThePrecision) {
  const auto& [model, precision] = GetParam();
  const ModelSpec& spec = Registry::Global().Find(model.name)->spec;
  if (!spec.skip_cpu_smoke_test.empty()) {
    GTEST_SKIP() << spec.skip_cpu_smoke_test;
  }
  const bool fp16 =
      precision == Precision::kFp16 || precision == Precision::kAmpFp16;
  const auto& slow = spec.skip_cpu_fp16_test_modes;
  if (fp16 && std::find(slow.begin(), slow.end(), model.mode) != slow.end()) {
    GTEST_SKIP() << spec.skip_cpu_fp16_test_reason;
  }
  if (const std::string* why = spec.UnsupportedReason(precision, torch::kCPU)) {
    GTEST_SKIP() << model.name << " does not run " << PrecisionName(precision)
                 << ": " << *why;
  }
  ModelConfig config;
  config.mode = model.mode;
  config.batch_size = testing::DefaultSetBatchSize(spec, model.mode);
  config.precision = precision;
  auto instance = CreateInstance(model.name, config);
  ASSERT_TRUE(instance.ok()) << instance.status();

  const torch::ScalarType dtype = ParameterDtype(precision);
  for (const auto& p : (*instance)->model().module().parameters()) {
    ASSERT_EQ(p.scalar_type(), dtype) << "a parameter was not converted";
  }
  torch::Tensor out = (*instance)->Step();
  ASSERT_TRUE(out.defined());
  if (out.is_floating_point()) {
    EXPECT_TRUE(torch::isfinite(out).all().item<bool>())
        << "the step returned a non-finite value";
    if (model.mode == Mode::kEval && dtype != torch::kFloat &&
        out.numel() > 1) {
      EXPECT_EQ(out.scalar_type(), dtype) << "Eval computed in another dtype";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllModels, PrecisionTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<PrecisionCase>& p) {
                           return p.param.model.name + "_" +
                                  ModeName(p.param.model.mode) + "_" +
                                  PrecisionName(p.param.precision);
                         });

}  // namespace
}  // namespace torchbench
