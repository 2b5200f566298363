// File: torchbench/torchbench.h
//
// The public header for embedding TorchBench models in other C++ test
// suites: find_package(TorchBench), link TorchBench::models, then
//
//   #include <torchbench/torchbench.h>
//
//   torchbench::ModelConfig config;
//   config.mode = torchbench::Mode::kTrain;
//   config.batch_size = 4;
//   auto instance = torchbench::CreateInstance("resnet50", config);
//   ASSERT_TRUE(instance.ok()) << instance.status();
//   torch::Tensor loss = (*instance)->Step();
//   int64_t params = (*instance)->counts().parameters;
//   const torchbench::ModelSpec& spec = (*instance)->spec();
//
// or runs TorchBench's benchmarks beside its own Google Benchmark ones:
//
//   int main(int argc, char** argv) {
//     return torchbench::RunBenchmarks(argc, argv);
//   }
#ifndef TORCHBENCH_TORCHBENCH_H_
#define TORCHBENCH_TORCHBENCH_H_

#include "torchbench/amp.h"               // IWYU pragma: export
#include "torchbench/benchmark_runner.h"  // IWYU pragma: export
#include "torchbench/device.h"            // IWYU pragma: export
#include "torchbench/instance.h"          // IWYU pragma: export
#include "torchbench/model.h"             // IWYU pragma: export
#include "torchbench/op_counter.h"        // IWYU pragma: export
#include "torchbench/optim.h"             // IWYU pragma: export
#include "torchbench/registry.h"          // IWYU pragma: export

#endif  // TORCHBENCH_TORCHBENCH_H_
