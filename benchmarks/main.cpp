// The torchbench program: every registered model as Google Benchmark
// benchmarks named <model>/<Train|Eval>/batch_size:<N>.
#include "program/run_main.h"

int main(int argc, char** argv) {
  return torchbench::RunMain(argc, argv, /*caller_benchmarks=*/false);
}
