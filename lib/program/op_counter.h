// File: program/op_counter.h
//
// Counts the ATen operators the calling thread dispatches while a counter
// is alive, through LibTorch's RecordFunction callbacks (what the profiler
// observes, without recording a trace). "Top-level" operators are the ones
// the caller issued; the ones they call internally (a CPU _foreach_ op's
// per-tensor loop, a composite op's parts) count only in all_ops(). The
// autograd engine's per-node wrapper ("autograd::engine::evaluate_function:
// ...") is not an operator: the operators a backward node dispatches are
// top-level. Backward operators are counted on the CPU; on a GPU the engine
// runs them on its device threads, which this thread-local counter does not
// see (the profiling pass, profile.h, sees every thread).
// Operators issued inside an "Optimizer.step#..." user scope (optim.h)
// count as optimizer operators too.
//
//   OpCounter ops;
//   instance.Step();
//   std::cout << ops.top_level_ops() << " ops, of which "
//             << ops.optimizer_ops() << " in optimizer steps\n";
#ifndef TORCHBENCH_PROGRAM_OP_COUNTER_H_
#define TORCHBENCH_PROGRAM_OP_COUNTER_H_

#include <cstdint>

namespace torchbench {

class OpCounter {
 public:
  OpCounter();
  ~OpCounter();
  OpCounter(const OpCounter&) = delete;
  OpCounter& operator=(const OpCounter&) = delete;

  int64_t top_level_ops() const { return top_level_; }
  int64_t optimizer_ops() const { return optimizer_; }
  int64_t all_ops() const { return all_; }

 private:
  friend struct OpCounterCallbacks;
  uint64_t handle_ = 0;
  OpCounter* previous_ = nullptr;
  int depth_ = 0;             // ATen operators open on this thread.
  int optimizer_scopes_ = 0;  // "Optimizer.step#" scopes open.
  int64_t top_level_ = 0;
  int64_t optimizer_ = 0;
  int64_t all_ = 0;
};

}  // namespace torchbench

#endif  // TORCHBENCH_PROGRAM_OP_COUNTER_H_
