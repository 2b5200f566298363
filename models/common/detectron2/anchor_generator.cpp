#include "common/detectron2/anchor_generator.h"

#include <torch/torch.h>

#include <cmath>
#include <string>
#include <utility>

namespace torchbench::detectron2 {

torch::Tensor GenerateCellAnchors(const std::vector<double>& sizes,
                                  const std::vector<double>& aspect_ratios) {
  std::vector<double> values;
  for (double size : sizes) {
    const double area = std::pow(size, 2.0);
    for (double aspect_ratio : aspect_ratios) {
      const double w = std::sqrt(area / aspect_ratio);
      const double h = aspect_ratio * w;
      values.insert(values.end(), {-w / 2.0, -h / 2.0, w / 2.0, h / 2.0});
    }
  }
  return torch::tensor(values, torch::kDouble)
      .to(torch::kFloat)
      .reshape({-1, 4});
}

namespace {

std::vector<std::vector<double>> Broadcast(std::vector<std::vector<double>> p,
                                           size_t levels, const char* name) {
  TORCH_CHECK(!p.empty(), name, " in anchor generator cannot be empty");
  if (p.size() == 1) return std::vector<std::vector<double>>(levels, p[0]);
  TORCH_CHECK(p.size() == levels, "got ", name, " of length ", p.size(),
              " for ", levels, " feature levels");
  return p;
}

}  // namespace

DefaultAnchorGeneratorImpl::DefaultAnchorGeneratorImpl(
    std::vector<std::vector<double>> sizes,
    std::vector<std::vector<double>> aspect_ratios,
    std::vector<int64_t> strides, double offset)
    : strides_(std::move(strides)), offset_(offset) {
  TORCH_CHECK(offset_ >= 0.0 && offset_ < 1.0, "anchor offset ", offset_);
  sizes = Broadcast(std::move(sizes), strides_.size(), "sizes");
  aspect_ratios =
      Broadcast(std::move(aspect_ratios), strides_.size(), "aspect_ratios");
  // BufferList: a child "cell_anchors" with buffers "0", "1", ...
  cell_anchors_ =
      register_module("cell_anchors", std::make_shared<torch::nn::Module>());
  for (size_t i = 0; i < strides_.size(); ++i) {
    cell_anchors_->register_buffer(
        std::to_string(i), GenerateCellAnchors(sizes[i], aspect_ratios[i]));
  }
}

std::vector<torch::Tensor> DefaultAnchorGeneratorImpl::forward(
    const std::vector<torch::Tensor>& features) {
  TORCH_CHECK(features.size() == strides_.size(),
              "anchor generator: ", features.size(), " feature maps for ",
              strides_.size(), " levels");
  // Re-read the buffers: module.to() replaces them.
  auto buffers = cell_anchors_->buffers();
  std::vector<torch::Tensor> anchors;
  for (size_t i = 0; i < features.size(); ++i) {
    const auto& base = buffers[i];
    const double stride = static_cast<double>(strides_[i]);
    const auto opts =
        torch::TensorOptions().dtype(torch::kFloat).device(base.device());
    auto shifts_x = torch::arange(
        offset_ * stride, static_cast<double>(features[i].size(-1)) * stride,
        stride, opts);
    auto shifts_y = torch::arange(
        offset_ * stride, static_cast<double>(features[i].size(-2)) * stride,
        stride, opts);
    auto grid = torch::meshgrid({shifts_y, shifts_x}, "ij");
    auto shift_y = grid[0].reshape(-1);
    auto shift_x = grid[1].reshape(-1);
    auto shifts = torch::stack({shift_x, shift_y, shift_x, shift_y}, 1);
    anchors.push_back(
        (shifts.view({-1, 1, 4}) + base.view({1, -1, 4})).reshape({-1, 4}));
  }
  return anchors;
}

std::vector<int64_t> DefaultAnchorGeneratorImpl::num_anchors() const {
  std::vector<int64_t> out;
  for (const auto& c : cell_anchors_->buffers()) out.push_back(c.size(0));
  return out;
}

}  // namespace torchbench::detectron2
