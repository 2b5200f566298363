#include "torchbench/memory.h"

#include <ATen/DeviceAccelerator.h>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/alignment.h>
#include <c10/core/impl/alloc_cpu.h>
#include <dlfcn.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"
#include "memory_internal.h"
#include "torchbench_config.h"

#if TORCHBENCH_HAVE_CUDA_RUNTIME
#include <cuda_runtime_api.h>
#endif

namespace torchbench {
namespace {

// Each block carries its size in a header of one alignment unit in front of
// the data, so the DataPtr's context stays equal to its data pointer (some
// LibTorch paths use raw_allocate, which asserts that).
constexpr size_t kHeader = c10::gAlignment;

std::atomic<int64_t> current_bytes{0};
std::atomic<int64_t> peak_bytes{0};

void UpdatePeak(int64_t now) {
  int64_t peak = peak_bytes.load(std::memory_order_relaxed);
  while (now > peak && !peak_bytes.compare_exchange_weak(
                           peak, now, std::memory_order_relaxed)) {
  }
}

void CountingDelete(void* data) {
  if (data == nullptr) return;
  char* base = static_cast<char*>(data) - kHeader;
  size_t size;
  std::memcpy(&size, base, sizeof(size));
  current_bytes.fetch_sub(static_cast<int64_t>(size),
                          std::memory_order_relaxed);
  c10::free_cpu(base);
}

class CountingCpuAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) override {
    char* base = static_cast<char*>(c10::alloc_cpu(n + kHeader));
    std::memcpy(base, &n, sizeof(n));
    const int64_t now = current_bytes.fetch_add(static_cast<int64_t>(n),
                                                std::memory_order_relaxed) +
                        static_cast<int64_t>(n);
    UpdatePeak(now);
    void* data = base + kHeader;
    return {data, data, &CountingDelete, c10::Device(c10::kCPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &CountingDelete; }
  void copy_data(void* dest, const void* src, size_t count) const override {
    default_copy_data(dest, src, count);
  }
};

std::atomic<bool> installed{false};

// The three NVML calls DeviceMemoryUsedBytes makes, through NVML's C ABI as
// nvml.h declares it. NVML ships with the driver, not with the toolkit or
// the wheels, so it is loaded when asked for, never linked: the program
// runs where it is missing, and says so.
struct NvmlMemory {  // nvmlMemory_t (version 1)
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
using NvmlDevice = void*;
struct Nvml {
  int (*by_pci_bus_id)(const char*, NvmlDevice*) = nullptr;
  int (*memory_info)(NvmlDevice, NvmlMemory*) = nullptr;
  std::string error;  // Empty when usable.
};

const Nvml& LoadNvml() {
  static const Nvml nvml = [] {
    Nvml n;
#if TORCHBENCH_HAVE_CUDA_RUNTIME
    void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      n.error = absl::StrCat("cannot load libnvidia-ml.so.1 (", dlerror(), ")");
      return n;
    }
    auto* init = reinterpret_cast<int (*)()>(dlsym(library, "nvmlInit_v2"));
    n.by_pci_bus_id = reinterpret_cast<int (*)(const char*, NvmlDevice*)>(
        dlsym(library, "nvmlDeviceGetHandleByPciBusId_v2"));
    n.memory_info = reinterpret_cast<int (*)(NvmlDevice, NvmlMemory*)>(
        dlsym(library, "nvmlDeviceGetMemoryInfo"));
    if (init == nullptr || n.by_pci_bus_id == nullptr ||
        n.memory_info == nullptr) {
      n.error =
          "libnvidia-ml.so.1 lacks nvmlInit_v2, "
          "nvmlDeviceGetHandleByPciBusId_v2 or nvmlDeviceGetMemoryInfo";
    } else if (const int rc = init(); rc != 0) {
      n.error = absl::StrCat("nvmlInit_v2 returned NVML error ", rc);
    }
#else
    n.error = "this build has no CUDA code paths";
#endif
    return n;
  }();
  return nvml;
}

}  // namespace

void InstallCpuMemoryCounter() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Leaked on purpose: tensors may be freed during static destruction.
    static auto* allocator = new CountingCpuAllocator();
    // Priority above the default allocator's, so later registrations at the
    // default priority (e.g. by other libraries) do not replace it.
    c10::SetCPUAllocator(allocator, /*priority=*/100);
    installed.store(true);
  });
}

bool CpuMemoryCounterInstalled() { return installed.load(); }

void ResetPeakMemory(c10::Device device) {
  if (device.is_cpu()) {
    peak_bytes.store(current_bytes.load());
    return;
  }
  at::accelerator::resetPeakStats(device.index());
}

int64_t CurrentMemoryBytes(c10::Device device) {
  if (device.is_cpu()) return installed.load() ? current_bytes.load() : -1;
  return at::accelerator::getDeviceStats(device.index())
      .allocated_bytes[0]  // StatType::AGGREGATE
      .current;
}

int64_t PeakMemoryBytes(c10::Device device) {
  if (device.is_cpu()) return installed.load() ? peak_bytes.load() : -1;
  return at::accelerator::getDeviceStats(device.index())
      .allocated_bytes[0]  // StatType::AGGREGATE
      .peak;
}

int64_t PeakReservedMemoryBytes(c10::Device device) {
  if (device.is_cpu()) return -1;
  return at::accelerator::getDeviceStats(device.index())
      .reserved_bytes[0]  // StatType::AGGREGATE
      .peak;
}

std::string DeviceMemoryUsedStatus() {
  const std::string& error = LoadNvml().error;
  return error.empty() ? "available" : absl::StrCat("unavailable: ", error);
}

int64_t DeviceMemoryUsedBytes(c10::Device device) {
  if (!device.is_cuda()) return -1;
  const Nvml& nvml = LoadNvml();
  if (!nvml.error.empty()) return -1;
#if TORCHBENCH_HAVE_CUDA_RUNTIME
  // CUDA's device index is not NVML's (CUDA_VISIBLE_DEVICES, and CUDA
  // orders devices fastest first): the PCI bus id names the same device in
  // both.
  char bus_id[32];
  if (cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), device.index()) !=
      cudaSuccess) {
    return -1;
  }
  NvmlDevice handle = nullptr;
  NvmlMemory memory{};
  if (nvml.by_pci_bus_id(bus_id, &handle) != 0 ||
      nvml.memory_info(handle, &memory) != 0) {
    return -1;
  }
  return static_cast<int64_t>(memory.used);
#else
  return -1;
#endif
}

int64_t PeakHostRssBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      return std::stoll(line.substr(6)) * 1024;  // Reported in kB.
    }
  }
  return -1;
}

bool ResetPeakHostRss() {
  std::ofstream clear_refs("/proc/self/clear_refs");
  if (!clear_refs) return false;
  clear_refs << "5";  // Documented in proc(5): resets VmHWM to current RSS.
  clear_refs.flush();
  return static_cast<bool>(clear_refs);
}

void ReleaseCachedMemory(c10::Device device) {
  if (device.is_cpu()) return;
  at::accelerator::emptyCache();
}

}  // namespace torchbench
