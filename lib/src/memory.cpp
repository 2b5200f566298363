#include "torchbench/memory.h"

#include <ATen/DeviceAccelerator.h>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/alignment.h>
#include <c10/core/impl/alloc_cpu.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>

#include "memory_internal.h"

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
