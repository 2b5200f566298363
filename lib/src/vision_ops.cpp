#include "torchbench/vision_ops.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <dlfcn.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "torchbench_config.h"

namespace torchbench::vision_ops {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

constexpr const char* kInstallHint =
    "install the torchvision wheel that matches LibTorch (pip install "
    "torchvision==0.29.1 next to torch==2.14.1) or set "
    "TORCHBENCH_TORCHVISION_LIBRARY to its torchvision/_C_stable.so";

// The schemas this file's kernels and calls are written against.
constexpr const char* kSchemas[][2] = {
    {"torchvision::nms",
     "torchvision::nms(Tensor dets, Tensor scores, float iou_threshold) -> "
     "Tensor"},
    {"torchvision::roi_align",
     "torchvision::roi_align(Tensor input, Tensor rois, float spatial_scale, "
     "SymInt pooled_height, SymInt pooled_width, int sampling_ratio, bool "
     "aligned) -> Tensor"},
    {"torchvision::_roi_align_backward",
     "torchvision::_roi_align_backward(Tensor grad, Tensor rois, float "
     "spatial_scale, SymInt pooled_height, SymInt pooled_width, SymInt "
     "batch_size, SymInt channels, SymInt height, SymInt width, int "
     "sampling_ratio, bool aligned) -> Tensor"},
    {"torchvision::roi_pool",
     "torchvision::roi_pool(Tensor input, Tensor rois, float spatial_scale, "
     "SymInt pooled_height, SymInt pooled_width) -> (Tensor, Tensor)"},
    {"torchvision::_roi_pool_backward",
     "torchvision::_roi_pool_backward(Tensor grad, Tensor rois, Tensor "
     "argmax, float spatial_scale, SymInt pooled_height, SymInt pooled_width, "
     "SymInt batch_size, SymInt channels, SymInt height, SymInt width) -> "
     "Tensor"},
};

using NmsFn = at::Tensor(const at::Tensor&, const at::Tensor&, double);
using RoiAlignFn = at::Tensor(const at::Tensor&, const at::Tensor&, double,
                              c10::SymInt, c10::SymInt, int64_t, bool);
using RoiAlignBackwardFn = at::Tensor(const at::Tensor&, const at::Tensor&,
                                      double, c10::SymInt, c10::SymInt,
                                      c10::SymInt, c10::SymInt, c10::SymInt,
                                      c10::SymInt, int64_t, bool);
using RoiPoolFn = std::tuple<at::Tensor, at::Tensor>(const at::Tensor&,
                                                     const at::Tensor&, double,
                                                     c10::SymInt, c10::SymInt);
using RoiPoolBackwardFn = at::Tensor(const at::Tensor&, const at::Tensor&,
                                     const at::Tensor&, double, c10::SymInt,
                                     c10::SymInt, c10::SymInt, c10::SymInt,
                                     c10::SymInt, c10::SymInt);

template <typename Fn>
c10::TypedOperatorHandle<Fn> Typed(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Fn>();
}

// Handles are looked up after loading, once.
struct Ops {
  c10::TypedOperatorHandle<NmsFn> nms = Typed<NmsFn>("torchvision::nms");
  c10::TypedOperatorHandle<RoiAlignFn> roi_align =
      Typed<RoiAlignFn>("torchvision::roi_align");
  c10::TypedOperatorHandle<RoiAlignBackwardFn> roi_align_backward =
      Typed<RoiAlignBackwardFn>("torchvision::_roi_align_backward");
  c10::TypedOperatorHandle<RoiPoolFn> roi_pool =
      Typed<RoiPoolFn>("torchvision::roi_pool");
  c10::TypedOperatorHandle<RoiPoolBackwardFn> roi_pool_backward =
      Typed<RoiPoolBackwardFn>("torchvision::_roi_pool_backward");
};

const Ops& GetOps() {
  static const Ops* ops = new Ops();
  return *ops;
}

// ---- Autograd: torchvision/_autograd_registrations.py's rules ----

class RoiAlignFunction : public torch::autograd::Function<RoiAlignFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input,
                            const at::Tensor& rois, double spatial_scale,
                            c10::SymInt pooled_height, c10::SymInt pooled_width,
                            int64_t sampling_ratio, bool aligned) {
    ctx->save_for_backward({rois});
    ctx->saved_data["input_shape"] = input.sym_sizes().vec();
    ctx->saved_data["spatial_scale"] = spatial_scale;
    ctx->saved_data["pooled_height"] = pooled_height;
    ctx->saved_data["pooled_width"] = pooled_width;
    ctx->saved_data["sampling_ratio"] = sampling_ratio;
    ctx->saved_data["aligned"] = aligned;
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return GetOps().roi_align.call(
        input, rois, spatial_scale, std::move(pooled_height),
        std::move(pooled_width), sampling_ratio, aligned);
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    const at::Tensor rois = ctx->get_saved_variables()[0];
    const auto shape = ctx->saved_data["input_shape"].toSymIntVector();
    at::Tensor grad_input = GetOps().roi_align_backward.call(
        grad_outputs[0], rois, ctx->saved_data["spatial_scale"].toDouble(),
        ctx->saved_data["pooled_height"].toSymInt(),
        ctx->saved_data["pooled_width"].toSymInt(), shape[0], shape[1],
        shape[2], shape[3], ctx->saved_data["sampling_ratio"].toInt(),
        ctx->saved_data["aligned"].toBool());
    return {grad_input,   at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

class RoiPoolFunction : public torch::autograd::Function<RoiPoolFunction> {
 public:
  static tensor_list forward(AutogradContext* ctx, const at::Tensor& input,
                             const at::Tensor& rois, double spatial_scale,
                             c10::SymInt pooled_height,
                             c10::SymInt pooled_width) {
    ctx->saved_data["input_shape"] = input.sym_sizes().vec();
    ctx->saved_data["spatial_scale"] = spatial_scale;
    ctx->saved_data["pooled_height"] = pooled_height;
    ctx->saved_data["pooled_width"] = pooled_width;
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    auto [output, argmax] = GetOps().roi_pool.call(input, rois, spatial_scale,
                                                   std::move(pooled_height),
                                                   std::move(pooled_width));
    ctx->save_for_backward({rois, argmax});
    ctx->mark_non_differentiable({argmax});
    return {output, argmax};
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const auto shape = ctx->saved_data["input_shape"].toSymIntVector();
    at::Tensor grad_input = GetOps().roi_pool_backward.call(
        grad_outputs[0], saved[0], saved[1],
        ctx->saved_data["spatial_scale"].toDouble(),
        ctx->saved_data["pooled_height"].toSymInt(),
        ctx->saved_data["pooled_width"].toSymInt(), shape[0], shape[1],
        shape[2], shape[3]);
    return {grad_input, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// The backward ops are differentiable in form only: their gradient node
// refuses, as torchvision's _no_double_backward does.
class RoiAlignBackwardFunction
    : public torch::autograd::Function<RoiAlignBackwardFunction> {
 public:
  static at::Tensor forward(AutogradContext* /*ctx*/, const at::Tensor& grad,
                            const at::Tensor& rois, double spatial_scale,
                            c10::SymInt pooled_height, c10::SymInt pooled_width,
                            c10::SymInt batch_size, c10::SymInt channels,
                            c10::SymInt height, c10::SymInt width,
                            int64_t sampling_ratio, bool aligned) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return GetOps().roi_align_backward.call(
        grad, rois, spatial_scale, std::move(pooled_height),
        std::move(pooled_width), std::move(batch_size), std::move(channels),
        std::move(height), std::move(width), sampling_ratio, aligned);
  }
  static tensor_list backward(AutogradContext* /*ctx*/, tensor_list) {
    TORCH_CHECK(false, "double backwards on roi_align not supported");
  }
};

class RoiPoolBackwardFunction
    : public torch::autograd::Function<RoiPoolBackwardFunction> {
 public:
  static at::Tensor forward(AutogradContext* /*ctx*/, const at::Tensor& grad,
                            const at::Tensor& rois, const at::Tensor& argmax,
                            double spatial_scale, c10::SymInt pooled_height,
                            c10::SymInt pooled_width, c10::SymInt batch_size,
                            c10::SymInt channels, c10::SymInt height,
                            c10::SymInt width) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return GetOps().roi_pool_backward.call(
        grad, rois, argmax, spatial_scale, std::move(pooled_height),
        std::move(pooled_width), std::move(batch_size), std::move(channels),
        std::move(height), std::move(width));
  }
  static tensor_list backward(AutogradContext* /*ctx*/, tensor_list) {
    TORCH_CHECK(false, "double backwards on roi_pool not supported");
  }
};

at::Tensor RoiAlignAutograd(const at::Tensor& input, const at::Tensor& rois,
                            double spatial_scale, c10::SymInt pooled_height,
                            c10::SymInt pooled_width, int64_t sampling_ratio,
                            bool aligned) {
  return RoiAlignFunction::apply(
      input, rois, spatial_scale, std::move(pooled_height),
      std::move(pooled_width), sampling_ratio, aligned);
}

std::tuple<at::Tensor, at::Tensor> RoiPoolAutograd(const at::Tensor& input,
                                                   const at::Tensor& rois,
                                                   double spatial_scale,
                                                   c10::SymInt pooled_height,
                                                   c10::SymInt pooled_width) {
  tensor_list out =
      RoiPoolFunction::apply(input, rois, spatial_scale,
                             std::move(pooled_height), std::move(pooled_width));
  return {out[0], out[1]};
}

at::Tensor RoiAlignBackwardAutograd(
    const at::Tensor& grad, const at::Tensor& rois, double spatial_scale,
    c10::SymInt pooled_height, c10::SymInt pooled_width, c10::SymInt batch_size,
    c10::SymInt channels, c10::SymInt height, c10::SymInt width,
    int64_t sampling_ratio, bool aligned) {
  return RoiAlignBackwardFunction::apply(
      grad, rois, spatial_scale, std::move(pooled_height),
      std::move(pooled_width), std::move(batch_size), std::move(channels),
      std::move(height), std::move(width), sampling_ratio, aligned);
}

at::Tensor RoiPoolBackwardAutograd(
    const at::Tensor& grad, const at::Tensor& rois, const at::Tensor& argmax,
    double spatial_scale, c10::SymInt pooled_height, c10::SymInt pooled_width,
    c10::SymInt batch_size, c10::SymInt channels, c10::SymInt height,
    c10::SymInt width) {
  return RoiPoolBackwardFunction::apply(
      grad, rois, argmax, spatial_scale, std::move(pooled_height),
      std::move(pooled_width), std::move(batch_size), std::move(channels),
      std::move(height), std::move(width));
}

// ---- Autocast: run in float32 with autocast excluded, cast back ----

// The keys torchvision's Python excludes (CPU, CUDA, XPU).
const c10::DispatchKeySet kAutocastKeys({c10::DispatchKey::AutocastCPU,
                                         c10::DispatchKey::AutocastCUDA,
                                         c10::DispatchKey::AutocastXPU});

// at::autocast::cached_cast(at::kFloat, t) without the cache: float64 and
// non-floating tensors pass unchanged.
at::Tensor ToFloat32(const at::Tensor& t) {
  if (t.is_floating_point() && t.scalar_type() != at::kDouble) {
    return t.to(at::kFloat);
  }
  return t;
}

at::Tensor NmsAutocast(const at::Tensor& dets, const at::Tensor& scores,
                       double iou_threshold) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(kAutocastKeys);
  return GetOps().nms.call(ToFloat32(dets), ToFloat32(scores), iou_threshold);
}

at::Tensor RoiAlignAutocast(const at::Tensor& input, const at::Tensor& rois,
                            double spatial_scale, c10::SymInt pooled_height,
                            c10::SymInt pooled_width, int64_t sampling_ratio,
                            bool aligned) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(kAutocastKeys);
  return GetOps()
      .roi_align
      .call(ToFloat32(input), ToFloat32(rois), spatial_scale,
            std::move(pooled_height), std::move(pooled_width), sampling_ratio,
            aligned)
      .to(input.scalar_type());
}

std::tuple<at::Tensor, at::Tensor> RoiPoolAutocast(const at::Tensor& input,
                                                   const at::Tensor& rois,
                                                   double spatial_scale,
                                                   c10::SymInt pooled_height,
                                                   c10::SymInt pooled_width) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(kAutocastKeys);
  auto [output, argmax] =
      GetOps().roi_pool.call(ToFloat32(input), ToFloat32(rois), spatial_scale,
                             std::move(pooled_height), std::move(pooled_width));
  // torchvision casts argmax to the input's dtype too; kept as it does.
  return {output.to(input.scalar_type()), argmax.to(input.scalar_type())};
}

void RegisterKernels() {
  // torch::Library objects must outlive the process's use of the kernels.
  auto* autograd =
      new torch::Library(torch::Library::IMPL, "torchvision",
                         c10::DispatchKey::Autograd, __FILE__, __LINE__);
  autograd->impl("roi_align", TORCH_FN(RoiAlignAutograd));
  autograd->impl("roi_pool", TORCH_FN(RoiPoolAutograd));
  autograd->impl("_roi_align_backward", TORCH_FN(RoiAlignBackwardAutograd));
  autograd->impl("_roi_pool_backward", TORCH_FN(RoiPoolBackwardAutograd));
  for (c10::DispatchKey key :
       {c10::DispatchKey::AutocastCPU, c10::DispatchKey::AutocastCUDA}) {
    auto* autocast = new torch::Library(torch::Library::IMPL, "torchvision",
                                        key, __FILE__, __LINE__);
    autocast->impl("nms", TORCH_FN(NmsAutocast));
    autocast->impl("roi_align", TORCH_FN(RoiAlignAutocast));
    if (key == c10::DispatchKey::AutocastCUDA) {
      autocast->impl("roi_pool", TORCH_FN(RoiPoolAutocast));
    }
  }
}

// ---- Loading ----

std::string ConfiguredLibraryPath() {
  if (const char* env = std::getenv("TORCHBENCH_TORCHVISION_LIBRARY");
      env != nullptr && *env != '\0') {
    return env;
  }
  return TORCHBENCH_TORCHVISION_LIBRARY_DEFAULT;
}

// Satisfies the library's libtorch_python.so entry without Python.
absl::Status LoadTorchPythonStub() {
  if (dlopen("libtorch_python.so", RTLD_NOW | RTLD_NOLOAD) != nullptr) {
    return absl::OkStatus();  // a Python host already has the real one
  }
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("TORCHBENCH_TORCH_PYTHON_STUB");
      env != nullptr && *env != '\0') {
    candidates.emplace_back(env);
  }
  candidates.emplace_back(TORCHBENCH_TORCH_PYTHON_STUB_BUILD_PATH);
  candidates.emplace_back(TORCHBENCH_TORCH_PYTHON_STUB_INSTALL_PATH);
  std::string errors;
  for (const std::string& candidate : candidates) {
    std::error_code ec;
    if (!std::filesystem::exists(candidate, ec)) continue;
    if (dlopen(candidate.c_str(), RTLD_NOW | RTLD_GLOBAL) != nullptr) {
      return absl::OkStatus();
    }
    absl::StrAppend(&errors, " ", dlerror());
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "cannot load the libtorch_python.so stub that torchvision's operator "
      "library needs (looked for ",
      TORCHBENCH_TORCH_PYTHON_STUB_BUILD_PATH, " and ",
      TORCHBENCH_TORCH_PYTHON_STUB_INSTALL_PATH,
      "; set TORCHBENCH_TORCH_PYTHON_STUB to it)", errors));
}

absl::Status CheckSchemas() {
  for (const auto& [name, expected] : kSchemas) {
    auto op = c10::Dispatcher::singleton().findSchema({name, ""});
    if (!op.has_value()) {
      return absl::FailedPreconditionError(
          absl::StrCat(LibraryPath(), " does not define ", name));
    }
    std::string actual = c10::toString(op->schema());
    if (actual != expected) {
      return absl::FailedPreconditionError(
          absl::StrCat(LibraryPath(), " defines ", actual,
                       "; torchbench is written against ", expected));
    }
  }
  return absl::OkStatus();
}

absl::Status LoadOnce() {
  const std::string path = ConfiguredLibraryPath();
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) {
    return absl::NotFoundError(absl::StrCat(
        "torchvision's operator library was not found",
        path.empty() ? "" : absl::StrCat(" at ", path), ": ", kInstallHint));
  }
  if (absl::Status stub = LoadTorchPythonStub(); !stub.ok()) return stub;
  // Never closed: the dispatcher keeps pointers into it.
  if (dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot load ", path, ": ", dlerror(), " (", kInstallHint, ")"));
  }
  if (absl::Status schemas = CheckSchemas(); !schemas.ok()) return schemas;
  RegisterKernels();
  GetOps();
  return absl::OkStatus();
}

}  // namespace

absl::Status Load() {
  static const absl::Status* status = new absl::Status(LoadOnce());
  return *status;
}

void RequireLoaded() {
  if (absl::Status status = Load(); !status.ok()) {
    throw std::runtime_error(std::string(status.message()));
  }
}

std::string LibraryPath() { return ConfiguredLibraryPath(); }

torch::Tensor Nms(const torch::Tensor& boxes, const torch::Tensor& scores,
                  double iou_threshold) {
  RequireLoaded();
  return GetOps().nms.call(boxes, scores, iou_threshold);
}

int64_t BatchedNmsLoopThreshold(const torch::Device& device) {
  return device.is_cpu() ? 4000 : 100000;
}

torch::Tensor BatchedNms(const torch::Tensor& boxes,
                         const torch::Tensor& scores, const torch::Tensor& idxs,
                         double iou_threshold) {
  if (boxes.numel() > BatchedNmsLoopThreshold(boxes.device())) {
    torch::Tensor keep_mask = torch::zeros_like(scores, torch::kBool);
    for (const torch::Tensor& class_id :
         std::get<0>(torch::_unique(idxs)).unbind()) {
      torch::Tensor current = torch::where(idxs == class_id)[0];
      torch::Tensor kept =
          Nms(boxes.index({current}), scores.index({current}), iou_threshold);
      keep_mask.index_put_({current.index({kept})}, true);
    }
    torch::Tensor keep = torch::where(keep_mask)[0];
    return keep.index(
        {std::get<1>(scores.index({keep}).sort(/*dim=*/-1, true))});
  }
  if (boxes.numel() == 0) {
    return torch::empty({0}, boxes.options().dtype(torch::kLong));
  }
  torch::Tensor max_coordinate = boxes.max();
  torch::Tensor offsets =
      idxs.to(boxes) * (max_coordinate + torch::tensor(1).to(boxes));
  return Nms(boxes + offsets.unsqueeze(1), scores, iou_threshold);
}

torch::Tensor RoiAlign(const torch::Tensor& input, const torch::Tensor& rois,
                       double spatial_scale, int64_t pooled_height,
                       int64_t pooled_width, int64_t sampling_ratio,
                       bool aligned) {
  RequireLoaded();
  return GetOps().roi_align.call(
      input, rois, spatial_scale, c10::SymInt(pooled_height),
      c10::SymInt(pooled_width), sampling_ratio, aligned);
}

std::tuple<torch::Tensor, torch::Tensor> RoiPool(const torch::Tensor& input,
                                                 const torch::Tensor& rois,
                                                 double spatial_scale,
                                                 int64_t pooled_height,
                                                 int64_t pooled_width) {
  RequireLoaded();
  return GetOps().roi_pool.call(input, rois, spatial_scale,
                                c10::SymInt(pooled_height),
                                c10::SymInt(pooled_width));
}

}  // namespace torchbench::vision_ops
