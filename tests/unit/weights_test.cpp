// Tests of the safetensors reader on files written byte by byte here, and of
// LoadStateDict's name and shape checks.
#include "torchbench/weights.h"

#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>
#include <torch/types.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace torchbench {
namespace {

// Passes when `text` contains `part`; prints both otherwise.
::testing::AssertionResult Contains(const std::string& text,
                                    const std::string& part) {
  if (text.find(part) != std::string::npos) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "\"" << text << "\" does not contain \"" << part << "\"";
}

std::string TempPath(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) /
          ("safetensors_test_" + name))
      .string();
}

std::string LittleEndian64(uint64_t value) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(value >> (8 * i));
  return out;
}

std::string Bytes(const torch::Tensor& t) {
  torch::Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), c.nbytes());
}

void WriteRaw(const std::string& path, const std::string& contents) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  ASSERT_TRUE(file.good());
}

// Writes a well-formed file: length, header, data.
void WriteSafetensors(const std::string& path, const std::string& header,
                      const std::string& data) {
  WriteRaw(path, LittleEndian64(header.size()) + header + data);
}

// A file with one F32 tensor "x" of `shape`, taking `data`.
std::string OneTensorHeader(const std::string& dtype, const std::string& shape,
                            uint64_t begin, uint64_t end) {
  return "{\"x\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
         ",\"data_offsets\":[" + std::to_string(begin) + "," +
         std::to_string(end) + "]}}";
}

absl::Status ReadStatus(const std::string& path) {
  return ReadSafetensors(path).status();
}

TEST(ReadSafetensorsTest, RoundTripsF32AndI64WithShapes) {
  const torch::Tensor f32 =
      torch::arange(6, torch::kFloat32).reshape({2, 3}) * 0.5 - 1.0;
  const torch::Tensor i64 = torch::tensor(
      std::vector<int64_t>{int64_t{1} << 40, -7, 0, 42}, torch::kInt64);
  const torch::Tensor scalar = torch::tensor(3.25f);
  const std::string header =
      "{\"__metadata__\":{\"format\":\"pt\"},"
      " \"weight\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
      " \"index\":{\"dtype\":\"I64\",\"shape\":[4],\"data_offsets\":[24,56]},"
      " \"scale\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[56,60]},"
      " \"empty\":{\"dtype\":\"F32\",\"shape\":[0,5],\"data_offsets\":[60,60]}"
      "}    ";  // Writers pad the header with spaces.
  const std::string path = TempPath("roundtrip");
  WriteSafetensors(path, header, Bytes(f32) + Bytes(i64) + Bytes(scalar));

  auto tensors = ReadSafetensors(path);
  ASSERT_TRUE(tensors.ok()) << tensors.status();
  ASSERT_EQ(tensors->size(), 4u);
  const torch::Tensor& w = tensors->at("weight");
  EXPECT_EQ(w.scalar_type(), torch::kFloat32);
  EXPECT_EQ(w.sizes(), torch::IntArrayRef({2, 3}));
  EXPECT_TRUE(torch::equal(w, f32));
  const torch::Tensor& idx = tensors->at("index");
  EXPECT_EQ(idx.scalar_type(), torch::kInt64);
  EXPECT_TRUE(torch::equal(idx, i64));
  EXPECT_EQ(tensors->at("scale").dim(), 0);
  EXPECT_EQ(tensors->at("scale").item<float>(), 3.25f);
  EXPECT_EQ(tensors->at("empty").sizes(), torch::IntArrayRef({0, 5}));
}

TEST(ReadSafetensorsTest, ReadsEverySupportedDtype) {
  const std::vector<std::pair<std::string, torch::Tensor>> cases = {
      {"F64", torch::tensor({1.5, -2.25}, torch::kFloat64)},
      {"F16", torch::tensor({1.5, -2.25}).to(torch::kFloat16)},
      {"BF16", torch::tensor({1.5, -2.25}).to(torch::kBFloat16)},
      {"I32", torch::tensor({7, -8}, torch::kInt32)},
      {"I8", torch::tensor({7, -8}, torch::kInt8)},
      {"U8", torch::tensor({7, 250}, torch::kUInt8)},
      {"BOOL", torch::tensor({true, false}, torch::kBool)},
  };
  std::string header = "{";
  std::string data;
  for (const auto& [dtype, t] : cases) {
    if (header.size() > 1) header += ",";
    const size_t begin = data.size();
    data += Bytes(t);
    header += "\"" + dtype + "\":{\"dtype\":\"" + dtype +
              "\",\"shape\":[2],\"data_offsets\":[" + std::to_string(begin) +
              "," + std::to_string(data.size()) + "]}";
  }
  header += "}";
  const std::string path = TempPath("dtypes");
  WriteSafetensors(path, header, data);

  auto tensors = ReadSafetensors(path);
  ASSERT_TRUE(tensors.ok()) << tensors.status();
  for (const auto& [dtype, t] : cases) {
    SCOPED_TRACE(dtype);
    const torch::Tensor& got = tensors->at(dtype);
    EXPECT_EQ(got.scalar_type(), t.scalar_type());
    EXPECT_TRUE(torch::equal(got, t));
  }
}

TEST(ReadSafetensorsTest, MissingFileIsNotFound) {
  absl::Status s = ReadStatus(TempPath("does_not_exist"));
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(Contains(std::string(s.message()), "does_not_exist"));
}

TEST(ReadSafetensorsTest, TruncatedHeaderLength) {
  const std::string path = TempPath("short");
  WriteRaw(path, std::string("\x10\x00\x00", 3));
  absl::Status s = ReadStatus(path);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(std::string(s.message()), "truncated"));
}

TEST(ReadSafetensorsTest, HeaderLengthPastEndOfFile) {
  const std::string path = TempPath("past_eof");
  WriteRaw(path, LittleEndian64(1000) + "{}");
  absl::Status s = ReadStatus(path);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(std::string(s.message()), "past the end"));

  // A huge length must not overflow the bounds check.
  WriteRaw(path, LittleEndian64(~uint64_t{0}) + "{}");
  EXPECT_TRUE(
      Contains(std::string(ReadStatus(path).message()), "past the end"));
}

TEST(ReadSafetensorsTest, InvalidJson) {
  const std::string path = TempPath("bad_json");
  for (const std::string header :
       {"{\"x\":{\"dtype\":\"F32\",", "{\"x\" 1}", "[1,2", "{} trailing",
        "{\"a\":1,\"a\":2}", "{\"x\":01}", "{\"s\":\"\\q\"}", "nul"}) {
    SCOPED_TRACE(header);
    WriteSafetensors(path, header, "");
    absl::Status s = ReadStatus(path);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(Contains(std::string(s.message()), "invalid JSON"));
  }
  // Nesting deep enough to exhaust a naive recursive parser's stack.
  WriteSafetensors(path, std::string(100000, '['), "");
  EXPECT_TRUE(
      Contains(std::string(ReadStatus(path).message()), "nesting too deep"));
}

TEST(ReadSafetensorsTest, HeaderThatIsNotAnObject) {
  const std::string path = TempPath("not_object");
  WriteSafetensors(path, "[1, 2]", "");
  EXPECT_TRUE(
      Contains(std::string(ReadStatus(path).message()), "expected an object"));
}

TEST(ReadSafetensorsTest, OffsetsOutOfRange) {
  const std::string path = TempPath("offsets");
  WriteSafetensors(path, OneTensorHeader("F32", "[4]", 0, 16),
                   std::string(8, '\0'));
  absl::Status s = ReadStatus(path);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(std::string(s.message()), "out of range"));

  WriteSafetensors(path, OneTensorHeader("F32", "[1]", 8, 4),
                   std::string(8, '\0'));
  EXPECT_TRUE(
      Contains(std::string(ReadStatus(path).message()), "out of range"));
}

TEST(ReadSafetensorsTest, OffsetsThatDisagreeWithShapeOrData) {
  const std::string path = TempPath("disagree");
  // 3 floats need 12 bytes, not 8.
  WriteSafetensors(path, OneTensorHeader("F32", "[3]", 0, 8),
                   std::string(8, '\0'));
  EXPECT_TRUE(Contains(std::string(ReadStatus(path).message()), "needs 12"));
  // Data the header does not account for.
  WriteSafetensors(path, OneTensorHeader("F32", "[1]", 0, 4),
                   std::string(8, '\0'));
  EXPECT_TRUE(Contains(std::string(ReadStatus(path).message()), "cover"));
  // A gap before the tensor.
  WriteSafetensors(path, OneTensorHeader("F32", "[1]", 4, 8),
                   std::string(8, '\0'));
  EXPECT_TRUE(Contains(std::string(ReadStatus(path).message()), "gap"));
  // A negative dimension.
  WriteSafetensors(path, OneTensorHeader("F32", "[-1]", 0, 4),
                   std::string(4, '\0'));
  EXPECT_TRUE(
      Contains(std::string(ReadStatus(path).message()), "non-negative"));
}

TEST(ReadSafetensorsTest, UnknownDtype) {
  const std::string path = TempPath("dtype");
  WriteSafetensors(path, OneTensorHeader("F8_E4M3", "[4]", 0, 4),
                   std::string(4, '\0'));
  absl::Status s = ReadStatus(path);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(std::string(s.message()), "unsupported dtype"));
  EXPECT_TRUE(Contains(std::string(s.message()), "F8_E4M3"));
}

TEST(ReadSafetensorsTest, InvalidBoolByte) {
  const std::string path = TempPath("bool");
  WriteSafetensors(path, OneTensorHeader("BOOL", "[2]", 0, 2),
                   std::string("\x01\x07", 2));
  EXPECT_TRUE(
      Contains(std::string(ReadStatus(path).message()), "other than 0 or 1"));
}

class LoadStateDictTest : public ::testing::Test {
 protected:
  std::map<std::string, torch::Tensor> Good() const {
    return {{"weight", torch::full({2, 3}, 0.5)},
            {"bias", torch::tensor({1.0f, -1.0f})}};
  }
  torch::nn::Linear linear_{3, 2};
};

TEST_F(LoadStateDictTest, LoadsByName) {
  ASSERT_TRUE(LoadStateDict(*linear_, Good()).ok());
  EXPECT_TRUE(torch::equal(linear_->weight, torch::full({2, 3}, 0.5)));
  EXPECT_TRUE(torch::equal(linear_->bias, torch::tensor({1.0f, -1.0f})));
  EXPECT_TRUE(linear_->weight.requires_grad());
}

TEST_F(LoadStateDictTest, ConvertsDtype) {
  auto tensors = Good();
  tensors["weight"] = tensors["weight"].to(torch::kFloat64);
  ASSERT_TRUE(LoadStateDict(*linear_, tensors).ok());
  EXPECT_EQ(linear_->weight.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::equal(linear_->weight, torch::full({2, 3}, 0.5)));
}

TEST_F(LoadStateDictTest, MissingKey) {
  auto tensors = Good();
  tensors.erase("bias");
  absl::Status s = LoadStateDict(*linear_, tensors);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(std::string(s.message()), "missing keys 1 (bias)"));
}

TEST_F(LoadStateDictTest, UnexpectedKey) {
  auto tensors = Good();
  tensors["fc.weight"] = torch::zeros({1});
  absl::Status s = LoadStateDict(*linear_, tensors);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(
      Contains(std::string(s.message()), "unexpected keys 1 (fc.weight)"));
}

TEST_F(LoadStateDictTest, ShapeMismatchLeavesModuleUnchanged) {
  const torch::Tensor before = linear_->weight.clone();
  auto tensors = Good();
  tensors["weight"] = torch::zeros({3, 2});
  absl::Status s = LoadStateDict(*linear_, tensors);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(std::string(s.message()), "shape mismatches 1"));
  EXPECT_TRUE(Contains(std::string(s.message()), "weight"));
  EXPECT_TRUE(torch::equal(linear_->weight, before));
}

}  // namespace
}  // namespace torchbench
