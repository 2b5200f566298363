#include "support/golden_file.h"

#include <torch/torch.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace torchbench {
namespace {

absl::Status Malformed(const std::string& path, int line,
                       const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(path, ":", line, ": ", why));
}

// Whole-word conversions: no trailing characters, no overflow.
bool ToInt(const std::string& text, int64_t* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = value;
  return true;
}

bool ToDouble(const std::string& text, double* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  *out = std::strtod(text.c_str(), &end);
  return errno == 0 && *end == '\0';
}

bool ParseShape(const std::string& text, std::vector<int64_t>* shape) {
  shape->clear();
  if (text == "-") return true;
  std::istringstream parts(text);
  std::string part;
  while (std::getline(parts, part, ',')) {
    int64_t d = 0;
    if (!ToInt(part, &d) || d < 0) return false;
    shape->push_back(d);
  }
  return !shape->empty();
}

std::vector<std::string> Words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

}  // namespace

absl::StatusOr<GoldenFile> ReadGoldenFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("no golden file ", path));
  GoldenFile golden;
  std::string line;
  int number = 0;
  bool saw_header = false;
  while (std::getline(in, line)) {
    ++number;
    const std::vector<std::string> words = Words(line);
    if (words.empty()) continue;
    const std::string& key = words[0];
    // The rest of the line after the key, for free-text fields.
    std::string rest = line.substr(line.find(key) + key.size());
    rest.erase(0, rest.find_first_not_of(" \t"));
    rest.erase(rest.find_last_not_of(" \t\r") + 1);
    int64_t integer = 0;
    if (!saw_header) {
      if (key != "torchbench-golden" || rest != "1") {
        return Malformed(path, number, "not a torchbench-golden 1 file");
      }
      saw_header = true;
    } else if (key == "fill") {
      if (!ToInt(rest, &integer)) {
        return Malformed(path, number, "bad fill version");
      }
      golden.fill_version = static_cast<int>(integer);
    } else if (key == "model") {
      golden.model = rest;
    } else if (key == "reference") {
      golden.reference = rest;
    } else if (key == "mode") {
      if (rest != "train" && rest != "eval") {
        return Malformed(path, number, "mode must be train or eval");
      }
      golden.mode = rest;
    } else if (key == "batch_size") {
      if (!ToInt(rest, &golden.batch_size) || golden.batch_size < 1) {
        return Malformed(path, number, "bad batch_size");
      }
    } else if (key == "dtype") {
      golden.dtype = rest;
    } else if (key == "note") {
      golden.notes.push_back(rest);
    } else if (key == "tensor") {
      TensorSummary summary;
      if (words.size() != 6 || !ParseShape(words[2], &summary.shape) ||
          !ToDouble(words[3], &summary.sum) ||
          !ToDouble(words[4], &summary.abs_sum) ||
          !ToDouble(words[5], &summary.max_abs)) {
        return Malformed(
            path, number,
            "want: tensor <key> <shape> <sum> <abs_sum> <max_abs>");
      }
      golden.tensors[words[1]] = std::move(summary);
    } else if (key == "sample") {
      double value = 0;
      auto it = words.size() == 4 ? golden.tensors.find(words[1])
                                  : golden.tensors.end();
      if (it == golden.tensors.end() || !ToInt(words[2], &integer) ||
          !ToDouble(words[3], &value)) {
        return Malformed(path, number,
                         "want: sample <key of a tensor line above> <index> "
                         "<value>");
      }
      it->second.samples.emplace_back(integer, value);
    } else if (key == "quantized") {
      auto it = words.size() == 4 ? golden.tensors.find(words[1])
                                  : golden.tensors.end();
      double step = 0;
      double allowed = 0;
      if (it == golden.tensors.end() || !ToDouble(words[2], &step) ||
          !ToDouble(words[3], &allowed) || !(step > 0) || allowed < 0) {
        return Malformed(path, number,
                         "want: quantized <key of a tensor line above> "
                         "<step > 0> <allowed steps >= 0>");
      }
      it->second.quantum = step;
      it->second.allowed_steps = allowed;
    } else {
      return Malformed(path, number, absl::StrCat("unknown line '", key, "'"));
    }
  }
  if (!saw_header) return Malformed(path, 1, "empty file");
  if (golden.model.empty() || golden.mode.empty() || golden.batch_size < 1 ||
      golden.tensors.empty()) {
    return Malformed(path, number,
                     "needs model, mode, batch_size and at least one tensor");
  }
  return golden;
}

std::vector<int64_t> SampleIndices(int64_t numel) {
  std::vector<int64_t> out;
  if (numel <= 0) return out;
  for (int64_t k = 0; k < 32; ++k) {
    const int64_t index = k * (numel - 1) / 31;
    if (out.empty() || out.back() != index) out.push_back(index);
  }
  return out;
}

TensorSummary Summarize(const torch::Tensor& tensor) {
  TensorSummary summary;
  torch::Tensor t =
      tensor.detach().to(torch::kCPU, torch::kDouble).contiguous();
  summary.shape = t.sizes().vec();
  summary.sum = t.sum().item<double>();
  summary.abs_sum = t.abs().sum().item<double>();
  summary.max_abs = t.numel() > 0 ? t.abs().max().item<double>() : 0;
  torch::Tensor flat = t.reshape({-1});
  for (int64_t index : SampleIndices(t.numel())) {
    summary.samples.emplace_back(index, flat[index].item<double>());
  }
  return summary;
}

double GoldenError(const TensorSummary& golden, const torch::Tensor& actual) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (!actual.defined() || actual.sizes().vec() != golden.shape) return kInf;
  const TensorSummary got = Summarize(actual);
  if (!std::isfinite(got.sum) || !std::isfinite(got.abs_sum)) return kInf;
  const double mass = std::max(golden.abs_sum, 1e-30);
  const double peak = std::max(golden.max_abs, 1e-30);
  double error = std::max(std::abs(got.sum - golden.sum) / mass,
                          std::abs(got.abs_sum - golden.abs_sum) / mass);
  torch::Tensor flat = actual.detach()
                           .to(torch::kCPU, torch::kDouble)
                           .contiguous()
                           .reshape({-1});
  for (const auto& [index, value] : golden.samples) {
    if (index < 0 || index >= flat.numel()) return kInf;
    error =
        std::max(error, std::abs(flat[index].item<double>() - value) / peak);
  }
  return error;
}

double GoldenStepError(const TensorSummary& golden,
                       const torch::Tensor& actual) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (!(golden.quantum > 0) || !actual.defined() ||
      actual.sizes().vec() != golden.shape) {
    return kInf;
  }
  const TensorSummary got = Summarize(actual);
  if (!std::isfinite(got.sum) || !std::isfinite(got.abs_sum)) return kInf;
  int64_t numel = 1;
  for (int64_t d : golden.shape) numel *= d;
  const double per_hundred =
      golden.quantum * std::max(1.0, static_cast<double>(numel) / 100.0);
  double steps = std::max(std::abs(got.sum - golden.sum) / per_hundred,
                          std::abs(got.abs_sum - golden.abs_sum) / per_hundred);
  std::map<int64_t, double> values(got.samples.begin(), got.samples.end());
  for (const auto& [index, value] : golden.samples) {
    auto it = values.find(index);
    if (it == values.end()) return kInf;
    steps = std::max(steps, std::abs(it->second - value) / golden.quantum);
  }
  return steps;
}

}  // namespace torchbench
