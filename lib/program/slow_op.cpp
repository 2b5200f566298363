#include "program/slow_op.h"

#include <torch/library.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace torchbench {
namespace {

constexpr c10::DispatchKey kSlowKey =
    c10::DispatchKey::TESTING_ONLY_GenericMode;

std::atomic<int64_t> slowed_calls{0};
double extra_factor = 0.0;

void SlowKernel(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                torch::jit::Stack* stack) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  op.redispatchBoxed(
      keys & c10::DispatchKeySet(c10::DispatchKeySet::FULL_AFTER, kSlowKey),
      stack);
  const auto end = Clock::now();
  // Spinning, not sleeping: the core stays busy as a slower kernel's would.
  const auto until = end + std::chrono::duration_cast<Clock::duration>(
                               (end - start) * extra_factor);
  while (Clock::now() < until) {
  }
  slowed_calls.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

absl::StatusOr<SlowOpSpec> ParseSlowOp(const std::string& value) {
  const size_t colon = value.rfind(':');
  SlowOpSpec spec;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtod(value.substr(colon + 1), &spec.extra) ||
      !(spec.extra > 0.0 && spec.extra <= 100.0) ||
      value.substr(0, colon).find("::") == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--torchbench_testonly_slow_op=", value,
        ": expected NAMESPACE::OPERATOR:FACTOR, e.g. aten::mm:0.2 (each call "
        "1.2x as long), with FACTOR in (0, 100]"));
  }
  spec.op = value.substr(0, colon);
  return spec;
}

absl::Status InstallSlowOp(const SlowOpSpec& spec) {
  static std::vector<std::unique_ptr<torch::Library>> libraries;
  if (!libraries.empty()) {
    return absl::FailedPreconditionError(
        "a slow operator is installed already");
  }
  const size_t sep = spec.op.find("::");
  const std::string ns = spec.op.substr(0, sep);
  const std::string name = spec.op.substr(sep + 2);
  std::vector<std::string> overloads;
  for (const c10::OperatorName& op :
       c10::Dispatcher::singleton().getAllOpNames()) {
    if (op.name == spec.op) {
      overloads.push_back(op.overload_name.empty()
                              ? name
                              : absl::StrCat(name, ".", op.overload_name));
    }
  }
  if (overloads.empty()) {
    return absl::NotFoundError(
        absl::StrCat("--torchbench_testonly_slow_op: no operator ", spec.op,
                     " in this LibTorch"));
  }
  extra_factor = spec.extra;
  // Every other operator passes the mode key by.
  libraries.push_back(std::make_unique<torch::Library>(
      torch::Library::IMPL, "_", kSlowKey, __FILE__, __LINE__));
  libraries.back()->fallback(torch::CppFunction::makeFallthrough());
  libraries.push_back(std::make_unique<torch::Library>(
      torch::Library::IMPL, ns, kSlowKey, __FILE__, __LINE__));
  for (const std::string& overload : overloads) {
    libraries.back()->impl(
        overload.c_str(),
        torch::CppFunction::makeFromBoxedFunction<&SlowKernel>());
  }
  c10::impl::tls_set_dispatch_key_included(kSlowKey, true);
  return absl::OkStatus();
}

int64_t SlowedCalls() { return slowed_calls.load(); }

}  // namespace torchbench
