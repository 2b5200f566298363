// File: program/op_counter.h
//
// Counts the ATen operators the process dispatches while a counter is alive,
// through LibTorch's RecordFunction callbacks (what the profiler observes,
// without recording a trace). Every thread counts: on a GPU the autograd
// engine runs backward on its device threads, so a counter that saw only
// the caller's thread would miss every backward op of a Train step.
// "Top-level" operators are the ones a thread issued itself; the ones they
// call internally (a CPU _foreach_ op's per-tensor loop, a composite op's
// parts) and the ones an intra-op parallel region dispatches count only in
// all_ops(), so the figure does not depend on the thread count. The
// autograd engine's per-node wrapper ("autograd::engine::evaluate_function:
// ...") is not an operator: the operators a backward node dispatches are
// top-level. Operators issued inside an "Optimizer.step#..." user scope
// (optim.h) count as optimizer operators too. One counter is active at a
// time; a nested one takes over until it is destroyed.
//
//   OpCounter ops;
//   instance.Step();
//   std::cout << ops.top_level_ops() << " ops, of which "
//             << ops.optimizer_ops() << " in optimizer steps\n";
#ifndef TORCHBENCH_PROGRAM_OP_COUNTER_H_
#define TORCHBENCH_PROGRAM_OP_COUNTER_H_

#include <atomic>
#include <cstdint>

namespace torchbench {

class OpCounter {
 public:
  OpCounter();
  ~OpCounter();
  OpCounter(const OpCounter&) = delete;
  OpCounter& operator=(const OpCounter&) = delete;

  int64_t top_level_ops() const { return top_level_.load(); }
  int64_t optimizer_ops() const { return optimizer_.load(); }
  int64_t all_ops() const { return all_.load(); }

 private:
  friend struct OpCounterCallbacks;
  uint64_t handle_ = 0;
  uint64_t generation_ = 0;  // Tells each thread's nesting state apart.
  OpCounter* previous_ = nullptr;
  std::atomic<int64_t> top_level_{0};
  std::atomic<int64_t> optimizer_{0};
  std::atomic<int64_t> all_{0};
};

}  // namespace torchbench

#endif  // TORCHBENCH_PROGRAM_OP_COUNTER_H_
