// Test parameters drawn from the registry, so a new model is tested without
// touching the tests.
#ifndef TORCHBENCH_TESTS_MODELS_MODEL_PARAMS_H_
#define TORCHBENCH_TESTS_MODELS_MODEL_PARAMS_H_

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include "program/benchmark_runner.h"
#include "torchbench/registry.h"

namespace torchbench::testing {

struct ModelMode {
  std::string name;
  Mode mode;
};

// Prints "<model>/<Mode>" in test output instead of raw bytes.
inline void PrintTo(const ModelMode& m, std::ostream* os) {
  *os << m.name << "/" << ModeName(m.mode);
}

inline std::vector<std::string> ModelNames() {
  std::vector<std::string> names;
  for (const auto* entry : Registry::Global().List()) {
    names.push_back(entry->spec.name);
  }
  return names;
}

inline std::vector<ModelMode> ModelModes() {
  std::vector<ModelMode> out;
  for (const auto* entry : Registry::Global().List()) {
    for (Mode mode : entry->spec.modes) out.push_back({entry->spec.name, mode});
  }
  return out;
}

// The CPU test batch: the fixed batch where the model allows no other, else
// the spec's small test batch (never above the default, never below the
// mode's smallest valid batch).
inline int64_t TestBatchSize(const ModelSpec& spec, Mode mode) {
  if (spec.fixed_batch_size) return spec.DefaultBatchSize(mode);
  return std::max(
      spec.MinBatchSize(mode),
      std::min(spec.checks.test_batch_size, spec.DefaultBatchSize(mode)));
}

// The batch the CPU default set (tools/tb bench without a GPU, i.e.
// --torchbench_batch_sizes=1) runs for this model and mode: the program's
// own resolution of that request.
inline int64_t DefaultSetBatchSize(const ModelSpec& spec, Mode mode) {
  return ResolveBatchSizes(spec, mode, {1}, nullptr).front();
}

}  // namespace torchbench::testing

#endif  // TORCHBENCH_TESTS_MODELS_MODEL_PARAMS_H_
