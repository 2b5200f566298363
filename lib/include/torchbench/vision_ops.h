// File: torchbench/vision_ops.h
//
// torchvision's detection operators (nms, roi_align, roi_pool) from the
// compiled library of the pinned torchvision wheel, loaded without Python,
// plus batched_nms, which torchvision has only in Python.
//
// Why not rewrite them: the references call exactly these kernels, so using
// them makes detection models match the references bit for bit on the CPU,
// and keeps their CUDA kernels (and their cost) in the benchmark.
//
// Loading (once per process, on the first call of Load() or any op here):
//   1. The library is TORCHBENCH_TORCHVISION_LIBRARY (environment) if set,
//      else the path CMake found (torchvision/_C_stable.so beside the torch
//      package LibTorch came from).
//   2. Its ELF header lists libtorch_python.so as needed although it uses
//      none of its symbols, and that library cannot load without a Python
//      interpreter; an empty library whose soname is libtorch_python.so
//      (built with the harness) is loaded first to satisfy the entry, unless
//      the process already has the real one.
//   3. The operators' schemas are checked against the ones written here.
//   4. What torchvision's Python registers on import is registered in C++:
//      Autograd kernels for roi_align and roi_pool (without them a
//      requires_grad input gets no gradient, only a warning), kernels that
//      refuse double backward through their backward ops, and Autocast
//      kernels (nms and roi_align on CPU and CUDA, roi_pool on CUDA: run in
//      float32, cast the result back).
// ps_roi_align, ps_roi_pool and deform_conv2d are loaded with the library but
// get no Autograd/Autocast kernels here: no TorchBench model uses them.
//
// A model that needs these ops calls RequireLoaded() in its constructor:
// when the library is missing, each of that model's instances ends with the
// one line "setup failed: <what to install>" and the others run.
#ifndef TORCHBENCH_VISION_OPS_H_
#define TORCHBENCH_VISION_OPS_H_

#include <torch/types.h>

#include <cstdint>
#include <string>
#include <tuple>

#include "absl/status/status.h"

namespace torchbench::vision_ops {

// Loads and registers the operators once; later calls return the first
// call's result. The error says which file was tried and what to install.
absl::Status Load();

// Load(), throwing its message (std::runtime_error) when it failed.
void RequireLoaded();

// The library Load() uses (or used).
std::string LibraryPath();

// torchvision.ops.nms: indices of the kept boxes ((x1, y1, x2, y2) rows),
// by decreasing score.
torch::Tensor Nms(const torch::Tensor& boxes, const torch::Tensor& scores,
                  double iou_threshold);

// torchvision.ops.batched_nms with both of torchvision's strategies and its
// switch: one nms per category when boxes.numel() exceeds
// BatchedNmsLoopThreshold(device), else one nms over boxes offset per
// category by (max coordinate + 1).
torch::Tensor BatchedNms(const torch::Tensor& boxes,
                         const torch::Tensor& scores, const torch::Tensor& idxs,
                         double iou_threshold);
int64_t BatchedNmsLoopThreshold(const torch::Device& device);

// torchvision.ops.roi_align on (K, 5) rois (batch index, x1, y1, x2, y2).
// Differentiable with respect to `input`.
torch::Tensor RoiAlign(const torch::Tensor& input, const torch::Tensor& rois,
                       double spatial_scale, int64_t pooled_height,
                       int64_t pooled_width, int64_t sampling_ratio,
                       bool aligned);

// torchvision.ops.roi_pool: (pooled output, argmax). Differentiable with
// respect to `input` through the output.
std::tuple<torch::Tensor, torch::Tensor> RoiPool(const torch::Tensor& input,
                                                 const torch::Tensor& rois,
                                                 double spatial_scale,
                                                 int64_t pooled_height,
                                                 int64_t pooled_width);

}  // namespace torchbench::vision_ops

#endif  // TORCHBENCH_VISION_OPS_H_
