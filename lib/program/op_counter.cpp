#include "program/op_counter.h"

#include <ATen/record_function.h>
#include <c10/util/ParallelGuard.h>

#include <memory>

#include "program/record_scopes.h"

namespace torchbench {
namespace {

std::atomic<OpCounter*> active_counter{nullptr};
std::atomic<uint64_t> generations{0};

// A thread's nesting under the active counter: ATen operators and
// "Optimizer.step#" scopes open on this thread.
struct ThreadNesting {
  uint64_t generation = 0;
  int depth = 0;
  int optimizer_scopes = 0;
};
thread_local ThreadNesting nesting;

ThreadNesting& NestingFor(uint64_t generation) {
  if (nesting.generation != generation) nesting = {generation, 0, 0};
  return nesting;
}

}  // namespace

struct OpCounterCallbacks {
  static std::unique_ptr<at::ObserverContext> Start(
      const at::RecordFunction& fn) {
    OpCounter* c = active_counter.load(std::memory_order_acquire);
    if (c == nullptr) return nullptr;
    ThreadNesting& n = NestingFor(c->generation_);
    if (IsOptimizerStep(fn)) {
      ++n.optimizer_scopes;
    } else if (fn.scope() == at::RecordScope::FUNCTION &&
               !IsAutogradEngineNode(fn)) {
      ++c->all_;
      // An intra-op worker runs inside an operator of another thread.
      if (n.depth == 0 && !c10::ParallelGuard::is_enabled()) {
        ++c->top_level_;
        if (n.optimizer_scopes > 0) ++c->optimizer_;
      }
      ++n.depth;
    }
    return nullptr;
  }

  static void End(const at::RecordFunction& fn, at::ObserverContext*) {
    OpCounter* c = active_counter.load(std::memory_order_acquire);
    if (c == nullptr) return;
    ThreadNesting& n = NestingFor(c->generation_);
    if (IsOptimizerStep(fn)) {
      if (n.optimizer_scopes > 0) --n.optimizer_scopes;
    } else if (fn.scope() == at::RecordScope::FUNCTION &&
               !IsAutogradEngineNode(fn) && n.depth > 0) {
      --n.depth;
    }
  }
};

OpCounter::OpCounter() : generation_(++generations) {
  previous_ = active_counter.exchange(this, std::memory_order_acq_rel);
  // One callback for the outermost counter: it counts into whichever is
  // active, and a nested counter's own would count every op twice.
  if (previous_ == nullptr) {
    handle_ = at::addGlobalCallback(
        at::RecordFunctionCallback(&OpCounterCallbacks::Start,
                                   &OpCounterCallbacks::End)
            .scopes({at::RecordScope::FUNCTION, at::RecordScope::USER_SCOPE}));
  }
}

OpCounter::~OpCounter() {
  if (handle_ != 0) at::removeCallback(handle_);
  active_counter.store(previous_, std::memory_order_release);
}

}  // namespace torchbench
