// File: models/common/detectron2/anchor_generator.h
//
// detectron2's DefaultAnchorGenerator (modeling/anchor_generator.py at
// c470ca3): per feature level, cell anchors (sizes x aspect ratios, XYXY
// around (0, 0)) kept as the buffers cell_anchors.<level>, shifted over the
// level's grid by stride with the given offset.
#ifndef TORCHBENCH_MODELS_COMMON_DETECTRON2_ANCHOR_GENERATOR_H_
#define TORCHBENCH_MODELS_COMMON_DETECTRON2_ANCHOR_GENERATOR_H_

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace torchbench::detectron2 {

// generate_cell_anchors: [len(sizes) * len(aspect_ratios), 4] float32,
// computed in double as Python floats are, then rounded once.
torch::Tensor GenerateCellAnchors(const std::vector<double>& sizes,
                                  const std::vector<double>& aspect_ratios);

class DefaultAnchorGeneratorImpl : public torch::nn::Module {
 public:
  // sizes and aspect_ratios hold one list per level, or one list for every
  // level (detectron2's _broadcast_params).
  DefaultAnchorGeneratorImpl(std::vector<std::vector<double>> sizes,
                             std::vector<std::vector<double>> aspect_ratios,
                             std::vector<int64_t> strides, double offset = 0.5);

  // Anchors of each level, [Hi * Wi * A, 4], for feature maps [N, C, Hi, Wi].
  std::vector<torch::Tensor> forward(
      const std::vector<torch::Tensor>& features);

  // Cell anchors per location on each level.
  std::vector<int64_t> num_anchors() const;

 private:
  std::vector<int64_t> strides_;
  double offset_;
  std::shared_ptr<torch::nn::Module> cell_anchors_;  // BufferList
};
TORCH_MODULE(DefaultAnchorGenerator);

}  // namespace torchbench::detectron2

#endif  // TORCHBENCH_MODELS_COMMON_DETECTRON2_ANCHOR_GENERATOR_H_
