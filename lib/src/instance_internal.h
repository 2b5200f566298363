// File: instance_internal.h (internal: the program's side of instance.h,
// not installed)
#ifndef TORCHBENCH_SRC_INSTANCE_INTERNAL_H_
#define TORCHBENCH_SRC_INSTANCE_INTERNAL_H_

#include <torch/nn/module.h>

#include <memory>
#include <string>

#include "torchbench/instance.h"

namespace torchbench {

// Sets the flags a step runs under in LibTorch's global context
// (at::globalContext()).
void ApplyBackendFlags(const BackendFlags& flags);

// Reads them back from LibTorch's global context.
BackendFlags CurrentBackendFlags();

// "tf32_matmul:false tf32_cudnn:true cudnn_benchmark:true
// cudnn_deterministic:false": the spelling of labels and of
// tools/versus_python.py's python_flags.
std::string BackendFlagsText(const BackendFlags& flags);

// Converts every floating parameter and buffer of `module` to `dtype` in
// place (tensor identity kept, so optimizers built on them stay valid);
// integer buffers (BatchNorm's num_batches_tracked) are left alone, as
// Python's Module.half() leaves them. Then every torch::nn LSTM, GRU and RNN
// in it calls flatten_parameters(), as Module._apply does in Python: on
// CUDA the conversion leaves the weights outside cuDNN's one flat buffer,
// and cuDNN would copy them into one on every call. Returns how many
// recurrent modules were re-flattened.
int ConvertFloatingTensors(torch::nn::Module& module, torch::ScalarType dtype);

// Describes stepped optimizer paths: "foreach", "single", "foreach+single"
// or "none".
std::string OptimizerPathsText(unsigned paths);

// Throws std::runtime_error when `output` holds a NaN or Inf (synchronizes).
void CheckFinite(const torch::Tensor& output, const std::string& what);

// Setup once per benchmark instance. Google Benchmark calls a benchmark's
// function many times for one instance (iteration probes, repetitions);
// building a model, its optimizer and inputs each time would dominate the
// run. InstanceCache keeps the one live instance and frees it before the
// next instance is built, so only one model occupies the device at a time.
//
//   InstanceCache cache;
//   Instance& inst = cache.Acquire(entry, config, /*warmup_steps=*/3);
//   torch::Tensor loss = inst.Step();
class InstanceCache {
 public:
  // Returns the live instance for (entry, config), building it (and running
  // `warmup_steps` checked steps) when it is not the live one. Throws what
  // the model throws; the cache is then empty.
  Instance& Acquire(const RegisteredModel& entry, const ModelConfig& config,
                    int warmup_steps);

  // Frees the live instance and the device's cached blocks.
  void Release();

  // Every instance built from now on loads this file (Instance::LoadWeights)
  // before its warm-up, and Acquire throws its error; "" (the default): the
  // models' own weights.
  void set_weights_file(std::string path);

  bool has_instance() const { return instance_ != nullptr; }

 private:
  std::string key_;
  std::string weights_file_;
  std::unique_ptr<Instance> instance_;
};

}  // namespace torchbench

#endif  // TORCHBENCH_SRC_INSTANCE_INTERNAL_H_
