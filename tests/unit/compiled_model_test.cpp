#include "program/compiled_model.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"

namespace torchbench {
namespace {

namespace fs = std::filesystem;

TEST(CompiledModelTest, BackendNamesRoundTrip) {
  for (Backend b : {Backend::kEager, Backend::kAoti, Backend::kTorchScript}) {
    EXPECT_EQ(ParseBackend(BackendName(b)), b);
  }
  EXPECT_FALSE(ParseBackend("inductor").has_value());
}

TEST(CompiledModelTest, LargestRelativeErrorIsScaledByTheLargestValue) {
  const torch::Tensor want = torch::tensor({1.0f, -4.0f, 2.0f});
  EXPECT_EQ(LargestRelativeError({want.clone()}, {want}), 0.0);
  const torch::Tensor got = torch::tensor({1.0f, -4.0f, 2.004f});
  EXPECT_NEAR(LargestRelativeError({got}, {want}), 0.004 / 4, 1e-7);
  // Integer outputs are equal or not.
  EXPECT_EQ(
      LargestRelativeError({torch::tensor({1, 2})}, {torch::tensor({1, 3})}),
      1.0);
  EXPECT_TRUE(std::isinf(
      LargestRelativeError({torch::tensor({NAN})}, {torch::tensor({1.0f})})));
  EXPECT_THROW(LargestRelativeError({want}, {want, want}), std::runtime_error);
  EXPECT_THROW(LargestRelativeError({want.view({3, 1})}, {want}),
               std::runtime_error);
}

class ManifestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           absl::StrCat(
               "compiled_",
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "aoti.pt2") << "package";
    host_.torch_version = "2.14.1";
    host_.cpu_flags = {"avx2", "fma"};
    host_.threads = 1;
  }
  void Write(const std::string& manifest) {
    std::ofstream(dir_ / "manifest.json") << manifest;
  }
  static std::string Manifest(const std::string& torch = "2.14.1+cu130",
                              int batch = 1,
                              const std::string& flags = "\"avx2\"",
                              int threads = 1) {
    return absl::StrCat(R"({"format": 1, "model": "resnet18", "batch_size": )",
                        batch, R"(, "device": "cpu", "torch_version": ")",
                        torch, R"(", "threads": )", threads,
                        R"(, "cpu_flags": [)", flags,
                        R"(], "reference": "pip:torchvision",
        "inputs": [{"shape": [1, 3, 8, 8], "dtype": "float32"}],
        "weights_file": null,
        "backends": {"aoti": {"status": "ok", "file": "aoti.pt2"},
                     "torchscript": {"status": "failed", "phase": "trace",
                                     "reason": "tensor-valued if"}}})");
  }
  absl::StatusOr<CompiledManifest> Read(Backend backend = Backend::kAoti,
                                        int64_t batch = 1) {
    return ReadCompiledManifest(dir_.string(), backend, "resnet18", batch,
                                torch::kCPU, host_);
  }
  static void ExpectRefused(const absl::StatusOr<CompiledManifest>& m,
                            const std::string& says) {
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().message().find(says), std::string::npos) << m.status();
    EXPECT_EQ(m.status().message().find('\n'), std::string::npos);
  }
  fs::path dir_;
  CompiledHost host_;
};

TEST_F(ManifestTest, ReadsAGoodManifest) {
  Write(Manifest());
  auto m = Read();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->package_file, "aoti.pt2");
  EXPECT_EQ(m->input_shapes, (std::vector<std::vector<int64_t>>{{1, 3, 8, 8}}));
  EXPECT_EQ(m->reference, "pip:torchvision");
  EXPECT_EQ(m->weights_file, "");
  EXPECT_TRUE(m->eager_repeatable);
  std::string random = Manifest();
  random.insert(1, "\"eager_repeatable\": false, ");
  Write(random);
  m = Read();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_FALSE(m->eager_repeatable);
  EXPECT_EQ(CompiledDirectory("/c", "resnet18", 4), "/c/resnet18/batch_size_4");
}

TEST_F(ManifestTest, RefusesWhatCannotRunHere) {
  ExpectRefused(Read(), "manifest.json is missing");
  Write("{\"format\": 1, \"model\": ");
  ExpectRefused(Read(), "is not a manifest");
  Write(Manifest());
  ExpectRefused(Read(Backend::kTorchScript),
                "torchscript compile failed (trace): tensor-valued if");
  ExpectRefused(Read(Backend::kAoti, 2), "compiled for batch 1, not 2");
  Write(Manifest("2.11.0+cu130"));
  ExpectRefused(Read(), "made by torch 2.11.0+cu130");
  Write(Manifest("2.14.1", 1, "\"avx2\", \"avx512f\""));
  ExpectRefused(Read(), "a CPU with avx512f, which this one lacks");
  Write(Manifest("2.14.1", 1, "\"avx2\"", 2));
  ExpectRefused(Read(), "compiled at 2 intra-op thread(s) and this run has 1");
  Write(Manifest());
  fs::remove(dir_ / "aoti.pt2");
  ExpectRefused(Read(), "which is not in");
}

}  // namespace
}  // namespace torchbench
