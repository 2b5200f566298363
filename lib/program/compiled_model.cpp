#include "program/compiled_model.h"

#include <c10/util/Exception.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/script.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "json.h"
#include "torchbench/checks.h"
#include "torchbench/instance.h"
#include "torchbench/vision_ops.h"
#include "torchbench/weights.h"

namespace torchbench {
namespace {

namespace fs = std::filesystem;

// "2.14.1+cu130" -> "2.14.1", "2.15.0a0+git..." -> "2.15.0": a package's
// generated code and its runtime ABI follow the release, not the build's
// suffix.
std::string Release(const std::string& version) {
  return version.substr(0, version.find_first_not_of("0123456789."));
}

std::string OneLine(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

std::string Describe(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) {
    return OneLine(c10_error->what_without_backtrace());
  }
  return OneLine(e.what());
}

std::vector<int64_t> ShapeOf(const nlohmann::ordered_json& spec) {
  std::vector<int64_t> shape;
  if (spec.is_object() && spec.contains("shape") && spec["shape"].is_array()) {
    for (const auto& d : spec["shape"]) {
      if (d.is_number_integer()) shape.push_back(d.get<int64_t>());
    }
  }
  return shape;
}

std::string ShapeText(c10::IntArrayRef shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ","), "]");
}

// Appends the tensors of an output IValue (a tensor, or tuples, lists and
// dicts of them, in order) to `out`.
void Flatten(const c10::IValue& value, std::vector<torch::Tensor>* out) {
  if (value.isTensor()) {
    out->push_back(value.toTensor());
  } else if (value.isTuple()) {
    for (const c10::IValue& v : value.toTupleRef().elements()) Flatten(v, out);
  } else if (value.isList()) {
    for (const c10::IValue& v : value.toListRef()) Flatten(v, out);
  } else if (value.isGenericDict()) {
    for (const auto& item : value.toGenericDict()) Flatten(item.value(), out);
  }
}

}  // namespace

const char* BackendName(Backend backend) {
  switch (backend) {
    case Backend::kEager:
      return "eager";
    case Backend::kAoti:
      return "aoti";
    case Backend::kTorchScript:
      return "torchscript";
  }
  return "?";
}

std::optional<Backend> ParseBackend(std::string_view text) {
  for (Backend b : {Backend::kEager, Backend::kAoti, Backend::kTorchScript}) {
    if (text == BackendName(b)) return b;
  }
  return std::nullopt;
}

CompiledHost CompiledHost::Current() {
  CompiledHost host;
  host.torch_version = TORCH_VERSION;
  host.threads = at::get_num_threads();
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    for (absl::string_view flag :
         absl::StrSplit(line.substr(colon + 1), ' ', absl::SkipEmpty())) {
      host.cpu_flags.emplace(flag);
    }
    break;
  }
  return host;
}

std::string CompiledDirectory(const std::string& dir, const std::string& model,
                              int64_t batch_size) {
  return (fs::path(dir) / model / absl::StrCat("batch_size_", batch_size))
      .string();
}

absl::StatusOr<CompiledManifest> ReadCompiledManifest(
    const std::string& directory, Backend backend, const std::string& model,
    int64_t batch_size, const c10::Device& device, const CompiledHost& host) {
  const std::string path = (fs::path(directory) / "manifest.json").string();
  const std::string recompile = absl::StrCat(" (tools/tb compile ", model,
                                             " --batch-size ", batch_size, ")");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("no compiled package: ", path, " is missing", recompile));
  }
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<nlohmann::ordered_json> parsed = json::Parse(text.str());
  if (!parsed.ok() || !parsed->is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, " is not a manifest: ",
        parsed.ok() ? "not a JSON object" : parsed.status().message()));
  }
  const nlohmann::ordered_json& doc = *parsed;
  CompiledManifest m;
  m.directory = directory;
  m.model = json::StringOr(doc, "model", "");
  m.batch_size = static_cast<int64_t>(json::NumberOr(doc, "batch_size", -1));
  m.device = json::StringOr(doc, "device", "cpu");
  m.torch_version = json::StringOr(doc, "torch_version", "");
  m.threads = static_cast<int>(json::NumberOr(doc, "threads", -1));
  m.reference = json::StringOr(doc, "reference", "");
  if (doc.contains("cpu_flags") && doc["cpu_flags"].is_array()) {
    for (const auto& f : doc["cpu_flags"]) {
      if (f.is_string()) m.cpu_flags.push_back(f.get<std::string>());
    }
  }
  if (doc.contains("inputs") && doc["inputs"].is_array()) {
    for (const auto& spec : doc["inputs"]) {
      m.input_shapes.push_back(ShapeOf(spec));
    }
  }
  if (doc.contains("weights_file") && doc["weights_file"].is_string()) {
    m.weights_file = doc["weights_file"].get<std::string>();
  }
  m.eager_repeatable = !(doc.contains("eager_repeatable") &&
                         doc["eager_repeatable"].is_boolean() &&
                         !doc["eager_repeatable"].get<bool>());
  if (json::NumberOr(doc, "format", 0) != 1 || m.model.empty() ||
      m.batch_size < 1 || m.torch_version.empty() || m.threads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(path,
                     " is not a format-1 manifest (model, batch_size, "
                     "torch_version, threads)",
                     recompile));
  }
  const char* name = BackendName(backend);
  const nlohmann::ordered_json* entry = nullptr;
  if (doc.contains("backends") && doc["backends"].is_object() &&
      doc["backends"].contains(name)) {
    entry = &doc["backends"][name];
  }
  if (entry == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("no ", name, " package in ", directory, recompile));
  }
  if (json::StringOr(*entry, "status", "") != "ok") {
    return absl::FailedPreconditionError(absl::StrCat(
        name, " compile failed (", json::StringOr(*entry, "phase", "?"),
        "): ", json::StringOr(*entry, "reason", "no reason recorded")));
  }
  m.package_file = json::StringOr(*entry, "file", "");
  // What was compiled must be what runs.
  if (m.model != model) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the package in ", directory, " is ", m.model, "'s, not ", model));
  }
  if (m.batch_size != batch_size) {
    return absl::FailedPreconditionError(
        absl::StrCat("the package in ", directory, " was compiled for batch ",
                     m.batch_size, ", not ", batch_size, recompile));
  }
  const std::string want_device = device.is_cuda() ? "cuda" : "cpu";
  if (m.device != want_device) {
    return absl::FailedPreconditionError(
        absl::StrCat("the package was compiled for ", m.device, ", not ",
                     want_device, recompile));
  }
  if (Release(m.torch_version) != Release(host.torch_version)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the package was made by torch ", m.torch_version,
        "; this program runs LibTorch ", host.torch_version, recompile));
  }
  std::vector<std::string> missing;
  for (const std::string& flag : m.cpu_flags) {
    if (!host.cpu_flags.contains(flag)) missing.push_back(flag);
  }
  if (!missing.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the package was compiled for a CPU with ",
        absl::StrJoin(missing, ", "), ", which this one lacks", recompile));
  }
  // A CUDA package's kernels do not follow the host's intra-op threads.
  if (!device.is_cuda() && m.threads != host.threads) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the package was compiled at ", m.threads,
        " intra-op thread(s) and this run has ", host.threads,
        " (a package compiled at 1 thread has no parallel code): run at ",
        m.threads, " or compile with --threads ", host.threads));
  }
  if (m.package_file.empty() ||
      !fs::is_regular_file(fs::path(directory) / m.package_file)) {
    return absl::NotFoundError(
        absl::StrCat("the manifest names ", name, " package '", m.package_file,
                     "', which is not in ", directory, recompile));
  }
  return m;
}

double LargestRelativeError(const std::vector<torch::Tensor>& got,
                            const std::vector<torch::Tensor>& want) {
  if (got.size() != want.size()) {
    throw std::runtime_error(absl::StrCat(got.size(), " outputs where ",
                                          want.size(), " were expected"));
  }
  double largest = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const torch::Tensor& a = got[i];
    const torch::Tensor& b = want[i];
    if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) {
      throw std::runtime_error(absl::StrCat(
          "output ", i, " is ", c10::toString(a.scalar_type()),
          ShapeText(a.sizes()), " where ", c10::toString(b.scalar_type()),
          ShapeText(b.sizes()), " was expected"));
    }
    if (a.numel() == 0) continue;
    const torch::Tensor x = a.detach().cpu();
    const torch::Tensor y = b.detach().cpu();
    if (!at::isFloatingType(y.scalar_type()) &&
        !at::isComplexType(y.scalar_type())) {
      if (!torch::equal(x, y)) largest = std::max(largest, 1.0);
      continue;
    }
    // NaN where eager has NaN is agreement (a model may output NaN
    // legitimately); NaN anywhere else is the largest error there is.
    const torch::Tensor xd = x.to(torch::kFloat64);
    const torch::Tensor yd = y.to(torch::kFloat64);
    const torch::Tensor both_nan = xd.isnan().logical_and(yd.isnan());
    if (!torch::equal(xd.isnan(), yd.isnan())) {
      return std::numeric_limits<double>::infinity();
    }
    const torch::Tensor finite = both_nan.logical_not();
    const torch::Tensor ys = yd.masked_select(finite);
    const torch::Tensor xs = xd.masked_select(finite);
    if (ys.numel() == 0) continue;
    const double scale = ys.abs().max().item<double>();
    const double diff = (xs - ys).abs().max().item<double>();
    if (std::isnan(diff)) return std::numeric_limits<double>::infinity();
    largest = std::max(largest, scale > 0 ? diff / scale : diff);
  }
  return largest;
}

// ---- CompiledModel ---------------------------------------------------------

class CompiledModel::Runner {
 public:
  virtual ~Runner() = default;
  virtual std::vector<torch::Tensor> Run(
      const std::vector<torch::Tensor>& inputs) = 0;
};

namespace {

class AotiRunner final : public CompiledModel::Runner {
 public:
  AotiRunner(const std::string& path, const c10::Device& device)
      : loader_(path, "model", /*run_single_threaded=*/false,
                /*num_runners=*/1,
                device.is_cuda() ? device.index() : c10::DeviceIndex(-1)) {}
  std::vector<torch::Tensor> Run(
      const std::vector<torch::Tensor>& inputs) override {
    return loader_.run(inputs);
  }

 private:
  torch::inductor::AOTIModelPackageLoader loader_;
};

class TorchScriptRunner final : public CompiledModel::Runner {
 public:
  TorchScriptRunner(const std::string& path, const c10::Device& device)
      : module_(Load(path, device)) {
    module_.eval();
  }
  std::vector<torch::Tensor> Run(
      const std::vector<torch::Tensor>& inputs) override {
    std::vector<c10::IValue> args(inputs.begin(), inputs.end());
    std::vector<torch::Tensor> out;
    Flatten(module_.forward(std::move(args)), &out);
    return out;
  }

 private:
  // A trace of a detection model calls torchvision::nms and roi_align, which
  // resolve only once torchvision's operators are registered: loaded first
  // when the library is there (where it is not, the trace of a model
  // without them loads as before, and one with them names the missing op).
  static torch::jit::Module Load(const std::string& path,
                                 const c10::Device& device) {
    (void)vision_ops::Load();
    return torch::jit::load(path, device);
  }

  torch::jit::Module module_;
};

}  // namespace

CompiledModel::CompiledModel(CompiledManifest manifest,
                             std::unique_ptr<Runner> runner,
                             std::vector<torch::Tensor> inputs)
    : manifest_(std::move(manifest)),
      runner_(std::move(runner)),
      inputs_(std::move(inputs)) {}

CompiledModel::~CompiledModel() = default;

absl::StatusOr<std::unique_ptr<CompiledModel>> CompiledModel::Load(
    const CompiledManifest& manifest, Backend backend,
    const c10::Device& device) {
  const fs::path dir(manifest.directory);
  absl::StatusOr<std::map<std::string, torch::Tensor>> stored =
      ReadSafetensors((dir / "inputs.safetensors").string());
  if (!stored.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the package's inputs: ", stored.status().message()));
  }
  std::vector<torch::Tensor> inputs;
  for (size_t i = 0; i < manifest.input_shapes.size(); ++i) {
    auto it = stored->find(absl::StrCat(i));
    if (it == stored->end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the package's inputs.safetensors lacks input ", i));
    }
    // Checked here, always: the AOTInductor runtime checks shapes only
    // under AOTI_RUNTIME_CHECK_INPUTS=1, and a package given another shape
    // runs and returns garbage-shaped outputs.
    if (it->second.sizes() != c10::IntArrayRef(manifest.input_shapes[i])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the package's input ", i, " has shape ",
          ShapeText(it->second.sizes()), " where the manifest says ",
          ShapeText(manifest.input_shapes[i])));
    }
    inputs.push_back(it->second.to(device));
  }
  if (stored->size() != inputs.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the package's inputs.safetensors holds ", stored->size(),
                     " tensors where the manifest lists ", inputs.size()));
  }
  const std::string path = (dir / manifest.package_file).string();
  std::unique_ptr<Runner> runner;
  try {
    if (backend == Backend::kAoti) {
      // The generated code's own shape checks, on top of the one above.
      ::setenv("AOTI_RUNTIME_CHECK_INPUTS", "1", /*overwrite=*/0);
      runner = std::make_unique<AotiRunner>(path, device);
    } else {
      runner = std::make_unique<TorchScriptRunner>(path, device);
    }
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot load ", path, ": ", Describe(e)));
  }
  return std::unique_ptr<CompiledModel>(
      new CompiledModel(manifest, std::move(runner), std::move(inputs)));
}

torch::Tensor CompiledModel::Step() {
  std::vector<torch::Tensor> out = runner_->Run(inputs_);
  if (out.empty()) throw std::runtime_error("the package returned no output");
  if (first_outputs_.empty()) {
    for (const torch::Tensor& t : out) first_outputs_.push_back(t.clone());
  }
  return out.front();
}

RegisteredModel CompiledEntry(const RegisteredModel& entry, Backend backend,
                              const std::string& compiled_dir) {
  RegisteredModel compiled = entry;
  const std::string model = entry.spec.name;
  compiled.factory = [model, backend, compiled_dir](
                         const ModelConfig& config) -> std::unique_ptr<Model> {
    absl::StatusOr<CompiledManifest> manifest = ReadCompiledManifest(
        CompiledDirectory(compiled_dir, model, config.batch_size), backend,
        model, config.batch_size, config.device, CompiledHost::Current());
    if (!manifest.ok()) {
      throw std::runtime_error(std::string(manifest.status().message()));
    }
    absl::StatusOr<std::unique_ptr<CompiledModel>> loaded =
        CompiledModel::Load(*manifest, backend, config.device);
    if (!loaded.ok()) {
      throw std::runtime_error(std::string(loaded.status().message()));
    }
    return std::move(*loaded);
  };
  return compiled;
}

CompiledFidelity CheckCompiledFidelity(const CompiledModel& model,
                                       const RegisteredModel& port,
                                       const ModelConfig& config) {
  if (model.first_outputs().empty()) {
    throw std::runtime_error("no compiled step ran before the fidelity check");
  }
  const fs::path dir(model.manifest().directory);
  absl::StatusOr<std::map<std::string, torch::Tensor>> stored =
      ReadSafetensors((dir / "outputs.safetensors").string());
  if (!stored.ok()) {
    throw std::runtime_error(absl::StrCat("the package's eager outputs: ",
                                          stored.status().message()));
  }
  std::vector<torch::Tensor> want;
  for (size_t i = 0; i < stored->size(); ++i) {
    auto it = stored->find(absl::StrCat(i));
    if (it == stored->end()) {
      throw std::runtime_error(
          absl::StrCat("the package's outputs.safetensors lacks output ", i));
    }
    want.push_back(it->second);
  }
  CompiledFidelity fidelity;
  try {
    fidelity.versus_python_eager =
        LargestRelativeError(model.first_outputs(), want);
  } catch (const std::exception& e) {
    throw std::runtime_error(
        absl::StrCat("compiled outputs against Python eager's: ", e.what()));
  }
  // A forward that draws random numbers (hf_Reformer's LSH rotations) gives
  // other outputs on every call, eager too: its error is reported, not held
  // to the bound.
  if (!model.manifest().eager_repeatable) return fidelity;
  if (!(fidelity.versus_python_eager <= kCompiledTolerance)) {
    throw std::runtime_error(absl::StrCat(
        "compiled outputs differ from Python eager's by ",
        fidelity.versus_python_eager, " (largest relative error; fp32 bound ",
        kCompiledTolerance, ")"));
  }
  // The port, on the package's weights and inputs, where it runs the
  // reference's own forward on them: a pip-referenced model's FidelityCheck.
  if (port.spec.checks.python_reference.empty() ||
      model.manifest().reference.rfind("pip:", 0) != 0 ||
      model.manifest().weights_file.empty()) {
    return fidelity;
  }
  ModelConfig eager = config;
  eager.mode = Mode::kEval;
  Instance instance(port, eager);
  auto* check = dynamic_cast<FidelityCheck*>(&instance.model());
  if (check == nullptr) return fidelity;
  const absl::Status loaded =
      instance.LoadWeights((dir / model.manifest().weights_file).string());
  if (!loaded.ok()) {
    throw std::runtime_error(absl::StrCat(
        "the port cannot load the package's weights: ", loaded.message()));
  }
  torch::Tensor port_out;
  {
    torch::NoGradGuard no_grad;
    port_out = check->Forward(model.inputs());
  }
  if (port_out.sizes() != model.first_outputs().front().sizes()) {
    return fidelity;  // The port's Forward returns another view of it.
  }
  fidelity.versus_port =
      LargestRelativeError({model.first_outputs().front()}, {port_out});
  if (!(*fidelity.versus_port <= kCompiledTolerance)) {
    throw std::runtime_error(absl::StrCat(
        "compiled outputs differ from the port's eager Forward by ",
        *fidelity.versus_port, " (largest relative error; fp32 bound ",
        kCompiledTolerance, ")"));
  }
  return fidelity;
}

}  // namespace torchbench
