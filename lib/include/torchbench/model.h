// File: torchbench/model.h
//
// The contract between a model file and the harness. A model owns its
// module(s), the inputs it makes on a device for a batch size, and one Train
// or Eval step; the harness owns everything else (device, timing, memory,
// seeds, precision, errors).
//
//   class MyModel final : public torchbench::Model {
//    public:
//     explicit MyModel(const torchbench::ModelConfig& config);
//     torch::Tensor Step() override;           // one step of config.mode
//     torch::nn::Module& module() override;    // everything the reference
//     counts
//   };
//   TORCHBENCH_REGISTER_MODEL(kMySpec, torchbench::MakeModel<MyModel>);
#ifndef TORCHBENCH_MODEL_H_
#define TORCHBENCH_MODEL_H_

#include <torch/nn/module.h>
#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace torchbench {

enum class Mode { kTrain, kEval };

// Returns "Train" or "Eval", the spelling used in benchmark names.
const char* ModeName(Mode mode);

enum class Precision { kFp32, kTf32 };

// Returns "fp32" or "tf32".
const char* PrecisionName(Precision precision);

// What a model is built for. The harness fills it; models read it.
struct ModelConfig {
  Mode mode = Mode::kEval;
  int64_t batch_size = 1;
  torch::Device device = torch::kCPU;
  Precision precision = Precision::kFp32;
  // Vision models convert module and inputs to channels-last when set.
  bool channels_last = false;
  uint64_t seed = 1337;  // TorchBench's set_random_seed() value.
};

// One benchmarkable model instance: built for one ModelConfig, with its
// inputs already on config.device.
class Model {
 public:
  virtual ~Model() = default;

  // Runs one step of the configured mode and returns its loss (Train) or its
  // main output (Eval). Runs asynchronously on accelerators: the harness
  // synchronizes. Eval steps run under torch::NoGradGuard set by the harness.
  virtual torch::Tensor Step() = 0;

  // Returns the module holding every parameter and buffer the reference
  // counts (for models with several networks, a root that registers them
  // all).
  virtual torch::nn::Module& module() = 0;

  // Runs the reference's forward (module(*inputs) in Python) on given
  // inputs, for fidelity tests against a Python reference package. Models
  // without a Python reference keep the default, which throws.
  virtual torch::Tensor Forward(const std::vector<torch::Tensor>& inputs);

  // Runs the computation a golden file records (ModelSpec::golden_file), for
  // the golden test: the harness built the model for the file's mode and
  // batch size and filled every parameter and buffer with
  // DeterministicFill. The model makes its inputs with DeterministicTensor /
  // DeterministicIntegers under the names its tools/golden/ adapter uses,
  // runs what the reference runs (forward; loss and backward where it
  // defines them) with its randomness off, and returns the tensors by the
  // golden file's keys ("output", "loss", "grad:<parameter>", ...). Models
  // without a golden file keep the default, which throws.
  virtual std::map<std::string, torch::Tensor> GoldenOutputs();
};

using ModelFactory =
    std::function<std::unique_ptr<Model>(const ModelConfig& config)>;

// Returns a factory for a Model subclass constructible from a ModelConfig.
template <typename T>
ModelFactory MakeModel() {
  return [](const ModelConfig& config) -> std::unique_ptr<Model> {
    return std::make_unique<T>(config);
  };
}

// Metadata a model registers beside its factory (TorchBench's metadata.yaml
// and __init__.py class attributes).
struct ModelSpec {
  std::string name;       // TorchBench folder name, e.g. "resnet50".
  std::string domain;     // "vision", "nlp", "recommendation", "rl", ...
  std::string task;       // e.g. "image classification".
  std::string reference;  // e.g. "torchvision resnet50".
  std::vector<Mode> modes = {Mode::kTrain, Mode::kEval};
  int64_t train_batch_size = 0;  // DEFAULT_TRAIN_BSIZE; 0 if no Train.
  int64_t eval_batch_size = 0;   // DEFAULT_EVAL_BSIZE; 0 if no Eval.
  // ALLOW_CUSTOMIZE_BSIZE = False in TorchBench: only the defaults run.
  bool fixed_batch_size = false;
  // The smallest batch each mode can run (e.g. 2 where a Train-mode
  // BatchNorm sees a 1x1 map at batch 1, which the reference rejects too),
  // and why. Requests below it run at it instead, with a note.
  int64_t min_train_batch_size = 1;
  int64_t min_eval_batch_size = 1;
  std::string min_batch_size_reason;
  // Smallest batch the CPU tests use (ignored when fixed_batch_size).
  int64_t test_batch_size = 2;
  // Whether --torchbench_channels_last applies (4-D image inputs).
  bool supports_channels_last = false;

  // The reference's element counts (Python `sum(p.numel() ...)` over
  // parameters() and buffers()); every model sets both, and the model file
  // says where each figure came from. Tests assert CountElements() equals
  // them.
  int64_t reference_parameters = -1;
  int64_t reference_buffers = -1;

  // Empty when a Train step must change some parameter (the smoke test
  // checks it); otherwise why the reference's own step may leave every
  // parameter unchanged (e.g. a dead final ReLU under the seed).
  std::string train_may_not_update;

  // Empty when the CPU smoke test runs this model; otherwise why it cannot
  // on a 2-core, 24 GB CI machine (what covers it instead).
  std::string skip_cpu_smoke_test;

  // A Python package the reference can be built from, as
  // "<package>:<name>" ("torchvision:resnet50", "timm:vit_small_patch16_224",
  // "transformers:<config>"), or empty. When set, the fidelity test builds it
  // with tools/make_reference.py, loads its weights into module() by name
  // and compares Forward() outputs on reference_input_shape.
  std::string python_reference;
  std::vector<int64_t> reference_input_shape;

  // The golden file under tests/golden/ (e.g. "dlrm.golden") made from the
  // reference's own code by tools/golden/make_golden.py, for models without
  // a pip reference. The golden test runs GoldenOutputs() against it.
  std::string golden_file;
  // Set only when a model has neither python_reference nor golden_file: why
  // its outputs cannot be checked against the reference.
  std::string no_reference_check;

  // Returns whether `mode` is supported.
  bool Supports(Mode mode) const;
  // Returns the default batch size for `mode` (0 if unsupported).
  int64_t DefaultBatchSize(Mode mode) const;
  // Returns the smallest batch size `mode` can run (1 unless set).
  int64_t MinBatchSize(Mode mode) const;
};

// Parameter and buffer element counts of a module (every element, trainable
// or not), as `sum(p.numel() for p in m.parameters())` counts them in Python.
struct ElementCounts {
  int64_t parameters = 0;
  int64_t buffers = 0;
};
ElementCounts CountElements(const torch::nn::Module& module);

}  // namespace torchbench

#endif  // TORCHBENCH_MODEL_H_
