// A self-contained reader of the safetensors format
// (https://github.com/huggingface/safetensors, "Format" section) and a
// by-name state_dict loader. The header is read with nlohmann/json (json.h),
// which LibTorch's headers need anyway.
#include "torchbench/weights.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "json.h"

namespace torchbench {
namespace {

using Json = nlohmann::ordered_json;

// "null", "a boolean", "a number", "a string", "an array", "an object": for
// messages.
std::string KindName(const Json& j) {
  if (j.is_null()) return "null";
  return absl::StrCat(j.is_array() || j.is_object() ? "an " : "a ",
                      j.type_name());
}

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; this reader copies it "
              "byte for byte");

// The reference implementation refuses headers over 100 MB; so do we, so
// that a corrupt length cannot make us allocate gigabytes.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// --- safetensors ------------------------------------------------------------

struct DType {
  const char* name;
  torch::ScalarType type;
  uint64_t item_size;
};

constexpr DType kDTypes[] = {
    {"F32", torch::kFloat32, 4}, {"F64", torch::kFloat64, 8},
    {"F16", torch::kFloat16, 2}, {"BF16", torch::kBFloat16, 2},
    {"I64", torch::kInt64, 8},   {"I32", torch::kInt32, 4},
    {"I8", torch::kInt8, 1},     {"U8", torch::kUInt8, 1},
    {"BOOL", torch::kBool, 1},
};

const DType* FindDType(const std::string& name) {
  for (const DType& d : kDTypes) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

struct TensorEntry {
  std::string name;
  const DType* dtype = nullptr;
  std::vector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

// Validates one header entry against the data section's size.
absl::StatusOr<TensorEntry> ParseEntry(const std::string& name,
                                       const Json& info, uint64_t data_size) {
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor \"", name, "\": ", what));
  };
  if (!info.is_object()) {
    return bad(
        absl::StrCat("entry is ", KindName(info), ", expected an object"));
  }
  const auto dtype = info.find("dtype");
  const auto shape = info.find("shape");
  const auto offsets = info.find("data_offsets");
  if (dtype == info.end() || shape == info.end() || offsets == info.end()) {
    return bad("needs \"dtype\", \"shape\" and \"data_offsets\"");
  }
  TensorEntry entry;
  entry.name = name;
  if (!dtype->is_string()) return bad("dtype is not a string");
  const std::string& dtype_name = dtype->get_ref<const std::string&>();
  entry.dtype = FindDType(dtype_name);
  if (entry.dtype == nullptr) {
    return bad(absl::StrCat(
        "unsupported dtype \"", dtype_name,
        "\" (supported: F32, F64, F16, BF16, I64, I32, I8, U8, BOOL)"));
  }
  if (!shape->is_array()) return bad("shape is not an array");
  // The element count, kept below 2^62 so that byte counts cannot overflow.
  constexpr uint64_t kLimit = uint64_t{1} << 62;
  uint64_t numel = 1;
  for (const Json& dim : *shape) {
    // nlohmann/json reads every non-negative integer literal that fits as
    // unsigned.
    const uint64_t d = dim.is_number_unsigned() ? dim.get<uint64_t>() : kLimit;
    if (d >= kLimit) return bad("shape must hold non-negative integers");
    if (d != 0 && numel > kLimit / d) return bad("shape is too large");
    numel *= d;
    entry.shape.push_back(static_cast<int64_t>(d));
  }
  if (!offsets->is_array() || offsets->size() != 2 ||
      !(*offsets)[0].is_number_unsigned() ||
      !(*offsets)[1].is_number_unsigned()) {
    return bad("data_offsets must be two non-negative integers");
  }
  entry.begin = (*offsets)[0].get<uint64_t>();
  entry.end = (*offsets)[1].get<uint64_t>();
  if (entry.begin > entry.end || entry.end > data_size) {
    return bad(absl::StrCat("data_offsets [", entry.begin, ", ", entry.end,
                            "] out of range of the ", data_size,
                            "-byte data section"));
  }
  if (entry.end - entry.begin != numel * entry.dtype->item_size) {
    return bad(absl::StrCat("data_offsets span ", entry.end - entry.begin,
                            " bytes but ", dtype_name, " of this shape needs ",
                            numel * entry.dtype->item_size));
  }
  return entry;
}

std::string Describe(const std::vector<std::string>& names) {
  const size_t total = names.size();
  constexpr size_t kShown = 5;
  std::vector<std::string> shown(
      names.begin(), names.begin() + std::min(names.size(), kShown));
  std::string out = absl::StrCat(total, " (", absl::StrJoin(shown, ", "));
  if (total > shown.size()) absl::StrAppend(&out, ", ...");
  absl::StrAppend(&out, ")");
  return out;
}

}  // namespace

absl::StatusOr<std::map<std::string, torch::Tensor>> ReadSafetensors(
    const std::string& path) {
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
  };
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return absl::NotFoundError(
        absl::StrCat(path, ": no such file (or not a regular file)"));
  }
  const uint64_t file_size = std::filesystem::file_size(path, ec);
  if (ec) return bad(absl::StrCat("cannot stat: ", ec.message()));
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));

  if (file_size < 8) {
    return bad(absl::StrCat("truncated: ", file_size,
                            " bytes, shorter than the 8-byte header length"));
  }
  unsigned char length_bytes[8];
  if (!file.read(reinterpret_cast<char*>(length_bytes), 8)) {
    return bad("cannot read the header length");
  }
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i)
    header_size = (header_size << 8) | length_bytes[i];
  if (header_size > file_size - 8) {
    return bad(absl::StrCat("header length ", header_size,
                            " runs past the end of the file (", file_size,
                            " bytes)"));
  }
  if (header_size > kMaxHeaderBytes) {
    return bad(absl::StrCat("header length ", header_size, " exceeds ",
                            kMaxHeaderBytes, " bytes"));
  }
  std::string header(header_size, '\0');
  if (!file.read(header.data(), static_cast<std::streamsize>(header_size))) {
    return bad("cannot read the header");
  }
  absl::StatusOr<Json> json = json::Parse(header);
  if (!json.ok()) return bad(absl::StrCat("header: ", json.status().message()));
  if (!json->is_object()) {
    return bad(
        absl::StrCat("header is ", KindName(*json), ", expected an object"));
  }

  const uint64_t data_size = file_size - 8 - header_size;
  std::vector<TensorEntry> entries;
  for (const auto& [name, info] : json->items()) {
    if (name == "__metadata__") {
      if (!info.is_object()) {
        return bad("__metadata__ is not an object");
      }
      continue;
    }
    absl::StatusOr<TensorEntry> entry = ParseEntry(name, info, data_size);
    if (!entry.ok()) return bad(std::string(entry.status().message()));
    entries.push_back(*std::move(entry));
  }
  // The format requires the tensors to tile the data section exactly; a gap
  // or overlap means the header and data disagree.
  std::vector<const TensorEntry*> by_offset;
  for (const TensorEntry& e : entries) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorEntry* a, const TensorEntry* b) {
              return a->begin != b->begin ? a->begin < b->begin
                                          : a->end < b->end;
            });
  uint64_t covered = 0;
  for (const TensorEntry* e : by_offset) {
    if (e->begin != covered) {
      return bad(absl::StrCat("tensor \"", e->name, "\" starts at byte ",
                              e->begin, " of the data section, expected ",
                              covered, " (gap or overlap)"));
    }
    covered = e->end;
  }
  if (covered != data_size) {
    return bad(absl::StrCat("tensors cover ", covered, " of the ", data_size,
                            " data bytes"));
  }

  std::map<std::string, torch::Tensor> tensors;
  const uint64_t data_start = 8 + header_size;
  for (const TensorEntry* e : by_offset) {
    torch::Tensor t = torch::empty(e->shape, torch::dtype(e->dtype->type));
    const uint64_t bytes = e->end - e->begin;
    if (bytes > 0) {
      file.seekg(static_cast<std::streamoff>(data_start + e->begin));
      if (!file.read(static_cast<char*>(t.data_ptr()),
                     static_cast<std::streamsize>(bytes))) {
        return bad(
            absl::StrCat("cannot read the data of tensor \"", e->name, "\""));
      }
    }
    if (e->dtype->type == torch::kBool) {
      // Bytes other than 0/1 are not valid bools in LibTorch.
      const auto* p = static_cast<const unsigned char*>(t.data_ptr());
      for (uint64_t i = 0; i < bytes; ++i) {
        if (p[i] > 1) {
          return bad(absl::StrCat("BOOL tensor \"", e->name,
                                  "\" holds a byte other than 0 or 1"));
        }
      }
    }
    tensors.emplace(e->name, std::move(t));
  }
  return tensors;
}

absl::Status LoadStateDict(
    torch::nn::Module& module,
    const std::map<std::string, torch::Tensor>& tensors) {
  std::map<std::string, torch::Tensor> targets;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    targets.emplace(item.key(), item.value());
  }
  for (const auto& item : module.named_buffers(/*recurse=*/true)) {
    targets.emplace(item.key(), item.value());
  }
  std::vector<std::string> missing, unexpected, mismatched;
  for (const auto& [name, target] : targets) {
    auto it = tensors.find(name);
    if (it == tensors.end()) {
      missing.push_back(name);
    } else if (it->second.sizes() != target.sizes()) {
      mismatched.push_back(absl::StrCat(name, ": expected ",
                                        c10::str(target.sizes()), ", got ",
                                        c10::str(it->second.sizes())));
    }
  }
  for (const auto& [name, tensor] : tensors) {
    if (targets.find(name) == targets.end()) unexpected.push_back(name);
  }
  if (!missing.empty() || !unexpected.empty() || !mismatched.empty()) {
    std::vector<std::string> parts;
    if (!missing.empty()) {
      parts.push_back(absl::StrCat("missing keys ", Describe(missing)));
    }
    if (!unexpected.empty()) {
      parts.push_back(absl::StrCat("unexpected keys ", Describe(unexpected)));
    }
    if (!mismatched.empty()) {
      parts.push_back(absl::StrCat("shape mismatches ", Describe(mismatched)));
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "state_dict does not match the module: ", absl::StrJoin(parts, "; ")));
  }
  torch::NoGradGuard no_grad;
  for (auto& [name, target] : targets) target.copy_(tensors.at(name));
  return absl::OkStatus();
}

}  // namespace torchbench
