// A small strict JSON reader (RFC 8259) and string quoting for the harness's
// own files: safetensors headers, Google Benchmark results used as shard
// costs, and the run journal. Internal to lib/; nothing beyond abseil.
#ifndef TORCHBENCH_SRC_JSON_H_
#define TORCHBENCH_SRC_JSON_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace torchbench::json {

struct Json {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  // Numbers: the value as a double, and whether the literal is a
  // non-negative integer that fits in uint64 (then exactly in `uint`).
  double number = 0;
  bool is_uint = false;
  uint64_t uint = 0;
  std::string string;
  std::vector<Json> array;
  // Keys in file order; duplicates are rejected while parsing.
  std::vector<std::pair<std::string, Json>> object;

  const Json* Find(const std::string& key) const;
  // The member `key` when it is a string (number), else `fallback`.
  std::string StringOr(const std::string& key,
                       const std::string& fallback) const;
  double NumberOr(const std::string& key, double fallback) const;
};

// "null", "a boolean", "a number", ...: for messages.
const char* KindName(Json::Kind kind);

// Parses one JSON document. InvalidArgument names the byte offset and the
// problem ("invalid JSON at byte 12: expected ',' or '}'").
absl::StatusOr<Json> Parse(const std::string& text);

// `s` as a JSON string literal, quotes included.
std::string Quote(const std::string& s);

// A double as JSON: shortest round-trip text; NaN and infinities, which JSON
// lacks, as Google Benchmark writes them (NaN, Infinity, -Infinity), which
// Python's json module reads back.
std::string Number(double value);

}  // namespace torchbench::json

#endif  // TORCHBENCH_SRC_JSON_H_
