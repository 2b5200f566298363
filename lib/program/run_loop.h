// File: program/run_loop.h
//
// The run's loop: each planned instance in turn, in this process
// (RunInProcess) or in a child process of its own (--torchbench_isolate),
// its record reported to the display and file reporters as it finishes.
// Both ways report the same records through the same reporters, so a
// result reads the same however it ran; the file reporter writes
// --benchmark_out here, not Google Benchmark (which would rewrite it for
// each instance).
#ifndef TORCHBENCH_PROGRAM_RUN_LOOP_H_
#define TORCHBENCH_PROGRAM_RUN_LOOP_H_

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "program/benchmark_runner.h"
#include "program/isolation.h"
#include "program/plan.h"

namespace torchbench {

struct LoopOptions {
  std::string out_path;  // --benchmark_out, or "".
  size_t name_width = 0;
  // Each instance in a child: `child.executable` and `timeout_seconds`; the
  // children's arguments are `program_args` less what the parent does.
  bool isolate = false;
  ChildOptions child;
  std::vector<std::string> program_args;
  // A progress line per instance on stderr.
  bool progress = false;
  // Non-empty: the caller's own Google Benchmark benchmarks this filter
  // selects run first (torchbench::RunBenchmarks).
  std::string caller_filter;
};

// Reports every instance of `todo` (after the caller's benchmarks). Returns
// false, with one line on stderr, when --benchmark_out cannot be written or
// a scratch directory for the children cannot be made.
bool RunLoop(const std::vector<PlannedInstance>& todo,
             const LoopOptions& options, RunState* state,
             benchmark::BenchmarkReporter* display,
             benchmark::BenchmarkReporter* file);

// An isolated child's arguments: the parent's own, minus what the parent
// does itself (filtering, sharding, journaling, output), plus its one
// instance and the file to journal it to.
std::vector<std::string> ChildArgs(const std::vector<std::string>& program_args,
                                   const std::string& instance,
                                   const std::string& result_path);

}  // namespace torchbench

#endif  // TORCHBENCH_PROGRAM_RUN_LOOP_H_
