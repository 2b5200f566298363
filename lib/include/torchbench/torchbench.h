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
// To run TorchBench's benchmarks beside your own Google Benchmark ones, see
// torchbench/run_benchmarks.h (the program's entry point, declared in the
// contract and defined by TorchBench::program; this header leaves it out),
// and a model that runs collectives includes torchbench/process_group.h
// (LibTorch's c10d headers; this header leaves it out too).
#ifndef TORCHBENCH_TORCHBENCH_H_
#define TORCHBENCH_TORCHBENCH_H_

#include "torchbench/amp.h"                 // IWYU pragma: export
#include "torchbench/checks.h"              // IWYU pragma: export
#include "torchbench/deterministic_fill.h"  // IWYU pragma: export
#include "torchbench/device.h"              // IWYU pragma: export
#include "torchbench/golden.h"              // IWYU pragma: export
#include "torchbench/instance.h"            // IWYU pragma: export
#include "torchbench/memory.h"              // IWYU pragma: export
#include "torchbench/model.h"               // IWYU pragma: export
#include "torchbench/optim.h"               // IWYU pragma: export
#include "torchbench/registry.h"            // IWYU pragma: export
#include "torchbench/vision_ops.h"          // IWYU pragma: export
#include "torchbench/weights.h"             // IWYU pragma: export

#endif  // TORCHBENCH_TORCHBENCH_H_
