#include "program/filters.h"

#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace torchbench {

std::string EscapeRegex(const std::string& text) {
  std::string e;
  for (char c : text) {
    if (std::string_view(".[]()*+?{}|^$\\").find(c) != std::string_view::npos) {
      e += '\\';
    }
    e += c;
  }
  return e;
}

std::string ExactBenchmarkFilter(const std::string& name) {
  return absl::StrCat("^", EscapeRegex(name), "/manual_time$");
}

std::string FilterError(const std::string& filter) {
  if (filter.empty() || filter == "all") return "";
  try {
    const std::regex re(filter.front() == '-' ? filter.substr(1) : filter,
                        std::regex::extended);
  } catch (const std::regex_error& e) {
    return e.what();
  }
  return "";
}

bool FilterSelects(const std::string& filter, const std::string& name) {
  if (filter.empty() || filter == "all") return true;
  const bool negate = filter.front() == '-';
  const std::string pattern = negate ? filter.substr(1) : filter;
  try {
    const std::regex re(pattern, std::regex::extended);
    return std::regex_search(name, re) != negate;
  } catch (const std::regex_error&) {
    return true;  // Google Benchmark reports a bad pattern itself.
  }
}

}  // namespace torchbench
