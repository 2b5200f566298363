// File: torchbench/instance.h
//
// One built model, configured as the harness runs it, and the embedding
// entry point that builds one by name:
//
//   auto instance = torchbench::CreateInstance("resnet50", config);
//   torch::Tensor loss = (*instance)->Step();
#ifndef TORCHBENCH_INSTANCE_H_
#define TORCHBENCH_INSTANCE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "torchbench/amp.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {

// The process-wide backend flags a step runs under, as TorchBench sets them
// on CUDA: TF32 as the precision says (PyTorch's defaults, cuDNN TF32 on and
// matmul TF32 off, for every precision but tf32, which turns both on) and
// cuDNN autotuning and determinism as the model's spec says for the mode
// (ModelSpec::Cudnn). The CPU ignores them.
struct BackendFlags {
  bool allow_tf32_matmul = false;
  bool allow_tf32_cudnn = true;
  bool cudnn_benchmark = false;
  bool cudnn_deterministic = false;

  bool operator==(const BackendFlags&) const = default;
};

// The flags `config` (precision resolved) of `spec` runs under.
BackendFlags BackendFlagsFor(const ModelSpec& spec, const ModelConfig& config);

// One built model with its configuration. For fp16/bf16 the module's
// floating parameters and buffers are converted after the model is built
// (TorchBench's model.half()), and every LSTM/GRU/RNN re-flattens its
// weights for cuDNN, as Python's module.half() does; config.precision must be
// resolved (not kDefault). The model is built under its BackendFlags.
class Instance {
 public:
  Instance(const RegisteredModel& entry, const ModelConfig& config);

  // Sets this instance's BackendFlags, which are process-wide: the
  // constructor does, and a caller that runs several instances in turn
  // calls it before each one's steps.
  void Activate() const;
  const BackendFlags& backend_flags() const { return backend_flags_; }

  // Runs one step of the configured mode, under NoGradGuard for Eval and
  // under the precision's autocast and GradScaler (amp.h).
  torch::Tensor Step();

  // The optimizer paths the last step ran (a bit per OptimizerPath; 0 when
  // no optimizer stepped), for labelling results.
  unsigned stepped_optimizer_paths() const { return stepped_paths_; }

  const ModelConfig& config() const { return config_; }
  const ModelSpec& spec() const { return entry_->spec; }
  Model& model() { return *model_; }
  const ElementCounts& counts() const { return counts_; }
  // Seconds spent building the model (before warm-up).
  double build_seconds() const { return build_seconds_; }

  // Replaces every parameter and buffer of module() with the tensors of a
  // safetensors file, by the reference's state_dict names (non-persistent
  // buffers included): a model whose step's work depends on its weights'
  // values (boxes that pass a score threshold) and whose trained checkpoint
  // is not available then runs on the reference's exact weights. Returns
  // NotFound or InvalidArgument naming the file (a key missing, unexpected or
  // of another shape), the module unchanged.
  absl::Status LoadWeights(const std::string& path);

 private:
  const RegisteredModel* entry_;
  ModelConfig config_;
  std::unique_ptr<Model> model_;
  ElementCounts counts_;
  double build_seconds_ = 0;
  BackendFlags backend_flags_;
  GradScaler scaler_;
  unsigned stepped_paths_ = 0;
};

// Returns a key naming an instance: "<model>/<Mode>/batch_size:<N>".
std::string InstanceName(const std::string& model, Mode mode,
                         int64_t batch_size);

// Builds the registered model `name` for `config` (the embedding entry
// point); a kDefault precision is resolved for the model and device.
// Returns NotFound for an unknown name, InvalidArgument for an unsupported
// mode or precision (ModelSpec::unsupported_precisions), a batch size below 1
// or below the model's smallest valid one (ModelSpec::MinBatchSize), or a batch
// size other than the default of a fixed-batch model; Internal with the model's
// message when building throws.
absl::StatusOr<std::unique_ptr<Instance>> CreateInstance(
    const std::string& name, const ModelConfig& config,
    const Registry& registry = Registry::Global());

}  // namespace torchbench

#endif  // TORCHBENCH_INSTANCE_H_
