#include "json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace torchbench::json {
namespace {

// Deep enough for any real header (which nests 3 levels), shallow enough
// that recursion cannot exhaust the stack.
constexpr int kMaxJsonDepth = 64;

class JsonParser {
 public:
  explicit JsonParser(const std::string& text) : text_(text) {}

  absl::StatusOr<Json> ParseDocument() {
    Json value;
    if (absl::Status s = ParseValue(value, 0); !s.ok()) return s;
    SkipWhitespace();
    if (pos_ != text_.size()) return Error("unexpected text after the value");
    return value;
  }

 private:
  absl::Status Error(const std::string& what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid JSON at byte ", pos_, ": ", what));
  }

  void SkipWhitespace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
            text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool Consume(const char* literal) {
    const size_t n = std::strlen(literal);
    if (text_.compare(pos_, n, literal) != 0) return false;
    pos_ += n;
    return true;
  }

  absl::Status ParseValue(Json& out, int depth) {
    if (depth > kMaxJsonDepth) return Error("nesting too deep");
    SkipWhitespace();
    if (pos_ >= text_.size()) return Error("unexpected end of input");
    const char c = text_[pos_];
    if (c == '{') return ParseObject(out, depth);
    if (c == '[') return ParseArray(out, depth);
    if (c == '"') {
      out.kind = Json::Kind::kString;
      return ParseString(out.string);
    }
    // Google Benchmark writes these non-JSON tokens for NaN and infinite
    // counters (a CV of 0/0); Python's json module accepts them too.
    for (const auto& [token, value] :
         {std::pair<const char*, double>{
              "NaN", std::numeric_limits<double>::quiet_NaN()},
          {"Infinity", std::numeric_limits<double>::infinity()},
          {"-Infinity", -std::numeric_limits<double>::infinity()}}) {
      if (Consume(token)) {
        out.kind = Json::Kind::kNumber;
        out.number = value;
        return absl::OkStatus();
      }
    }
    if (c == '-' || (c >= '0' && c <= '9')) return ParseNumber(out);
    if (Consume("true")) {
      out.kind = Json::Kind::kBool;
      out.boolean = true;
      return absl::OkStatus();
    }
    if (Consume("false")) {
      out.kind = Json::Kind::kBool;
      return absl::OkStatus();
    }
    if (Consume("null")) {
      out.kind = Json::Kind::kNull;
      return absl::OkStatus();
    }
    return Error(
        absl::StrCat("unexpected character '", std::string(1, c), "'"));
  }

  absl::Status ParseObject(Json& out, int depth) {
    out.kind = Json::Kind::kObject;
    ++pos_;  // '{'
    SkipWhitespace();
    if (pos_ < text_.size() && text_[pos_] == '}') {
      ++pos_;
      return absl::OkStatus();
    }
    while (true) {
      SkipWhitespace();
      if (pos_ >= text_.size() || text_[pos_] != '"') {
        return Error("expected a string key");
      }
      std::string key;
      if (absl::Status s = ParseString(key); !s.ok()) return s;
      if (out.Find(key) != nullptr) {
        return Error(absl::StrCat("duplicate key \"", key, "\""));
      }
      SkipWhitespace();
      if (pos_ >= text_.size() || text_[pos_] != ':') {
        return Error("expected ':'");
      }
      ++pos_;
      Json value;
      if (absl::Status s = ParseValue(value, depth + 1); !s.ok()) return s;
      out.object.emplace_back(std::move(key), std::move(value));
      SkipWhitespace();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == '}') {
        ++pos_;
        return absl::OkStatus();
      }
      return Error("expected ',' or '}'");
    }
  }

  absl::Status ParseArray(Json& out, int depth) {
    out.kind = Json::Kind::kArray;
    ++pos_;  // '['
    SkipWhitespace();
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
      return absl::OkStatus();
    }
    while (true) {
      Json value;
      if (absl::Status s = ParseValue(value, depth + 1); !s.ok()) return s;
      out.array.push_back(std::move(value));
      SkipWhitespace();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == ']') {
        ++pos_;
        return absl::OkStatus();
      }
      return Error("expected ',' or ']'");
    }
  }

  absl::Status ParseHex4(uint32_t& out) {
    if (text_.size() - pos_ < 4) return Error("truncated \\u escape");
    out = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = text_[pos_++];
      out <<= 4;
      if (h >= '0' && h <= '9') {
        out |= static_cast<uint32_t>(h - '0');
      } else if (h >= 'a' && h <= 'f') {
        out |= static_cast<uint32_t>(h - 'a' + 10);
      } else if (h >= 'A' && h <= 'F') {
        out |= static_cast<uint32_t>(h - 'A' + 10);
      } else {
        return Error("bad hex digit in \\u escape");
      }
    }
    return absl::OkStatus();
  }

  static void AppendUtf8(uint32_t cp, std::string& out) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  absl::Status ParseString(std::string& out) {
    ++pos_;  // '"'
    while (true) {
      if (pos_ >= text_.size()) return Error("unterminated string");
      const unsigned char c = static_cast<unsigned char>(text_[pos_++]);
      if (c == '"') return absl::OkStatus();
      if (c < 0x20) return Error("control character in string");
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (pos_ >= text_.size()) return Error("unterminated escape");
      const char e = text_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out += e;
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          uint32_t cp = 0;
          if (absl::Status s = ParseHex4(cp); !s.ok()) return s;
          if (cp >= 0xDC00 && cp <= 0xDFFF) return Error("lone low surrogate");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t low = 0;
            if (!Consume("\\u")) return Error("lone high surrogate");
            if (absl::Status s = ParseHex4(low); !s.ok()) return s;
            if (low < 0xDC00 || low > 0xDFFF) {
              return Error("bad surrogate pair");
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          AppendUtf8(cp, out);
          break;
        }
        default:
          return Error("unknown escape");
      }
    }
  }

  absl::Status ParseNumber(Json& out) {
    out.kind = Json::Kind::kNumber;
    const size_t begin = pos_;
    const bool negative = text_[pos_] == '-';
    if (negative) ++pos_;
    auto is_digit = [&](size_t i) {
      return i < text_.size() && text_[i] >= '0' && text_[i] <= '9';
    };
    if (!is_digit(pos_)) return Error("bad number");
    bool overflow = false;
    uint64_t value = 0;
    if (text_[pos_] == '0') {
      ++pos_;
      if (is_digit(pos_)) return Error("leading zero in number");
    } else {
      while (is_digit(pos_)) {
        const uint64_t d = static_cast<uint64_t>(text_[pos_++] - '0');
        if (value > (std::numeric_limits<uint64_t>::max() - d) / 10) {
          overflow = true;
        }
        value = value * 10 + d;
      }
    }
    bool integral = true;
    if (pos_ < text_.size() && text_[pos_] == '.') {
      integral = false;
      ++pos_;
      if (!is_digit(pos_)) return Error("bad fraction in number");
      while (is_digit(pos_)) ++pos_;
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      integral = false;
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) {
        ++pos_;
      }
      if (!is_digit(pos_)) return Error("bad exponent in number");
      while (is_digit(pos_)) ++pos_;
    }
    out.is_uint = integral && !overflow && (!negative || value == 0);
    out.uint = out.is_uint ? value : 0;
    // The grammar was checked above, so strtod reads exactly this literal.
    out.number =
        std::strtod(text_.substr(begin, pos_ - begin).c_str(), nullptr);
    return absl::OkStatus();
  }

  const std::string& text_;
  size_t pos_ = 0;
};

}  // namespace

const Json* Json::Find(const std::string& key) const {
  for (const auto& [k, v] : object) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::string Json::StringOr(const std::string& key,
                           const std::string& fallback) const {
  const Json* v = Find(key);
  return v != nullptr && v->kind == Kind::kString ? v->string : fallback;
}

double Json::NumberOr(const std::string& key, double fallback) const {
  const Json* v = Find(key);
  return v != nullptr && v->kind == Kind::kNumber ? v->number : fallback;
}

const char* KindName(Json::Kind kind) {
  switch (kind) {
    case Json::Kind::kNull:
      return "null";
    case Json::Kind::kBool:
      return "a boolean";
    case Json::Kind::kNumber:
      return "a number";
    case Json::Kind::kString:
      return "a string";
    case Json::Kind::kArray:
      return "an array";
    case Json::Kind::kObject:
      return "an object";
  }
  return "?";
}

absl::StatusOr<Json> Parse(const std::string& text) {
  return JsonParser(text).ParseDocument();
}

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += "\"";
  return out;
}

std::string Number(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", value);
  return buf;
}

}  // namespace torchbench::json
