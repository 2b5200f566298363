// File: program/compiled_model.h
//
// --torchbench_backend=aoti|torchscript: an Eval instance run from a package
// that `tools/tb compile` made (an AOTInductor .pt2 or a TorchScript module
// of TorchBench's own Python model), as a Model, so the harness measures it
// exactly as it measures the eager port: warm-up, sync, timing, memory,
// profiles, isolation, journal.
//
// A package directory (tools/README.md, "Compiled models"):
//
//   <dir>/<model>/batch_size_<N>/manifest.json       what was compiled, how, where
//                                aoti.pt2 | torchscript.pt
//                                inputs.safetensors   the flat inputs "0", "1", ...
//                                outputs.safetensors  Python eager's outputs on them
//                                weights.safetensors  the module's weights (optional)
//
// Before anything runs, the manifest is checked against the instance and this
// machine: the model and batch, the torch version (major.minor.patch), the
// CPU flags it was compiled for, on a CPU the intra-op threads (a package
// compiled at one thread has no parallel regions at all), and the stored
// inputs against the manifest's shapes. Each refusal is one line naming what differs.
#ifndef TORCHBENCH_PROGRAM_COMPILED_MODEL_H_
#define TORCHBENCH_PROGRAM_COMPILED_MODEL_H_

#include <torch/types.h>

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {

enum class Backend { kEager, kAoti, kTorchScript };

// Returns the flag spelling: "eager", "aoti" or "torchscript".
const char* BackendName(Backend backend);

// Parses a flag spelling; nullopt when unknown.
std::optional<Backend> ParseBackend(std::string_view text);

// What the machine running a package has, for the manifest's checks.
struct CompiledHost {
  std::string torch_version;        // TORCH_VERSION of this LibTorch.
  std::set<std::string> cpu_flags;  // /proc/cpuinfo's flags.
  int threads = 1;                  // Intra-op threads of the run.

  static CompiledHost Current();
};

// One instance's manifest.json, the part the program uses.
struct CompiledManifest {
  std::string directory;  // <dir>/<model>/batch_size_<N>
  std::string model;
  int64_t batch_size = 0;
  std::string device;
  std::string torch_version;
  int threads = 0;
  std::vector<std::string> cpu_flags;
  std::string reference;  // "pip:<package>" or "torchbench"
  std::vector<std::vector<int64_t>> input_shapes;
  std::string weights_file;  // "" when the tool wrote none.
  // False when two eager calls on the same inputs differed (a forward that
  // draws random numbers): its outputs cannot be held to a bound.
  bool eager_repeatable = true;
  std::string package_file;  // The backend's file.
};

// <dir>/<model>/batch_size_<N>
std::string CompiledDirectory(const std::string& dir, const std::string& model,
                              int64_t batch_size);

// Reads `<directory>/manifest.json` for `backend` and checks it against the
// instance (`model`, `batch_size`, `device`) and `host`. Errors are one line
// (FailedPrecondition for a package that exists but cannot run here,
// NotFound for a missing one, InvalidArgument for a corrupt manifest).
absl::StatusOr<CompiledManifest> ReadCompiledManifest(
    const std::string& directory, Backend backend, const std::string& model,
    int64_t batch_size, const c10::Device& device, const CompiledHost& host);

// The largest elementwise |got - want| over the largest |want|, over every
// output (0 for equal tensors; integer and boolean outputs: 0 or 1; NaN where
// `want` has NaN agrees, NaN elsewhere is infinity). Throws
// std::runtime_error naming the output when counts, shapes or dtypes differ.
double LargestRelativeError(const std::vector<torch::Tensor>& got,
                            const std::vector<torch::Tensor>& want);

// The fp32 bound of LargestRelativeError a compiled instance must meet
// against eager (compiled code fuses and reorders reductions, and freezing
// folds batch norm into convolutions, so bitwise equality is not expected).
inline constexpr double kCompiledTolerance = 1e-4;

// A package run as a Model: Step() runs it on the stored inputs and returns
// its first output; the first step's outputs are kept for the fidelity
// check. Its module() is empty (the package holds the weights).
class CompiledModel : public Model {
 public:
  ~CompiledModel() override;

  // Loads the package of `manifest` and its stored inputs onto `device`.
  static absl::StatusOr<std::unique_ptr<CompiledModel>> Load(
      const CompiledManifest& manifest, Backend backend,
      const c10::Device& device);

  torch::Tensor Step() override;
  torch::nn::Module& module() override { return empty_; }

  const CompiledManifest& manifest() const { return manifest_; }
  const std::vector<torch::Tensor>& inputs() const { return inputs_; }
  // Every output of the first step (empty before it).
  const std::vector<torch::Tensor>& first_outputs() const {
    return first_outputs_;
  }

  // Runs the loaded package (AOTInductor's or TorchScript's), flat tensors
  // in and out; defined in compiled_model.cpp.
  class Runner;

 private:
  CompiledModel(CompiledManifest manifest, std::unique_ptr<Runner> runner,
                std::vector<torch::Tensor> inputs);

  CompiledManifest manifest_;
  std::unique_ptr<Runner> runner_;
  std::vector<torch::Tensor> inputs_;
  std::vector<torch::Tensor> first_outputs_;
  torch::nn::Module empty_;
};

// A RegisteredModel whose factory loads `entry`'s package for its instance
// (the spec stays the port's: names, batch rules, counts). Its factory
// throws the manifest's or the loader's one-line error.
RegisteredModel CompiledEntry(const RegisteredModel& entry, Backend backend,
                              const std::string& compiled_dir);

// What the fidelity check found on the first step: the largest relative
// error against Python eager's stored outputs, and against the port's own
// eager Forward on the same weights and inputs where the port takes the
// reference's inputs (FidelityCheck) and the tool stored the weights.
struct CompiledFidelity {
  double versus_python_eager = 0;
  std::optional<double> versus_port;
};

// Compares `model`'s first outputs with the stored eager outputs and, where
// it can, with `port` (built for the instance's config) on the package's
// weights and inputs. Throws std::runtime_error naming the comparison when an
// error exceeds kCompiledTolerance; where the manifest says eager is not
// repeatable, only the error against Python eager is measured, unchecked.
CompiledFidelity CheckCompiledFidelity(const CompiledModel& model,
                                       const RegisteredModel& port,
                                       const ModelConfig& config);

}  // namespace torchbench

#endif  // TORCHBENCH_PROGRAM_COMPILED_MODEL_H_
