// File: program/slow_op.h
//
// Test-only (--torchbench_testonly_slow_op=aten::mm:0.2): makes every call of
// one ATen operator (all its overloads) slower by a known factor of its own
// time, by spinning after the real kernel returns. `tools/tb abtest` is
// checked against it: an A/B run whose B side slows aten::mm by 20 % must
// attribute its change to aten::mm. Nothing else uses it.
//
// The kernels sit at DispatchKey::TESTING_ONLY_GenericMode, included in the
// installing thread's dispatch TLS (which the autograd engine carries to its
// threads), above autograd: the operator's RecordFunction scope, the one the
// profiler and the op counters see, encloses the spin, so the extra time is
// that operator's self time.
#ifndef TORCHBENCH_PROGRAM_SLOW_OP_H_
#define TORCHBENCH_PROGRAM_SLOW_OP_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace torchbench {

struct SlowOpSpec {
  std::string op;      // "aten::mm"
  double extra = 0.0;  // 0.2: each call takes 1.2x its own time
};

// "aten::mm:0.2" -> {"aten::mm", 0.2}; the factor is in (0, 100].
absl::StatusOr<SlowOpSpec> ParseSlowOp(const std::string& value);

// Registers the slowing kernel for every overload of spec.op and turns it on
// for the calling thread. Once per process; an unknown operator is an error.
absl::Status InstallSlowOp(const SlowOpSpec& spec);

// Calls slowed so far (for tests).
int64_t SlowedCalls();

}  // namespace torchbench

#endif  // TORCHBENCH_PROGRAM_SLOW_OP_H_
