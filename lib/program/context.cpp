#include "program/context.h"

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/version.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "instance_internal.h"
#include "memory_internal.h"
#include "torchbench/device.h"
#include "torchbench/memory.h"
#include "torchbench/optim.h"
#include "torchbench_config.h"
#include "torchbench_git_commit.h"

namespace torchbench {
namespace {

std::string VersionFromInt(long v, int major_div, int minor_div) {
  if (v <= 0) return "none";
  return absl::StrCat(v / major_div, ".", (v % major_div) / minor_div, ".",
                      v % minor_div);
}

const char* Bool(bool b) { return b ? "true" : "false"; }

}  // namespace

std::vector<std::pair<std::string, std::string>> RunContext(
    c10::Device device, const HarnessFlags& flags) {
  std::vector<std::pair<std::string, std::string>> kv;
  const auto& cuda = at::detail::getCUDAHooks();
  kv.emplace_back("torchbench_version", TORCHBENCH_VERSION);
  kv.emplace_back("torchbench_git_commit", TORCHBENCH_GIT_COMMIT);
  kv.emplace_back("libtorch_version", TORCH_VERSION);
  // The vector kernels ATen dispatches to (ATEN_CPU_CAPABILITY lowers it).
  kv.emplace_back("cpu_capability", at::get_cpu_capability());
  // CUDART_VERSION-style integers: 13000 is 13.0, cuDNN 91000 is 9.10.0.
  const long cudart = cuda.hasCUDA() ? cuda.versionCUDART() : 0;
  kv.emplace_back("cuda_runtime_version",
                  cudart > 0
                      ? absl::StrCat(cudart / 1000, ".", (cudart % 1000) / 10)
                      : "none");
  kv.emplace_back("cudnn_version",
                  cuda.hasCUDA()
                      ? VersionFromInt(cuda.versionCuDNN(), 10000, 100)
                      : "none");
  kv.emplace_back("torchbench_device", device.str());
  kv.emplace_back("device_name", DeviceName(device));
  // Whether results carry device_memory_used (TorchBench's gpu_peak_mem).
  if (device.is_cuda()) {
    kv.emplace_back("nvml", DeviceMemoryUsedStatus());
    // Which CUDA libraries load (cuDNN, cuBLAS, NCCL) can hang on it; the
    // GPU check's Python side records the same key.
    const char* library_path = std::getenv("LD_LIBRARY_PATH");
    kv.emplace_back("ld_library_path", library_path ? library_path : "");
  }
  // "default" resolves per model (each result's label names what ran).
  kv.emplace_back("precision", PrecisionName(flags.precision));
  kv.emplace_back("optimizer_path", OptimizerPathName(flags.optimizer));
  kv.emplace_back(
      "optimizer_path_resolved",
      OptimizerPathName(ResolveOptimizerPath(flags.optimizer, device)));
  // The TF32 flags the requested precision sets, read back from PyTorch
  // (TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1, say, turns matmul TF32 on whatever
  // is set), and the flags this LibTorch starts with.
  const BackendFlags at_start = CurrentBackendFlags();
  ApplyBackendFlags({.allow_tf32_matmul = flags.precision == Precision::kTf32,
                     .allow_tf32_cudnn = true});
  const BackendFlags in_force = CurrentBackendFlags();
  ApplyBackendFlags(at_start);
  kv.emplace_back("allow_tf32_cublas", Bool(in_force.allow_tf32_matmul));
  kv.emplace_back("allow_tf32_cudnn", Bool(in_force.allow_tf32_cudnn));
  kv.emplace_back("torch_flags_at_start", BackendFlagsText(at_start));
  kv.emplace_back("cudnn_benchmark", "per_model");
  kv.emplace_back("cudnn_deterministic", "per_model");
  kv.emplace_back("channels_last", Bool(flags.channels_last));
  if (!flags.weights.empty()) kv.emplace_back("weights_file", flags.weights);
  // Absent for eager, as in the runs (and journals) made before backends.
  if (flags.backend != Backend::kEager) {
    kv.emplace_back("backend", BackendName(flags.backend));
    kv.emplace_back("compiled_dir", flags.compiled);
  }
  if (!flags.op_coverage.empty()) {
    kv.emplace_back("op_coverage_file", flags.op_coverage);
  }
  kv.emplace_back("intra_op_threads", absl::StrCat(at::get_num_threads()));
  kv.emplace_back("inter_op_threads",
                  absl::StrCat(at::get_num_interop_threads()));
  kv.emplace_back("seed", absl::StrCat(flags.seed));
  kv.emplace_back("warmup_steps", absl::StrCat(flags.warmup_steps));
  kv.emplace_back("profile_steps",
                  flags.profile ? absl::StrCat(flags.profile_steps) : "off");
  if (flags.profile_shapes) kv.emplace_back("profile_shapes", "true");
  if (!flags.testonly_slow_op.empty()) {
    kv.emplace_back("testonly_slow_op", flags.testonly_slow_op);
  }
  kv.emplace_back("cpu_memory_counter", Bool(CpuMemoryCounterInstalled()));
  kv.emplace_back("timer", device.is_cpu() ? "steady_clock" : "device_events");
  return kv;
}

}  // namespace torchbench
