#include "torchbench/model.h"

#include <c10/util/Exception.h>

#include <algorithm>

namespace torchbench {

const char* ModeName(Mode mode) {
  return mode == Mode::kTrain ? "Train" : "Eval";
}

const char* PrecisionName(Precision precision) {
  return precision == Precision::kTf32 ? "tf32" : "fp32";
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

torch::Tensor Model::Forward(const std::vector<torch::Tensor>& /*inputs*/) {
  TORCH_CHECK(false, "this model has no Python reference forward");
}

std::map<std::string, torch::Tensor> Model::GoldenOutputs() {
  TORCH_CHECK(false, "this model has no golden outputs");
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
