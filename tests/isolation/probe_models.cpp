// A torchbench program whose models misbehave on purpose, for the isolation,
// interruption and resume tests. It links the harness but no real model, so
// these probes are never in the default registry.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <thread>

#include "program/run_main.h"
#include "torchbench/amp.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace {

class Probe : public Model {
 public:
  Probe(const ModelConfig& config, std::function<void()> act)
      : act_(std::move(act)) {
    linear_ = torch::nn::Linear(4, 4);
    linear_->to(config.device);
    input_ = torch::randn({config.batch_size, 4}, config.float_options());
  }
  torch::Tensor Step() override {
    act_();
    return linear_->forward(input_).sum();
  }
  torch::nn::Module& module() override { return *linear_; }

 private:
  std::function<void()> act_;
  torch::nn::Linear linear_{nullptr};
  torch::Tensor input_;
};

void Register(const char* name, std::function<void()> act) {
  ModelSpec spec;
  spec.name = name;
  spec.domain = "test";
  spec.task = "misbehaves on purpose";
  spec.reference = "none (tests/isolation)";
  spec.modes = {Mode::kEval};
  spec.eval_batch_size = 1;
  spec.reference_parameters = 20;
  spec.reference_buffers = 0;
  (void)Registry::Global().Add(
      spec,
      [act](const ModelConfig& config) -> std::unique_ptr<Model> {
        return std::make_unique<Probe>(config, act);
      },
      __FILE__, __LINE__);
}

void Sleep(double seconds) {
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

const bool registered = [] {
  Register("probe_ok", [] {});
  Register("probe_segfault", [] { ::raise(SIGSEGV); });
  Register("probe_abort", [] { std::abort(); });
  Register("probe_exit", [] { std::_Exit(3); });
  Register("probe_sigkill", [] { ::raise(SIGKILL); });
  Register("probe_hang", [] { Sleep(3600); });
  // Slow enough that a test can interrupt a run between instances.
  Register("probe_slow", [] { Sleep(0.1); });
  return true;
}();

}  // namespace
}  // namespace torchbench

int main(int argc, char** argv) {
  return torchbench::RunMain(argc, argv, /*caller_benchmarks=*/false);
}
