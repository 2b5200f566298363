// JSON for the harness's own files (safetensors headers, the run journal,
// Google Benchmark results used as shard costs, profiles) on nlohmann/json,
// which LibTorch's headers need anyway. What nlohmann/json lacks is here:
// Google Benchmark's tokens for non-finite doubles, limits on untrusted
// input, and errors as absl::Status. Internal to lib/.
#ifndef TORCHBENCH_SRC_JSON_H_
#define TORCHBENCH_SRC_JSON_H_

#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/statusor.h"

namespace torchbench::json {

// Parses one JSON document (RFC 8259; objects keep their keys in file order).
// Beyond nlohmann::ordered_json::parse it reads the bare tokens NaN,
// Infinity and -Infinity as numbers, as Google Benchmark writes them (so does
// Number below), and it rejects duplicate keys and nesting deeper than 64
// levels. Errors are InvalidArgument and start with
// "invalid JSON" ("invalid JSON at byte 12: syntax error while parsing
// object separator - ...", "invalid JSON: duplicate key \"a\"").
absl::StatusOr<nlohmann::ordered_json> Parse(const std::string& text);

// The member `key` of `object` when it is a string (a number), else
// `fallback`; `object` may be any value.
std::string StringOr(const nlohmann::ordered_json& object,
                     const std::string& key, const std::string& fallback);
double NumberOr(const nlohmann::ordered_json& object, const std::string& key,
                double fallback);

// `s` as a JSON string literal, quotes included (nlohmann's escaping; bytes
// that are not UTF-8 become U+FFFD, so Parse and Python read every line).
std::string Quote(const std::string& s);

// A double as Google Benchmark's JSON reporter writes one: 17 significant
// digits ("%.17g", exact when read back; integral values without a point),
// and NaN and infinities, which JSON lacks, as NaN, Infinity, -Infinity,
// which Parse and Python's json module read back.
std::string Number(double value);

}  // namespace torchbench::json

#endif  // TORCHBENCH_SRC_JSON_H_
