// Every registered model is checked against its reference: by the pip
// package (fidelity_test.cpp) when its spec names python_reference, else by
// the golden file its spec names, made from the reference's own code by
// tools/golden/make_golden.py on deterministically filled weights and
// inputs. A model with neither fails unless its spec says why
// (no_reference_check).
#include "torchbench/golden.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

#include "support/golden_file.h"
#include "test_paths.h"
#include "torchbench/checks.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace {

// fp32 as the project's bar; float64 models (pyhpc) are held tighter.
constexpr double kFloat32Tolerance = 1e-4;
constexpr double kFloat64Tolerance = 1e-10;

// The models FidelityTest does not check: one test process each (the
// others would only start to skip, here and under lowered_isa.*).
std::vector<std::string> ModelsWithoutPipReference() {
  std::vector<std::string> names;
  for (const RegisteredModel* m : Registry::Global().List()) {
    if (m->spec.checks.python_reference.empty()) names.push_back(m->spec.name);
  }
  return names;
}

std::string GoldenDir() {
  const char* source = std::getenv("TORCHBENCH_SOURCE_DIR");
  return (std::filesystem::path(source != nullptr ? source
                                                  : kDefaultSourceDir) /
          "tests" / "golden")
      .string();
}

class GoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTest, MatchesTheReference) {
  const ModelSpec& spec = Registry::Global().Find(GetParam())->spec;
  if (spec.checks.golden_file.empty()) {
    ASSERT_FALSE(spec.checks.no_reference_check.empty())
        << spec.name
        << " has neither python_reference nor golden_file, and its spec "
           "does not say why (no_reference_check)";
    GTEST_SKIP() << "no reference check: " << spec.checks.no_reference_check;
  }
  const std::string path =
      (std::filesystem::path(GoldenDir()) / spec.checks.golden_file).string();
  absl::StatusOr<GoldenFile> golden = ReadGoldenFile(path);
  ASSERT_TRUE(golden.ok()) << golden.status();
  ASSERT_EQ(golden->model, spec.name) << path;
  ASSERT_EQ(golden->fill_version, kFillVersion)
      << path << " was made with another fill; run tools/golden/make_golden.py";

  ModelConfig config;
  config.mode = golden->mode == "train" ? Mode::kTrain : Mode::kEval;
  config.batch_size = golden->batch_size;
  config.device = torch::kCPU;
  std::unique_ptr<Model> model =
      Registry::Global().Find(spec.name)->Create(config);
  DeterministicFill(model->module());
  auto* check = dynamic_cast<GoldenCheck*>(model.get());
  ASSERT_NE(check, nullptr) << spec.name << " names " << spec.checks.golden_file
                            << " but does not implement GoldenCheck";
  const std::map<std::string, torch::Tensor> outputs = check->GoldenOutputs();

  const double tolerance =
      golden->dtype == "float64" ? kFloat64Tolerance : kFloat32Tolerance;
  for (const std::string& note : golden->notes) {
    std::printf("[golden] %s: %s\n", spec.name.c_str(), note.c_str());
  }
  for (const auto& [key, summary] : golden->tensors) {
    auto it = outputs.find(key);
    if (it == outputs.end()) {
      ADD_FAILURE() << spec.name << " GoldenOutputs() has no '" << key << "'";
      continue;
    }
    if (summary.quantum > 0) {
      const double steps = GoldenStepError(summary, it->second);
      std::printf("[golden] %s %s: %.2f quantization steps (allowed %.0f)\n",
                  spec.name.c_str(), key.c_str(), steps, summary.allowed_steps);
      EXPECT_LE(steps, summary.allowed_steps)
          << spec.name << " '" << key << "' differs from " << golden->reference
          << " by " << steps << " quantization steps";
      continue;
    }
    const double error = GoldenError(summary, it->second);
    std::printf("[golden] %s %s: relative error %.3e (abs sum %.4g)\n",
                spec.name.c_str(), key.c_str(), error, summary.abs_sum);
    RecordProperty(key + "_relative_error", std::to_string(error));
    EXPECT_LE(error, tolerance)
        << spec.name << " '" << key << "' differs from " << golden->reference;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Registry, GoldenTest, ::testing::ValuesIn(ModelsWithoutPipReference()),
    [](const ::testing::TestParamInfo<std::string>& param_info) {
      std::string name = param_info.param;
      for (char& c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });

}  // namespace
}  // namespace torchbench
