// File: torchbench/run_benchmarks.h
//
// Runs TorchBench's model benchmarks beside the caller's own Google Benchmark
// benchmarks, from the caller's main() (link TorchBench::program):
//
//   BENCHMARK(BM_MyTokenizer);   // the caller's own, as usual
//   int main(int argc, char** argv) {
//     return torchbench::RunBenchmarks(argc, argv);
//   }
//
// Takes the same --torchbench_* and --benchmark_* flags as the torchbench
// program and gives the TorchBench benchmarks the same names, counters, JSON
// context and exit codes; the caller's benchmarks keep Google Benchmark's
// own names and filter rules. Call it once, instead of benchmark::Initialize
// and benchmark::RunSpecifiedBenchmarks.
#ifndef TORCHBENCH_RUN_BENCHMARKS_H_
#define TORCHBENCH_RUN_BENCHMARKS_H_

namespace torchbench {

int RunBenchmarks(int argc, char** argv);

}  // namespace torchbench

#endif  // TORCHBENCH_RUN_BENCHMARKS_H_
