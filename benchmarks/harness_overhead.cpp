// Measures what the harness adds to every measured step: a model whose step
// does nothing, run through the same registration, instance cache, timer
// and counters as the real models. The reported Time is what the harness's
// timer adds to a measured step; CPU time per iteration is the whole loop's
// cost per step (timer, synchronization, Google Benchmark's loop).
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <iostream>

#include "program/benchmark_runner.h"
#include "program/flags.h"
#include "program/reporter.h"
#include "torchbench/device.h"
#include "torchbench/registry.h"

namespace {

class EmptyModel final : public torchbench::Model {
 public:
  explicit EmptyModel(const torchbench::ModelConfig& /*config*/) {}
  torch::Tensor Step() override { return {}; }
  torch::nn::Module& module() override { return module_; }

 private:
  torch::nn::Module module_;
};

}  // namespace

int main(int argc, char** argv) {
  auto flags = torchbench::ParseHarnessFlags(&argc, argv);
  if (!flags.ok()) {
    std::cerr << flags.status().message() << "\n";
    return 2;
  }
  torchbench::Reporters reporters = torchbench::MakeReporters(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;

  torchbench::Registry registry;
  torchbench::ModelSpec spec;
  spec.name = "harness_empty_step";
  spec.domain = "harness";
  spec.task = "empty step";
  spec.reference = "none";
  spec.train_batch_size = 1;
  spec.eval_batch_size = 1;
  if (auto s = registry.Add(spec, torchbench::MakeModel<EmptyModel>(), __FILE__,
                            __LINE__);
      !s.ok()) {
    std::cerr << s.message() << "\n";
    return 1;
  }
  torchbench::RunOptions options;
  options.device = torchbench::DefaultDevice();
  if (!flags->device.empty()) {
    auto device = torchbench::ParseDevice(flags->device);
    if (!device.ok()) {
      std::cerr << device.status().message() << "\n";
      return 2;
    }
    options.device = *device;
  }
  torchbench::RegisterModelBenchmarks(registry, options, nullptr);
  benchmark::RunSpecifiedBenchmarks(reporters.display.get(),
                                    reporters.file.get());
  torchbench::ReleaseLiveInstance();
  benchmark::Shutdown();
  return torchbench::ErroredInstances() == 0 ? 0 : 1;
}
