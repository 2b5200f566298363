#include "torchbench/model.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <utility>

namespace torchbench {

const char* ModeName(Mode mode) {
  return mode == Mode::kTrain ? "Train" : "Eval";
}

namespace {

constexpr std::pair<Precision, const char*> kPrecisionNames[] = {
    {Precision::kFp32, "fp32"},        {Precision::kTf32, "tf32"},
    {Precision::kFp16, "fp16"},        {Precision::kBf16, "bf16"},
    {Precision::kAmpFp16, "amp_fp16"}, {Precision::kAmpBf16, "amp_bf16"},
    {Precision::kDefault, "default"},
};

}  // namespace

const char* PrecisionName(Precision precision) {
  for (const auto& [p, name] : kPrecisionNames) {
    if (p == precision) return name;
  }
  return "?";
}

std::optional<Precision> ParsePrecision(std::string_view text) {
  for (const auto& [p, name] : kPrecisionNames) {
    if (text == name) return p;
  }
  return std::nullopt;
}

torch::ScalarType ParameterDtype(Precision precision) {
  switch (precision) {
    case Precision::kFp16:
      return torch::kHalf;
    case Precision::kBf16:
      return torch::kBFloat16;
    default:
      return torch::kFloat;
  }
}

std::optional<torch::ScalarType> AutocastDtype(Precision precision) {
  if (precision == Precision::kAmpFp16) return torch::kHalf;
  if (precision == Precision::kAmpBf16) return torch::kBFloat16;
  return std::nullopt;
}

const char* OptimizerPathName(OptimizerPath path) {
  switch (path) {
    case OptimizerPath::kForeach:
      return "foreach";
    case OptimizerPath::kSingle:
      return "single";
    default:
      return "default";
  }
}

bool ModelSpec::Supports(Mode mode) const {
  return std::find(modes.begin(), modes.end(), mode) != modes.end();
}

int64_t ModelSpec::DefaultBatchSize(Mode mode) const {
  if (!Supports(mode)) return 0;
  return mode == Mode::kTrain ? train_batch_size : eval_batch_size;
}

int64_t ModelSpec::MinBatchSize(Mode mode) const {
  return std::max<int64_t>(
      1, mode == Mode::kTrain ? min_train_batch_size : min_eval_batch_size);
}

const char* AmpGradScalerName(AmpGradScaler scaler) {
  switch (scaler) {
    case AmpGradScaler::kKept:
      return "kept";
    case AmpGradScaler::kPerStep:
      return "per_step";
    case AmpGradScaler::kNone:
      break;
  }
  return "none";
}

const CudnnFlags& ModelSpec::Cudnn(Mode mode) const {
  return mode == Mode::kTrain ? train_cudnn : eval_cudnn;
}

Precision ModelSpec::ResolvePrecision(Precision requested, Mode mode,
                                      const c10::Device& device) const {
  if (requested != Precision::kDefault) return requested;
  if (!device.is_cuda()) return Precision::kFp32;
  return mode == Mode::kTrain ? default_cuda_train_precision
                              : default_cuda_eval_precision;
}

const std::string* ModelSpec::UnsupportedReason(
    Precision precision, Mode mode, const c10::Device& device) const {
  for (const auto& limit : unsupported_precisions) {
    if (limit.precision == precision && (!limit.cpu_only || device.is_cpu()) &&
        (!limit.mode || *limit.mode == mode)) {
      return &limit.reason;
    }
  }
  static const std::string kNoEnableAmp =
      "TorchBench runs amp Train on CUDA only for models with their own "
      "enable_amp(), and this one has none";
  if (device.is_cuda() && mode == Mode::kTrain && !enable_amp &&
      AutocastDtype(precision).has_value()) {
    return &kNoEnableAmp;
  }
  return nullptr;
}

ElementCounts CountElements(const torch::nn::Module& module) {
  ElementCounts counts;
  for (const auto& p : module.parameters(/*recurse=*/true)) {
    counts.parameters += p.numel();
  }
  for (const auto& b : module.buffers(/*recurse=*/true)) {
    counts.buffers += b.numel();
  }
  return counts;
}

}  // namespace torchbench
