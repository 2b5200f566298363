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
#include "program/plan.h"
#include "program/reporter.h"
#include "program/run_loop.h"
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
  // The run loop writes --benchmark_out, not Google Benchmark.
  torchbench::LoopOptions loop;
  loop.out_path = torchbench::TakeFlag(&argc, argv, "benchmark_out");
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
  c10::Device device = torchbench::DefaultDevice();
  if (!flags->device.empty()) {
    auto parsed = torchbench::ParseDevice(flags->device);
    if (!parsed.ok()) {
      std::cerr << parsed.status().message() << "\n";
      return 2;
    }
    device = *parsed;
  }
  // The program's own phases: plan, then the run loop in this process.
  const torchbench::RunOptions options =
      torchbench::RunOptionsFrom(*flags, device, /*filter=*/"");
  const auto planned = torchbench::PlanInstances(registry, options, nullptr);
  torchbench::RunState state(options);
  loop.name_width = planned.front().name.size();
  if (!torchbench::RunLoop(planned, loop, &state, reporters.display.get(),
                           reporters.file.get())) {
    return 1;
  }
  benchmark::Shutdown();
  return state.errored() == 0 ? 0 : 1;
}
