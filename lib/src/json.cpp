#include "json.h"

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <limits>
#include <optional>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace torchbench::json {
namespace {

using Json = nlohmann::ordered_json;

// Deep enough for any real file (a safetensors header nests 3 levels),
// shallow enough that code walking a parsed value cannot exhaust the stack.
constexpr int kMaxDepth = 64;

// The input with Google Benchmark's non-finite tokens (NaN, Infinity,
// -Infinity) outside strings replaced by null, which nlohmann/json reads;
// Parse puts the values back as the parser reports each null.
struct Rewritten {
  std::string text;
  // Per null of `text`, in document order: the value it stands for, or
  // nullopt for a null of the input.
  std::vector<std::optional<double>> nulls;
  // Per replacement: its end in `text`, and the input's offset minus
  // `text`'s from there on.
  std::vector<std::pair<size_t, std::ptrdiff_t>> shifts;

  // The input's offset of `text`'s byte `at`, for messages.
  size_t InputOffset(size_t at) const {
    std::ptrdiff_t shift = 0;
    for (const auto& [end, s] : shifts) {
      if (end > at) break;
      shift = s;
    }
    return static_cast<size_t>(static_cast<std::ptrdiff_t>(at) + shift);
  }
};

Rewritten Rewrite(const std::string& in) {
  static constexpr std::pair<std::string_view, double> kTokens[] = {
      {"NaN", std::numeric_limits<double>::quiet_NaN()},
      {"Infinity", std::numeric_limits<double>::infinity()},
      {"-Infinity", -std::numeric_limits<double>::infinity()}};
  Rewritten out;
  out.text.reserve(in.size());
  bool in_string = false;
  size_t i = 0;
  auto replace = [&] {
    for (const auto& [token, value] : kTokens) {
      if (in.compare(i, token.size(), token) != 0) continue;
      i += token.size();
      out.text += "null";
      out.nulls.push_back(value);
      out.shifts.emplace_back(out.text.size(),
                              static_cast<std::ptrdiff_t>(i) -
                                  static_cast<std::ptrdiff_t>(out.text.size()));
      return true;
    }
    return false;
  };
  while (i < in.size()) {
    const char c = in[i];
    if (in_string) {
      if (c == '\\' && i + 1 < in.size()) out.text += in[i++];
      in_string = c != '"';
    } else if (c == '"') {
      in_string = true;
    } else if (c == 'n' && in.compare(i, 4, "null") == 0) {
      out.nulls.emplace_back();
    } else if ((c == 'N' || c == 'I' || c == '-') && replace()) {
      continue;
    }
    out.text += in[i++];
  }
  return out;
}

// nlohmann's explanation without its "[json.exception.parse_error.101] parse
// error at line 1, column 4: " prefix (Parse names the byte instead).
std::string Explanation(const Json::exception& e, bool parse_error) {
  std::string what = e.what();
  if (const size_t end = what.find("] "); end != std::string::npos) {
    what.erase(0, end + 2);
  }
  if (const size_t colon = what.find(": ");
      parse_error && colon != std::string::npos) {
    what.erase(0, colon + 2);
  }
  return what;
}

}  // namespace

absl::StatusOr<Json> Parse(const std::string& text) {
  const Rewritten input = Rewrite(text);
  std::string problem;  // The first the callback found; it then discards.
  std::vector<std::set<std::string>> keys;  // Of each object being read.
  size_t nulls_seen = 0;
  const Json::parser_callback_t check =
      [&](int depth, Json::parse_event_t event, Json& parsed) {
        using Event = Json::parse_event_t;
        if (!problem.empty()) return false;
        if (depth > kMaxDepth &&
            (event == Event::object_start || event == Event::array_start ||
             event == Event::value)) {
          problem = "nesting too deep";
          return false;
        }
        if (event == Event::object_start) {
          keys.emplace_back();
        } else if (event == Event::object_end) {
          keys.pop_back();
        } else if (event == Event::key &&
                   !keys.back().insert(parsed.get<std::string>()).second) {
          problem = absl::StrCat("duplicate key ", parsed.dump());
          return false;
        } else if (event == Event::value && parsed.is_null() &&
                   nulls_seen < input.nulls.size()) {
          if (const std::optional<double> value = input.nulls[nulls_seen++]) {
            parsed = *value;
          }
        }
        return true;
      };
  Json doc;
  try {
    doc = Json::parse(input.text, check);
  } catch (const Json::parse_error& e) {
    if (problem.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid JSON at byte ",
                       input.InputOffset(e.byte > 0 ? e.byte - 1 : 0), ": ",
                       Explanation(e, /*parse_error=*/true)));
    }
  } catch (const Json::exception& e) {  // A number out of double's range.
    if (problem.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "invalid JSON: ", Explanation(e, /*parse_error=*/false)));
    }
  }
  if (!problem.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("invalid JSON: ", problem));
  }
  return doc;
}

std::string StringOr(const Json& object, const std::string& key,
                     const std::string& fallback) {
  const auto it = object.find(key);  // end() unless an object
  return it != object.end() && it->is_string() ? it->get<std::string>()
                                               : fallback;
}

double NumberOr(const Json& object, const std::string& key, double fallback) {
  const auto it = object.find(key);
  return it != object.end() && it->is_number() ? it->get<double>() : fallback;
}

std::string Quote(const std::string& s) {
  return nlohmann::json(s).dump(/*indent=*/-1, /*indent_char=*/' ',
                                /*ensure_ascii=*/false,
                                nlohmann::json::error_handler_t::replace);
}

std::string Number(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", value);
  return buf;
}

}  // namespace torchbench::json
