// A downstream Google Benchmark binary: the user's own benchmarks beside
// TorchBench's models, in the user's own main(), exactly as the README
// shows. TorchBench's benchmarks keep the torchbench program's names,
// counters and exit codes.
#include <benchmark/benchmark.h>
#include <torchbench/run_benchmarks.h>

#include <cstdint>
#include <vector>

// The user's own benchmark, with Google Benchmark's usual name.
static void BM_UsersOwnSum(benchmark::State& state) {
  std::vector<int64_t> values(1024, 1);
  for (auto _ : state) {
    int64_t sum = 0;
    for (int64_t v : values) sum += v;
    benchmark::DoNotOptimize(sum);
  }
}
BENCHMARK(BM_UsersOwnSum);

int main(int argc, char** argv) {
  return torchbench::RunBenchmarks(argc, argv);
}
