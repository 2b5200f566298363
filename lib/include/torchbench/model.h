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
//     torch::nn::Module& module() override;    // what the reference counts
//   };
//   TORCHBENCH_REGISTER_MODEL(MySpec(), torchbench::MakeModel<MyModel>());
//
// What the tests check beyond the step (golden outputs, a forward against a
// Python package) is a separate interface, torchbench/checks.h.
//
// For the harness's precisions a model makes its floating inputs in
// config.dtype() (drawn in fp32, then converted, as TorchBench's half path
// does), builds its optimizers from optim.h with config.optimizer, and calls
// torchbench::Backward(loss) (amp.h) instead of loss.backward(); the harness
// converts the module and runs autocast and the GradScaler.
#ifndef TORCHBENCH_MODEL_H_
#define TORCHBENCH_MODEL_H_

#include <torch/nn/module.h>
#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace torchbench {

enum class Mode { kTrain, kEval };

// Returns "Train" or "Eval", the spelling used in benchmark names.
const char* ModeName(Mode mode);

// --torchbench_precision. fp32 is PyTorch's default math (on CUDA: cuDNN
// may use TF32, cuBLAS matmul may not), as TorchBench's fp32 leaves
// torch.backends alone; tf32 allows TF32 in both (TorchBench's --precision
// tf32). fp16/bf16 convert the module's floating parameters and buffers and
// the floating inputs (TorchBench's model.half()); amp_* run the step under
// LibTorch's autocast with fp32 parameters (amp.h; a GradScaler only where
// the spec says: ModelSpec::amp_grad_scaler); kDefault is each model's
// TorchBench default on the device (ModelSpec::ResolvePrecision). Every
// precision but tf32 keeps PyTorch's TF32 defaults.
enum class Precision {
  kFp32,
  kTf32,
  kFp16,
  kBf16,
  kAmpFp16,
  kAmpBf16,
  kDefault
};

// Returns the flag spelling: "fp32", "tf32", "fp16", "bf16", "amp_fp16",
// "amp_bf16" or "default".
const char* PrecisionName(Precision precision);

// Parses a flag spelling; nullopt when unknown.
std::optional<Precision> ParsePrecision(std::string_view text);

// The dtype of floating parameters, buffers and inputs: kHalf for fp16,
// kBFloat16 for bf16, kFloat otherwise (amp keeps fp32 parameters).
torch::ScalarType ParameterDtype(Precision precision);

// The autocast dtype of an amp precision (kHalf, kBFloat16), else nullopt.
std::optional<torch::ScalarType> AutocastDtype(Precision precision);

// --torchbench_optimizer: the multi-tensor (foreach) or per-parameter
// (single) path of the optimizers in optim.h; kDefault picks as PyTorch does
// for the device (foreach on CUDA).
enum class OptimizerPath { kDefault, kForeach, kSingle };

// Returns "default", "foreach" or "single".
const char* OptimizerPathName(OptimizerPath path);

// What a model is built for. The harness fills it; models read it.
struct ModelConfig {
  Mode mode = Mode::kEval;
  int64_t batch_size = 1;
  torch::Device device = torch::kCPU;
  // Never kDefault: the harness resolves it for the model and device.
  Precision precision = Precision::kFp32;
  // Passed to every optimizer the model builds (optim.h).
  OptimizerPath optimizer = OptimizerPath::kDefault;
  // Vision models convert module and inputs to channels-last when set.
  bool channels_last = false;
  uint64_t seed = 1337;  // TorchBench's set_random_seed() value.
  // Set by the CPU smoke and precision tests, never by the program: a model
  // whose full-size step takes tens of seconds on one core may then make
  // smaller inputs along a dimension that leaves the code path unchanged
  // (sequence length, image size; never the batch, which the tests choose),
  // and says which in its file. Those tests prove that every path runs and
  // stays finite; the benchmarks and the golden and fidelity tests use the
  // reference's sizes.
  bool small_inputs = false;

  // The dtype for floating inputs and for floating tensors a step creates
  // (ParameterDtype(precision)); the harness converts the module itself.
  torch::ScalarType dtype() const { return ParameterDtype(precision); }
  // Options for a floating input: config.device and dtype().
  torch::TensorOptions float_options() const {
    return torch::TensorOptions().device(device).dtype(dtype());
  }
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

// What the CPU tests check of a model and how (tests/models/): none of it
// changes what the program runs.
struct ModelChecks {
  // A Python package the reference can be built from, as
  // "<package>:<name>" ("torchvision:resnet50", "timm:vit_small_patch16_224",
  // "transformers:<config>"), or empty. When set, the fidelity test builds it
  // with tools/make_reference.py, loads its weights into module() by name
  // and compares FidelityCheck::Forward() outputs (checks.h) on
  // reference_input_shape.
  std::string python_reference;
  std::vector<int64_t> reference_input_shape;

  // The golden file under tests/golden/ (e.g. "dlrm.golden") made from the
  // reference's own code by tools/golden/make_golden.py, for models without
  // a pip reference. The golden test runs GoldenCheck::GoldenOutputs()
  // (checks.h) against it.
  std::string golden_file;
  // Set only when a model has neither python_reference nor golden_file: why
  // its outputs cannot be checked against the reference.
  std::string no_reference_check;

  // Smallest batch the CPU tests use (ignored when fixed_batch_size).
  int64_t test_batch_size = 2;

  // Empty when a Train step must change some parameter (the smoke test
  // checks it); otherwise why the reference's own step may leave every
  // parameter unchanged (e.g. a dead final ReLU under the seed).
  std::string train_may_not_update;

  // Empty when an Eval step must leave every parameter and buffer unchanged
  // (the smoke test checks it); otherwise why the reference's eval() itself
  // trains (maml's eval() is a full meta-training step).
  std::string eval_changes_state;

  // What a CI machine cannot run (the CPU tests' skips) is not the model's:
  // it lives with the tests (tests/models/cpu_ci_limits.h).
};

// torch.backends.cudnn flags a reference's step runs under on CUDA, as its
// module sets them on import or its family's factory does (TorchBench
// records them per mode in metadata.yaml: train_benchmark / eval_benchmark,
// train_deterministic / eval_deterministic). Both off is PyTorch's default.
// They change which convolution and RNN algorithms cuDNN picks, so they
// change the time; the CPU ignores them.
struct CudnnFlags {
  bool benchmark = false;
  bool deterministic = false;
};

// The GradScaler of a model's amp_fp16 Train step. TorchBench's amp Train is
// autocast around the forward stage with no scaler, except where a model's
// own enable_amp() adds one: timm_efficientdet's NativeScaler is made once
// and kept (kKept); pytorch_unet's train() makes a new
// torch.cuda.amp.GradScaler on every call (kPerStep: each step starts at the
// initial scale, and the scale never grows).
enum class AmpGradScaler { kNone, kKept, kPerStep };

// Returns "none", "kept" or "per_step".
const char* AmpGradScalerName(AmpGradScaler scaler);

// A precision a model cannot run, and why; the harness skips those
// instances with one line naming the reason.
struct PrecisionLimit {
  Precision precision;
  std::string reason;
  // Only on the CPU (a kernel LibTorch has on CUDA but not on the CPU).
  bool cpu_only = false;
  // Only in this mode; every mode when unset.
  std::optional<Mode> mode = std::nullopt;
};

// Metadata a model registers beside its factory (TorchBench's metadata.yaml
// and __init__.py class attributes). An aggregate, in the order a model
// states it: families fill what TorchBench's base classes set
// (models/common/families.h) and a model names only what is its own, with
// designated initializers:
//
//   TORCHBENCH_REGISTER_MODEL(
//       TorchVisionSpec({.name = "alexnet",
//                        .train_batch_size = 128,
//                        .eval_batch_size = 128,
//                        .reference_parameters = 61100840,
//                        .reference_buffers = 0}),
//       MakeModel<AlexNet>());
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
  // Whether --torchbench_channels_last applies (4-D image inputs).
  bool supports_channels_last = false;

  // The reference's element counts (Python `sum(p.numel() ...)` over
  // parameters() and buffers()); every model sets both, and the model file
  // says where each figure came from. Tests assert CountElements() equals
  // them.
  int64_t reference_parameters = -1;
  int64_t reference_buffers = -1;

  // TorchBench's DEFAULT_TRAIN_CUDA_PRECISION / DEFAULT_EVAL_CUDA_PRECISION
  // (its "amp" is amp_fp16): what --torchbench_precision=default runs on
  // CUDA. Every model runs fp32 by default on the CPU, as in TorchBench.
  Precision default_cuda_train_precision = Precision::kFp32;
  Precision default_cuda_eval_precision = Precision::kFp32;

  // Precisions this model cannot run, each with why.
  std::vector<PrecisionLimit> unsupported_precisions;

  // The cuDNN flags of each mode (CudnnFlags); families set theirs.
  CudnnFlags train_cudnn;
  CudnnFlags eval_cudnn;

  // Whether TorchBench's model has its own enable_amp() (its family's base
  // class, or the model itself): TorchBench runs amp Train on CUDA only
  // then (util/extra_args.py's check_precision; no model is a staged train
  // test), so the harness skips amp_fp16 and amp_bf16 Train on CUDA for the
  // others, with a note. The CPU runs every amp precision as an extension
  // (TorchBench has no amp on the CPU).
  bool enable_amp = false;

  // Whether and how amp_fp16 Train scales the loss (AmpGradScaler).
  AmpGradScaler amp_grad_scaler = AmpGradScaler::kNone;

  // What the tests check and how.
  ModelChecks checks;

  // Returns whether `mode` is supported.
  bool Supports(Mode mode) const;
  // Returns the default batch size for `mode` (0 if unsupported).
  int64_t DefaultBatchSize(Mode mode) const;
  // Returns the smallest batch size `mode` can run (1 unless set).
  int64_t MinBatchSize(Mode mode) const;
  // Returns train_cudnn or eval_cudnn.
  const CudnnFlags& Cudnn(Mode mode) const;
  // Resolves kDefault for `mode` on `device`; other precisions unchanged.
  Precision ResolvePrecision(Precision requested, Mode mode,
                             const c10::Device& device) const;
  // Why `precision` cannot run in `mode` on `device`, or nullptr when it
  // can.
  const std::string* UnsupportedReason(Precision precision, Mode mode,
                                       const c10::Device& device) const;
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
