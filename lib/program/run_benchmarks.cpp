#include "torchbench/run_benchmarks.h"

#include "program/run_main.h"

namespace torchbench {

int RunBenchmarks(int argc, char** argv) {
  return RunMain(argc, argv, /*caller_benchmarks=*/true);
}

}  // namespace torchbench
