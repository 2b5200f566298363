#include "torchbench/instance.h"

#include <ATen/Context.h>
#include <torch/torch.h>

#include <chrono>
#include <map>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "amp_internal.h"
#include "instance_internal.h"
#include "torchbench/device.h"
#include "torchbench/memory.h"
#include "torchbench/optim.h"
#include "torchbench/weights.h"

namespace torchbench {

BackendFlags BackendFlagsFor(const ModelSpec& spec, const ModelConfig& config) {
  const bool tf32 = config.precision == Precision::kTf32;
  const CudnnFlags& cudnn = spec.Cudnn(config.mode);
  return {.allow_tf32_matmul = tf32,
          .allow_tf32_cudnn = true,
          .cudnn_benchmark = cudnn.benchmark,
          .cudnn_deterministic = cudnn.deterministic};
}

void ApplyBackendFlags(const BackendFlags& flags) {
  auto& ctx = at::globalContext();
  ctx.setAllowTF32CuBLAS(flags.allow_tf32_matmul);
  ctx.setAllowTF32CuDNN(flags.allow_tf32_cudnn);
  ctx.setBenchmarkCuDNN(flags.cudnn_benchmark);
  ctx.setDeterministicCuDNN(flags.cudnn_deterministic);
}

BackendFlags CurrentBackendFlags() {
  const auto& ctx = at::globalContext();
  return {.allow_tf32_matmul = ctx.allowTF32CuBLAS(),
          .allow_tf32_cudnn = ctx.allowTF32CuDNN(),
          .cudnn_benchmark = ctx.benchmarkCuDNN(),
          .cudnn_deterministic = ctx.deterministicCuDNN()};
}

std::string BackendFlagsText(const BackendFlags& flags) {
  const auto text = [](bool b) { return b ? "true" : "false"; };
  return absl::StrCat("tf32_matmul:", text(flags.allow_tf32_matmul),
                      " tf32_cudnn:", text(flags.allow_tf32_cudnn),
                      " cudnn_benchmark:", text(flags.cudnn_benchmark),
                      " cudnn_deterministic:", text(flags.cudnn_deterministic));
}

Instance::Instance(const RegisteredModel& entry, const ModelConfig& config)
    : entry_(&entry),
      config_(config),
      backend_flags_(BackendFlagsFor(entry.spec, config)) {
  Activate();
  const auto start = std::chrono::steady_clock::now();
  model_ = entry.Create(config);
  if (config.dtype() != torch::kFloat) {
    ConvertFloatingTensors(model_->module(), config.dtype());
  }
  SynchronizeDevice(config.device);
  build_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  counts_ = CountElements(model_->module());
}

void Instance::Activate() const { ApplyBackendFlags(backend_flags_); }

absl::Status Instance::LoadWeights(const std::string& path) {
  absl::StatusOr<std::map<std::string, torch::Tensor>> tensors =
      ReadSafetensors(path);
  if (!tensors.ok()) return tensors.status();
  absl::Status loaded = LoadStateDict(model_->module(), *tensors);
  if (!loaded.ok()) {
    return absl::Status(loaded.code(),
                        absl::StrCat(path, ": ", loaded.message()));
  }
  SynchronizeDevice(config_.device);
  return absl::OkStatus();
}

torch::Tensor Instance::Step() {
  optim::internal::TakeSteppedPaths();
  GradScaler* scaler = nullptr;
  switch (entry_->spec.amp_grad_scaler) {
    case AmpGradScaler::kNone:
      break;
    case AmpGradScaler::kPerStep:
      scaler_ = GradScaler();
      [[fallthrough]];
    case AmpGradScaler::kKept:
      scaler = &scaler_;
      break;
  }
  StepPrecision precision(config_, scaler);
  torch::Tensor out;
  if (config_.mode == Mode::kEval) {
    torch::NoGradGuard no_grad;
    out = model_->Step();
  } else {
    out = model_->Step();
  }
  precision.Finish();
  stepped_paths_ = optim::internal::TakeSteppedPaths();
  return out;
}

int ConvertFloatingTensors(torch::nn::Module& module, torch::ScalarType dtype) {
  torch::NoGradGuard no_grad;
  auto convert = [dtype](torch::Tensor& t) {
    if (t.is_floating_point() && t.scalar_type() != dtype) {
      t.set_data(t.to(dtype));
    }
  };
  for (auto& p : module.parameters(/*recurse=*/true)) convert(p);
  for (auto& b : module.buffers(/*recurse=*/true)) convert(b);
  int flattened = 0;
  auto flatten = [&flattened](auto* rnn) {
    if (rnn == nullptr) return false;
    rnn->flatten_parameters();
    ++flattened;
    return true;
  };
  auto visit = [&flatten](torch::nn::Module* m) {
    flatten(dynamic_cast<torch::nn::LSTMImpl*>(m)) ||
        flatten(dynamic_cast<torch::nn::GRUImpl*>(m)) ||
        flatten(dynamic_cast<torch::nn::RNNImpl*>(m));
  };
  // Not modules(include_self=true): a model's root may not be held by a
  // shared_ptr.
  visit(&module);
  for (const auto& m : module.modules(/*include_self=*/false)) visit(m.get());
  return flattened;
}

std::string OptimizerPathsText(unsigned paths) {
  const bool foreach =
      (paths & (1u << static_cast<unsigned>(OptimizerPath::kForeach))) != 0;
  const bool single =
      (paths & (1u << static_cast<unsigned>(OptimizerPath::kSingle))) != 0;
  if (foreach && single) return "foreach+single";
  if (foreach) return "foreach";
  if (single) return "single";
  return "none";
}

void CheckFinite(const torch::Tensor& output, const std::string& what) {
  if (!output.defined() || !output.is_floating_point()) return;
  if (!torch::isfinite(output).all().item<bool>()) {
    throw std::runtime_error(
        absl::StrCat(what, " is not finite (NaN or Inf): the step diverged"));
  }
}

std::string InstanceName(const std::string& model, Mode mode,
                         int64_t batch_size) {
  return absl::StrCat(model, "/", ModeName(mode), "/batch_size:", batch_size);
}

absl::StatusOr<std::unique_ptr<Instance>> CreateInstance(
    const std::string& name, const ModelConfig& config,
    const Registry& registry) {
  const RegisteredModel* entry = registry.Find(name);
  if (entry == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        "unknown model '", name, "' (--torchbench_list_models lists them)"));
  }
  const ModelSpec& spec = entry->spec;
  if (!spec.Supports(config.mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " does not support ", ModeName(config.mode)));
  }
  ModelConfig resolved = config;
  resolved.precision =
      spec.ResolvePrecision(config.precision, config.mode, config.device);
  if (const std::string* why = spec.UnsupportedReason(
          resolved.precision, config.mode, config.device)) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, " does not run ", PrecisionName(resolved.precision), ": ", *why));
  }
  if (config.batch_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch size ", config.batch_size, " for ", name,
                     ": must be at least 1"));
  }
  if (config.batch_size < spec.MinBatchSize(config.mode)) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, " ", ModeName(config.mode), " needs a batch size of at least ",
        spec.MinBatchSize(config.mode), ": ", spec.min_batch_size_reason));
  }
  if (spec.fixed_batch_size &&
      config.batch_size != spec.DefaultBatchSize(config.mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " has a fixed ", ModeName(config.mode),
                     " batch size of ", spec.DefaultBatchSize(config.mode)));
  }
  try {
    return std::make_unique<Instance>(*entry, resolved);
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat(
        "building ", name, " failed: ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("building ", name, " failed: ", e.what()));
  }
}

Instance& InstanceCache::Acquire(const RegisteredModel& entry,
                                 const ModelConfig& config, int warmup_steps) {
  std::string key = absl::StrCat(
      InstanceName(entry.spec.name, config.mode, config.batch_size), "/",
      config.device.str(), "/", PrecisionName(config.precision), "/",
      OptimizerPathName(config.optimizer), "/", config.channels_last, "/",
      config.seed);
  if (instance_ && key == key_) {
    instance_->Activate();
    return *instance_;
  }
  Release();
  auto instance = std::make_unique<Instance>(entry, config);
  if (!weights_file_.empty()) {
    if (absl::Status loaded = instance->LoadWeights(weights_file_);
        !loaded.ok()) {
      throw std::runtime_error(
          absl::StrCat("--torchbench_weights: ", loaded.message()));
    }
  }
  const std::string what =
      absl::StrCat(config.mode == Mode::kTrain ? "loss" : "output", " (",
                   PrecisionName(config.precision), ")");
  for (int i = 0; i < warmup_steps; ++i) {
    torch::Tensor out = instance->Step();
    if (i == warmup_steps - 1) CheckFinite(out, absl::StrCat("warm-up ", what));
  }
  SynchronizeDevice(config.device);
  instance_ = std::move(instance);
  key_ = std::move(key);
  return *instance_;
}

void InstanceCache::set_weights_file(std::string path) {
  if (path != weights_file_) Release();
  weights_file_ = std::move(path);
}

void InstanceCache::Release() {
  if (!instance_) return;
  const c10::Device device = instance_->config().device;
  instance_.reset();
  key_.clear();
  ReleaseCachedMemory(device);
}

}  // namespace torchbench
