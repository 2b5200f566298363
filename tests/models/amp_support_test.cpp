// Every model's ModelSpec::enable_amp is TorchBench's (whether its Model
// class or its family's base class has enable_amp(), as
// tools/golden/amp_support.py read them into tests/golden/amp_support.txt),
// and the harness refuses amp Train on CUDA exactly where TorchBench's
// check_precision does: the others, since no model is a staged train test.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "test_paths.h"
#include "torchbench/torchbench.h"

namespace torchbench {
namespace {

// model -> whether TorchBench allows amp Train (enable_amp or staged).
std::map<std::string, bool> ReadAmpSupport() {
  const char* source = std::getenv("TORCHBENCH_SOURCE_DIR");
  const std::filesystem::path path =
      std::filesystem::path(source != nullptr ? source : kDefaultSourceDir) /
      "tests" / "golden" / "amp_support.txt";
  std::ifstream in(path);
  std::map<std::string, bool> table;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name, enable_amp, staged;
    fields >> name >> enable_amp >> staged;
    table[name] = enable_amp == "true" || staged == "true";
  }
  return table;
}

TEST(AmpSupportTest, EveryModelHasTorchBenchsEnableAmp) {
  const auto table = ReadAmpSupport();
  ASSERT_FALSE(table.empty()) << "tests/golden/amp_support.txt not found";
  for (const RegisteredModel* entry : Registry::Global().List()) {
    const ModelSpec& spec = entry->spec;
    const auto it = table.find(spec.name);
    ASSERT_NE(it, table.end()) << spec.name << " is not in amp_support.txt";
    EXPECT_EQ(spec.enable_amp, it->second) << spec.name << " enable_amp";
    // A GradScaler comes only from a model's own enable_amp().
    if (spec.amp_grad_scaler != AmpGradScaler::kNone) {
      EXPECT_TRUE(spec.enable_amp) << spec.name;
    }
  }
}

TEST(AmpSupportTest, AmpTrainOnCudaOnlyWhereTorchBenchRunsIt) {
  const c10::Device cuda(c10::kCUDA, 0);  // A device name; no GPU needed.
  const c10::Device cpu(c10::kCPU);
  for (const RegisteredModel* entry : Registry::Global().List()) {
    const ModelSpec& spec = entry->spec;
    for (Precision amp : {Precision::kAmpFp16, Precision::kAmpBf16}) {
      const std::string* why = spec.UnsupportedReason(amp, Mode::kTrain, cuda);
      if (!spec.enable_amp) {
        ASSERT_NE(why, nullptr) << spec.name << " " << PrecisionName(amp);
      } else if (why != nullptr) {
        // Only a limit of the model's own may refuse it.
        EXPECT_EQ(why->find("enable_amp"), std::string::npos)
            << spec.name << ": " << *why;
      }
      // Eval, and the CPU, are never refused for want of enable_amp().
      for (const auto& [mode, device] :
           {std::pair{Mode::kEval, cuda}, std::pair{Mode::kTrain, cpu}}) {
        const std::string* other = spec.UnsupportedReason(amp, mode, device);
        if (other != nullptr) {
          EXPECT_EQ(other->find("enable_amp()"), std::string::npos)
              << spec.name << ": " << *other;
        }
      }
    }
    // Not an amp precision: never this rule.
    const std::string* fp16 =
        spec.UnsupportedReason(Precision::kFp16, Mode::kTrain, cuda);
    if (fp16 != nullptr) {
      EXPECT_EQ(fp16->find("enable_amp()"), std::string::npos) << spec.name;
    }
  }
}

}  // namespace
}  // namespace torchbench
