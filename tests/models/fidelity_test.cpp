// Compares every model that names a Python reference package
// (ModelSpec::python_reference) with that package: the reference's weights
// are loaded into the port by state_dict name, and the port's Forward() must
// reproduce the reference's eval() and train() outputs on the same input.
//
// Environment (set by CTest):
//   TORCHBENCH_REFERENCE_DIR  where reference files are kept (and made).
//   TORCHBENCH_PYTHON         the Python that runs tools/make_reference.py.
//   TORCHBENCH_SOURCE_DIR     the source tree holding tools/.
// Reference files already in TORCHBENCH_REFERENCE_DIR are reused when their
// format_version is kReferenceFormatVersion, and remade otherwise.
#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "test_paths.h"
#include "torchbench/checks.h"
#include "torchbench/golden.h"
#include "torchbench/registry.h"
#include "torchbench/weights.h"

namespace torchbench {
namespace {

constexpr double kMaxRelativeError = 1e-4;
constexpr int kReferenceSeed = 0;
// make_reference.py's FORMAT_VERSION: bumped with any change to what it
// writes, so that a reference cached by an older script is remade rather
// than compared against.
constexpr int64_t kReferenceFormatVersion = 3;

// A reference output must carry signal, or any port matches it: fresh
// batch-norm statistics once faded mobilenet_v2's eval output to ~1e-9,
// where a wrong activation still scored a relative error of 0. So max |ref|
// must reach kMinReferenceMax, and the spread (see Spread) must reach
// kMinRelativeSpread, 10x kMaxRelativeError, so that a port losing the
// input-dependent part of the output (e.g. only biases reaching it) errs
// well past the tolerance. The randomised references give max |ref| >= 0.03
// and spreads >= 1.5e-3 (squeezenet1_1: noise images differ little once
// globally pooled).
constexpr double kMinReferenceMax = 1e-3;
constexpr double kMinRelativeSpread = 10 * kMaxRelativeError;

std::vector<std::string> ModelsWithReference() {
  std::vector<std::string> names;
  for (const RegisteredModel* m : Registry::Global().List()) {
    if (!m->spec.checks.python_reference.empty()) names.push_back(m->spec.name);
  }
  return names;
}

// Returns the environment's value of `name`, else the build's default for it
// (tests/models/test_paths.h.in), so the test also runs outside CTest.
std::string TestSetting(const char* name) {
  const char* value = std::getenv(name);
  if (value != nullptr) return value;
  const std::string key = name;
  if (key == "TORCHBENCH_REFERENCE_DIR") return kDefaultReferenceDir;
  if (key == "TORCHBENCH_PYTHON") return kDefaultPython;
  if (key == "TORCHBENCH_SOURCE_DIR") return kDefaultSourceDir;
  return "";
}

// The file stem make_reference.py uses: "<package>_<name>", with anything
// outside [A-Za-z0-9._-] replaced by '_'.
std::string FileStem(const std::string& reference) {
  std::string stem = reference;
  for (char& c : stem) {
    const bool keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                      c == '-';
    if (!keep) c = '_';
  }
  return stem;
}

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string JoinShape(const std::vector<int64_t>& shape) {
  std::string out;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ",";
    out += std::to_string(shape[i]);
  }
  return out;
}

// max|actual - expected| / max|expected|, in double.
double RelativeError(const torch::Tensor& actual,
                     const torch::Tensor& expected) {
  torch::Tensor a = actual.to(torch::kDouble);
  torch::Tensor e = expected.to(torch::kDouble);
  const double scale = e.abs().max().item<double>();
  const double diff = (a - e).abs().max().item<double>();
  return scale > 0 ? diff / scale : diff;
}

// How much the output varies between the batch's samples: the RMS of its
// deviation from the batch mean, over max |expected|.
double Spread(const torch::Tensor& expected) {
  torch::Tensor e = expected.to(torch::kDouble);
  const double scale = e.abs().max().item<double>();
  const double rms = (e - e.mean(/*dim=*/{0}, /*keepdim=*/true))
                         .pow(2)
                         .mean()
                         .sqrt()
                         .item<double>();
  return scale > 0 ? rms / scale : 0.0;
}

// The io file's format_version, or -1 when it has none.
int64_t FormatVersion(const std::map<std::string, torch::Tensor>& io) {
  auto it = io.find("format_version");
  if (it == io.end() || it->second.numel() != 1) return -1;
  return it->second.to(torch::kLong).item<int64_t>();
}

class FidelityTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FidelityTest, MatchesPythonReference) {
  const RegisteredModel* entry = Registry::Global().Find(GetParam());
  ASSERT_NE(entry, nullptr);
  const ModelSpec& spec = entry->spec;
  ASSERT_FALSE(spec.checks.reference_input_shape.empty())
      << spec.name << " sets python_reference but no reference_input_shape";
  ASSERT_GE(spec.checks.reference_input_shape[0], 2)
      << spec.name << ": Spread() needs a reference batch of two or more";

  const std::string reference_dir = TestSetting("TORCHBENCH_REFERENCE_DIR");
  ASSERT_FALSE(reference_dir.empty()) << "TORCHBENCH_REFERENCE_DIR is not set";
  const std::string stem = (std::filesystem::path(reference_dir) /
                            FileStem(spec.checks.python_reference))
                               .string();
  const std::string weights_path = stem + ".weights.safetensors";
  const std::string io_path = stem + ".io.safetensors";

  absl::StatusOr<std::map<std::string, torch::Tensor>> io =
      absl::NotFoundError(io_path);
  if (std::filesystem::exists(io_path) &&
      std::filesystem::exists(weights_path)) {
    io = ReadSafetensors(io_path);
  }
  if (!io.ok() || FormatVersion(*io) != kReferenceFormatVersion) {
    const std::string python = TestSetting("TORCHBENCH_PYTHON");
    const std::string source = TestSetting("TORCHBENCH_SOURCE_DIR");
    ASSERT_FALSE(python.empty() || source.empty())
        << io_path
        << " is absent or stale and TORCHBENCH_PYTHON / TORCHBENCH_SOURCE_DIR "
           "are not both set to make it";
    const std::string command =
        ShellQuote(python) + " " +
        ShellQuote(source + "/tools/make_reference.py") + " --reference " +
        ShellQuote(spec.checks.python_reference) + " --input-shape " +
        JoinShape(spec.checks.reference_input_shape) + " --seed " +
        std::to_string(kReferenceSeed) + " --out " + ShellQuote(reference_dir);
    ASSERT_EQ(std::system(command.c_str()), 0) << "failed: " << command;
    io = ReadSafetensors(io_path);
    ASSERT_TRUE(io.ok()) << io.status();
    ASSERT_EQ(FormatVersion(*io), kReferenceFormatVersion)
        << io_path << " was made by a make_reference.py of another "
        << "format_version; bump kReferenceFormatVersion with FORMAT_VERSION";
  }

  absl::StatusOr<std::map<std::string, torch::Tensor>> weights =
      ReadSafetensors(weights_path);
  ASSERT_TRUE(weights.ok()) << weights.status();
  for (const char* key : {"input", "eval_output", "train_output"}) {
    ASSERT_EQ(io->count(key), 1u) << io_path << " has no '" << key << "'";
  }
  const torch::Tensor& input = io->at("input");
  ASSERT_EQ(input.sizes(),
            torch::IntArrayRef(spec.checks.reference_input_shape))
      << io_path << " was made for another input shape; delete it";

  ModelConfig config;
  config.mode = Mode::kEval;
  config.batch_size = spec.checks.reference_input_shape[0];
  config.device = torch::kCPU;
  std::unique_ptr<Model> model = entry->Create(config);
  absl::Status loaded = LoadStateDict(model->module(), *weights);
  ASSERT_TRUE(loaded.ok()) << loaded;

  auto* check = dynamic_cast<FidelityCheck*>(model.get());
  ASSERT_NE(check, nullptr)
      << spec.name << " names a python_reference but does "
      << "not implement FidelityCheck";
  torch::NoGradGuard no_grad;
  struct Case {
    const char* name;
    bool train;
    const char* key;
  };
  // Eval first: the train() forward moves batch-norm running stats.
  for (const Case& c : {Case{"eval", false, "eval_output"},
                        Case{"train", true, "train_output"}}) {
    model->module().train(c.train);
    if (c.train) TurnOffDropout(model->module());
    torch::Tensor output = check->Forward({input});
    const torch::Tensor& expected = io->at(c.key);
    ASSERT_EQ(output.sizes(), expected.sizes()) << c.name << " output shape";
    ASSERT_TRUE(torch::isfinite(output).all().item<bool>())
        << c.name << " output is not finite";
    const double error = RelativeError(output, expected);
    const double reference_max = expected.abs().max().item<double>();
    const double spread = Spread(expected);
    std::printf(
        "[fidelity] %s %s: relative error %.3e (max |ref| %.4g, spread "
        "%.3g)\n",
        spec.name.c_str(), c.name, error, reference_max, spread);
    RecordProperty(std::string(c.name) + "_relative_error",
                   std::to_string(error));
    EXPECT_TRUE(std::isfinite(reference_max) &&
                reference_max >= kMinReferenceMax)
        << spec.name << " " << c.name << " reference is degenerate: max |ref| "
        << reference_max << " < " << kMinReferenceMax
        << ", so any port would match it";
    EXPECT_GE(spread, kMinRelativeSpread)
        << spec.name << " " << c.name << " reference is degenerate: spread "
        << spread << " < " << kMinRelativeSpread
        << ", so the output barely depends on the input";
    EXPECT_LE(error, kMaxRelativeError)
        << spec.name << " " << c.name << " output differs from "
        << spec.checks.python_reference;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Registry, FidelityTest, ::testing::ValuesIn(ModelsWithReference()),
    [](const ::testing::TestParamInfo<std::string>& param_info) {
      std::string name = param_info.param;
      for (char& c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(FidelityTest);

}  // namespace
}  // namespace torchbench
