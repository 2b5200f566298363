// File: torchbench/checks.h
//
// What the CPU tests check of a model beyond its step, kept off the timed
// path: a model implements the interfaces for the checks it has, and a model
// without them compiles and runs unchanged.
//
//   class Dlrm final : public torchbench::Model, public torchbench::GoldenCheck {
//     torch::Tensor Step() override { return TrainStep(); }
//     std::map<std::string, torch::Tensor> GoldenOutputs() override {
//       return recorder_.Capture([&] { TrainStep(); });
//     }
//     torch::Tensor TrainStep() {
//       torch::Tensor loss = ...;
//       recorder_.Record("loss", loss);  // free unless Capture() runs
//       ...
//     }
//     torchbench::GoldenRecorder recorder_;
//   };
#ifndef TORCHBENCH_CHECKS_H_
#define TORCHBENCH_CHECKS_H_

#include <torch/types.h>

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace torchbench {

// A model with a pip reference (ModelChecks::python_reference): the fidelity
// test loads the package's weights into module() by name and compares this
// forward with the package's own.
class FidelityCheck {
 public:
  virtual ~FidelityCheck() = default;
  // Runs the reference's forward (module(*inputs) in Python).
  virtual torch::Tensor Forward(const std::vector<torch::Tensor>& inputs) = 0;
};

// A model with a golden file (ModelChecks::golden_file): the harness built
// the model for the file's mode and batch size and filled every parameter and
// buffer with DeterministicFill. The model makes its inputs with
// DeterministicTensor / DeterministicIntegers under the names its
// tools/golden/ adapter uses, runs what the reference runs (forward; loss and
// backward where it defines them) with its randomness off, and returns the
// tensors by the golden file's keys ("output", "loss", "grad:<parameter>").
class GoldenCheck {
 public:
  virtual ~GoldenCheck() = default;
  virtual std::map<std::string, torch::Tensor> GoldenOutputs() = 0;
};

// Lets a step hand intermediate tensors to a golden check without a
// parameter on the step: Record() is a test of one pointer unless a
// Capture() is running.
class GoldenRecorder {
 public:
  // Keeps `value` (detached) under `key` while Capture() runs.
  // The key is a view so that a call outside a capture builds no string.
  void Record(std::string_view key, const torch::Tensor& value) {
    if (sink_ != nullptr) (*sink_)[std::string(key)] = value.detach();
  }
  bool recording() const { return sink_ != nullptr; }

  // Runs `run` and returns what it recorded.
  template <typename Run>
  std::map<std::string, torch::Tensor> Capture(Run&& run) {
    std::map<std::string, torch::Tensor> out;
    sink_ = &out;
    try {
      std::forward<Run>(run)();
    } catch (...) {
      sink_ = nullptr;
      throw;
    }
    sink_ = nullptr;
    return out;
  }

 private:
  std::map<std::string, torch::Tensor>* sink_ = nullptr;
};

}  // namespace torchbench

#endif  // TORCHBENCH_CHECKS_H_
