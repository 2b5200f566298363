#include "program/op_counter.h"

#include <ATen/record_function.h>

#include <cstring>
#include <memory>

namespace torchbench {
namespace {

thread_local OpCounter* active_counter = nullptr;

constexpr char kOptimizerStep[] = "Optimizer.step#";

// The autograd engine wraps each node it evaluates in a FUNCTION-scope
// record; the operators inside are what the backward dispatches.
constexpr char kEvaluateFunction[] = "autograd::engine::evaluate_function: ";

bool IsEngineWrapper(const at::RecordFunction& fn) {
  return std::strncmp(fn.name(), kEvaluateFunction,
                      sizeof(kEvaluateFunction) - 1) == 0;
}

bool IsOptimizerStep(const at::RecordFunction& fn) {
  return fn.scope() == at::RecordScope::USER_SCOPE &&
         std::strncmp(fn.name(), kOptimizerStep, sizeof(kOptimizerStep) - 1) ==
             0;
}

}  // namespace

struct OpCounterCallbacks {
  static std::unique_ptr<at::ObserverContext> Start(
      const at::RecordFunction& fn) {
    OpCounter* c = active_counter;
    if (c == nullptr) return nullptr;
    if (IsOptimizerStep(fn)) {
      ++c->optimizer_scopes_;
    } else if (fn.scope() == at::RecordScope::FUNCTION &&
               !IsEngineWrapper(fn)) {
      ++c->all_;
      if (c->depth_ == 0) {
        ++c->top_level_;
        if (c->optimizer_scopes_ > 0) ++c->optimizer_;
      }
      ++c->depth_;
    }
    return nullptr;
  }

  static void End(const at::RecordFunction& fn, at::ObserverContext*) {
    OpCounter* c = active_counter;
    if (c == nullptr) return;
    if (IsOptimizerStep(fn)) {
      --c->optimizer_scopes_;
    } else if (fn.scope() == at::RecordScope::FUNCTION &&
               !IsEngineWrapper(fn) && c->depth_ > 0) {
      --c->depth_;
    }
  }
};

OpCounter::OpCounter() : previous_(active_counter) {
  active_counter = this;
  handle_ = at::addThreadLocalCallback(
      at::RecordFunctionCallback(&OpCounterCallbacks::Start,
                                 &OpCounterCallbacks::End)
          .scopes({at::RecordScope::FUNCTION, at::RecordScope::USER_SCOPE}));
}

OpCounter::~OpCounter() {
  at::removeCallback(handle_);
  active_counter = previous_;
}

}  // namespace torchbench
