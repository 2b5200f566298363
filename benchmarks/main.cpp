// The torchbench program: every registered model as Google Benchmark
// benchmarks named <model>/<Train|Eval>/batch_size:<N>.
#include "torchbench/benchmark_runner.h"

int main(int argc, char** argv) {
  return torchbench::TorchBenchMain(argc, argv);
}
