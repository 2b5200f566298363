// File: program/record_scopes.h
//
// The RecordFunction scopes the op counter and the coverage recorder tell
// apart from operators: the autograd engine's per-node wrapper and the
// optimizers' step scope (optim.h).
#ifndef TORCHBENCH_PROGRAM_RECORD_SCOPES_H_
#define TORCHBENCH_PROGRAM_RECORD_SCOPES_H_

#include <ATen/record_function.h>

#include <cstring>

namespace torchbench {

// The autograd engine wraps each node it evaluates in a record of its own
// ("autograd::engine::evaluate_function: MulBackward0", FUNCTION scope; or
// BACKWARD_FUNCTION): backward bookkeeping, not an operator. The operators
// inside are what the backward dispatches.
inline bool IsAutogradEngineNode(const at::RecordFunction& fn) {
  constexpr char kEvaluateFunction[] = "autograd::engine::evaluate_function: ";
  return fn.scope() == at::RecordScope::BACKWARD_FUNCTION ||
         std::strncmp(fn.name(), kEvaluateFunction,
                      sizeof(kEvaluateFunction) - 1) == 0;
}

// The "Optimizer.step#<name>.step" user scope every optimizer's Step() opens.
inline bool IsOptimizerStep(const at::RecordFunction& fn) {
  constexpr char kOptimizerStep[] = "Optimizer.step#";
  return fn.scope() == at::RecordScope::USER_SCOPE &&
         std::strncmp(fn.name(), kOptimizerStep, sizeof(kOptimizerStep) - 1) ==
             0;
}

}  // namespace torchbench

#endif  // TORCHBENCH_PROGRAM_RECORD_SCOPES_H_
