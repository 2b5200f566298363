#include "torchbench/device.h"

#include <ATen/DeviceAccelerator.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/cuda.h>

#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "torchbench_config.h"

#if TORCHBENCH_HAVE_CUDA_RUNTIME
#include <cuda_runtime_api.h>
#endif

namespace torchbench {

bool CudaAvailable() { return torch::cuda::is_available(); }

c10::Device DefaultDevice() {
  return CudaAvailable() ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
}

absl::StatusOr<c10::Device> ParseDevice(const std::string& text) {
  if (text == "cpu") return c10::Device(c10::kCPU);
  int index = 0;
  if (text == "cuda") {
    index = 0;
  } else if (text.rfind("cuda:", 0) == 0) {
    if (!absl::SimpleAtoi(text.substr(5), &index) || index < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "bad device '", text, "': expected cpu, cuda or cuda:<index>"));
    }
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown device '", text, "': expected cpu, cuda or cuda:<index>"));
  }
  if (!CudaAvailable()) {
    return absl::FailedPreconditionError(
        absl::StrCat("device '", text,
                     "' asked for, but no CUDA device is usable here "
                     "(use --torchbench_device=cpu)"));
  }
  const int count = static_cast<int>(torch::cuda::device_count());
  if (index >= count) {
    return absl::FailedPreconditionError(
        absl::StrCat("device '", text, "' asked for, but only ", count,
                     " CUDA device(s) are visible"));
  }
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
}

void SynchronizeDevice(c10::Device device) {
  if (device.is_cpu()) return;
  at::accelerator::synchronizeDevice(device.index());
}

std::string DeviceName(c10::Device device) {
  if (device.is_cpu()) {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpuinfo, line)) {
      if (line.rfind("model name", 0) == 0) {
        auto colon = line.find(':');
        if (colon != std::string::npos && colon + 2 <= line.size()) {
          return line.substr(colon + 2);
        }
      }
    }
    return "cpu";
  }
#if TORCHBENCH_HAVE_CUDA_RUNTIME
  if (device.is_cuda()) {
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, device.index()) == cudaSuccess) {
      return prop.name;
    }
  }
#endif
  return device.str();
}

}  // namespace torchbench
