// File: program/run_main.h
//
// The torchbench program from flags to exit code.
#ifndef TORCHBENCH_PROGRAM_RUN_MAIN_H_
#define TORCHBENCH_PROGRAM_RUN_MAIN_H_

namespace torchbench {

// Parses flags, registers, runs, exits non-zero for bad flags, a filter that
// matches nothing, or (unless --torchbench_fail_on_error=false) any errored
// instance. With `caller_benchmarks`, the process's own Google Benchmark
// benchmarks run beside TorchBench's (torchbench/run_benchmarks.h).
int RunMain(int argc, char** argv, bool caller_benchmarks);

}  // namespace torchbench

#endif  // TORCHBENCH_PROGRAM_RUN_MAIN_H_
