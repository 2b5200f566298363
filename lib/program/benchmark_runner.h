// File: program/benchmark_runner.h
//
// One instance run in this process, in named phases (as Google Benchmark's
// own BenchmarkRunner reads: DoNIterations, DoOneRepetition):
//
//   Prepare   build the instance and warm it up (untimed), then, under a
//             compiled backend, the package's fidelity check on its first
//             outputs, and the operator coverage, op count and FLOP
//             passes, each one untimed step
//   Measure   Google Benchmark's loop: one step per iteration, timed by the
//             harness's StepTimer, its repetitions and aggregates
//   Profile   after the last repetition, the Kineto pass (profile.h): never
//             before or inside the measured repetitions
//
// Errors (an exception, out-of-memory, a NaN/Inf loss) become the instance's
// error_message through SkipWithError, so one failing model never stops the
// others. The run's state (the live instance, the error count) is one
// RunState, passed down.
#ifndef TORCHBENCH_PROGRAM_BENCHMARK_RUNNER_H_
#define TORCHBENCH_PROGRAM_BENCHMARK_RUNNER_H_

#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <string>

#include "instance_internal.h"
#include "program/journal.h"
#include "program/plan.h"

namespace torchbench {

// The state of one run, shared by its instances: the one live instance
// (InstanceCache frees it before the next is built, so one model occupies
// the device at a time), how many benchmarks were reported and how many of
// the harness's instances errored.
class RunState {
 public:
  explicit RunState(RunOptions options);
  ~RunState();
  RunState(const RunState&) = delete;
  RunState& operator=(const RunState&) = delete;

  const RunOptions& options() const { return options_; }
  InstanceCache& live() { return live_; }
  int errored() const { return errored_; }
  void CountError() { ++errored_; }
  int reported() const { return reported_; }
  void CountReported() { ++reported_; }

  // The model an instance builds: its registered port, or under a compiled
  // backend the same spec with a factory that loads its package (made once
  // per model and kept, as the live instance points at it).
  const RegisteredModel& EntryFor(const PlannedInstance& instance);

 private:
  RunOptions options_;
  std::map<std::string, std::unique_ptr<RegisteredModel>> compiled_;
  InstanceCache live_;
  int errored_ = 0;
  int reported_ = 0;
};

// Runs `instance` through Prepare, Measure and Profile in this process and
// returns its runs as Google Benchmark reported them (the time type
// "/manual_time" still in their names; ExactNameReporter drops it).
InstanceRecord RunInProcess(const PlannedInstance& instance, RunState* state);

}  // namespace torchbench

#endif  // TORCHBENCH_PROGRAM_BENCHMARK_RUNNER_H_
