// The network of TorchBench's yolov3 (torchbenchmark/models/yolov3 at
// 43ca0857, yolo_models.py and yolo_utils/layers.py): Darknet built from
// cfg/yolov3-spp.cfg, under the reference's state_dict names. The model file,
// yolov3.cpp, holds the data, loss, NMS and steps.
//
// The cfg's 114 layers are written out (YoloV3SppLayers), not parsed: the
// cfg is one fixed file, and its layers follow from the Darknet-53 stage
// table and the three-scale head with SPP. Every route, shortcut and yolo
// index holds a parameterless placeholder, so module_list.<i> is the
// reference's i.
#ifndef TORCHBENCH_MODELS_VISION_YOLOV3_NET_H_
#define TORCHBENCH_MODELS_VISION_YOLOV3_NET_H_

#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>
#include <torch/nn/modules/upsampling.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace torchbench::yolov3 {

using torch::indexing::Ellipsis;
using torch::indexing::None;
using torch::indexing::Slice;

constexpr int64_t kClasses = 80;
constexpr int64_t kOutputs = kClasses + 5;  // xywh, objectness, classes
constexpr int64_t kAnchorsPerLayer = 3;

// The cfg's anchors (pixels), in mask order; each YOLO layer takes three.
constexpr double kAnchors[9][2] = {{10, 13},  {16, 30},   {33, 23},
                                   {30, 61},  {62, 45},   {59, 119},
                                   {116, 90}, {156, 198}, {373, 326}};

struct LayerDef {
  enum class Type { kConv, kShortcut, kMaxPool, kRoute, kUpsample, kYolo };
  Type type = Type::kConv;
  int64_t filters = 0;          // kConv
  int64_t size = 1;             // kConv, kMaxPool kernel
  int64_t stride = 1;           // kConv, kUpsample
  bool batch_normalize = true;  // kConv: else linear with a bias
  std::vector<int64_t> from;    // kRoute, kShortcut: <0 relative, else index
};

// [convolutional] with batch_normalize=1 and leaky activation.
inline LayerDef Conv(int64_t filters, int64_t size, int64_t stride = 1) {
  LayerDef d;
  d.filters = filters;
  d.size = size;
  d.stride = stride;
  return d;
}

// The other sections, by type.
inline LayerDef Layer(LayerDef::Type type, std::vector<int64_t> from = {},
                      int64_t size = 1) {
  LayerDef d;
  d.type = type;
  d.from = std::move(from);
  d.size = size;
  d.stride = type == LayerDef::Type::kUpsample ? 2 : 1;
  return d;
}

// cfg/yolov3-spp.cfg's 114 layers.
inline std::vector<LayerDef> YoloV3SppLayers() {
  using Type = LayerDef::Type;
  std::vector<LayerDef> l = {Conv(32, 3)};
  // Darknet-53: a stride-2 conv, then residual blocks, per stage.
  for (auto [channels, blocks] : std::vector<std::pair<int64_t, int>>{
           {64, 1}, {128, 2}, {256, 8}, {512, 8}, {1024, 4}}) {
    l.push_back(Conv(channels, 3, 2));
    for (int b = 0; b < blocks; ++b) {
      l.push_back(Conv(channels / 2, 1));
      l.push_back(Conv(channels, 3));
      l.push_back(Layer(Type::kShortcut, {-3}));
    }
  }
  // The head of the stride-32 scale, with SPP: max-pools of 5, 9 and 13
  // concatenated with their input.
  l.insert(l.end(), {Conv(512, 1), Conv(1024, 3), Conv(512, 1),
                     Layer(Type::kMaxPool, {}, 5), Layer(Type::kRoute, {-2}),
                     Layer(Type::kMaxPool, {}, 9), Layer(Type::kRoute, {-4}),
                     Layer(Type::kMaxPool, {}, 13),
                     Layer(Type::kRoute, {-1, -3, -5, -6}), Conv(512, 1),
                     Conv(1024, 3), Conv(512, 1), Conv(1024, 3)});
  // Three detection scales (strides 32, 16, 8); the two finer ones upsample
  // the previous scale's 4th-last map and concatenate a backbone map.
  const int64_t skips[] = {0, 61, 36};
  for (int scale = 0; scale < 3; ++scale) {
    const int64_t width = 512 >> scale;
    if (scale > 0) {
      l.insert(l.end(), {Layer(Type::kRoute, {-4}), Conv(width, 1),
                         Layer(Type::kUpsample),
                         Layer(Type::kRoute, {-1, skips[scale]})});
      for (int b = 0; b < 3; ++b) {
        l.push_back(Conv(width, 1));
        l.push_back(Conv(width * 2, 3));
      }
    }
    LayerDef detect = Conv(kAnchorsPerLayer * kOutputs, 1);
    detect.batch_normalize = false;  // linear, with a bias
    l.push_back(detect);
    l.push_back(Layer(Type::kYolo));
  }
  return l;
}

// The reference's Darknet: module_list.<i> per cfg layer; forward returns
// the three YOLO layers' (B, 3, ny, nx, 85) maps and, in eval mode, their
// decoded boxes (B, N, 85) concatenated.
class DarknetImpl : public torch::nn::Module {
 public:
  DarknetImpl() : defs_(YoloV3SppLayers()) {
    module_list_ = register_module("module_list", torch::nn::ModuleList());
    std::vector<int64_t> filters = {3};  // output channels, input first
    stored_.assign(defs_.size(), false);
    for (size_t i = 0; i < defs_.size(); ++i) {
      const LayerDef& d = defs_[i];
      int64_t out = filters.back();
      torch::nn::Sequential conv{nullptr};
      switch (d.type) {
        case LayerDef::Type::kConv: {
          conv = torch::nn::Sequential();
          conv->push_back(
              "Conv2d",
              torch::nn::Conv2d(torch::nn::Conv2dOptions(out, d.filters, d.size)
                                    .stride(d.stride)
                                    .padding(d.size / 2)
                                    .bias(!d.batch_normalize)));
          if (d.batch_normalize) {
            conv->push_back(
                "BatchNorm2d",
                torch::nn::BatchNorm2d(
                    torch::nn::BatchNorm2dOptions(d.filters).momentum(0.03).eps(
                        1e-4)));
            conv->push_back(
                "activation",
                torch::nn::LeakyReLU(
                    torch::nn::LeakyReLUOptions().negative_slope(0.1).inplace(
                        true)));
          } else {
            stored_[i] = true;  // the reference's routs: a detection output
          }
          module_list_->push_back(conv);
          out = d.filters;
          break;
        }
        case LayerDef::Type::kMaxPool:
          module_list_->push_back(torch::nn::MaxPool2d(
              torch::nn::MaxPool2dOptions(d.size).stride(1).padding(
                  (d.size - 1) / 2)));
          break;
        case LayerDef::Type::kUpsample:
          module_list_->push_back(
              torch::nn::Upsample(torch::nn::UpsampleOptions()
                                      .scale_factor(std::vector<double>{
                                          static_cast<double>(d.stride),
                                          static_cast<double>(d.stride)})
                                      .mode(torch::kNearest)));
          break;
        case LayerDef::Type::kRoute:
        case LayerDef::Type::kShortcut:
          if (d.type == LayerDef::Type::kRoute) out = 0;
          for (int64_t f : d.from) {
            const int64_t src = f < 0 ? static_cast<int64_t>(i) + f : f;
            stored_[src] = true;
            if (d.type == LayerDef::Type::kRoute) out += filters[src + 1];
          }
          module_list_->push_back(torch::nn::Identity());
          break;
        case LayerDef::Type::kYolo:
          SmartBiasInit(convs_.back());
          module_list_->push_back(torch::nn::Identity());
          break;
      }
      convs_.push_back(conv);
      filters.push_back(out);
    }
  }

  // YOLOLayer.anchor_vec of the `k`-th YOLO layer (anchors over stride, in
  // grid units; float32), kept on the device of its last use as the
  // reference's attribute is.
  const torch::Tensor& AnchorVec(int k, const torch::Device& device) {
    YoloState& s = yolo_[k];
    if (!s.anchor_vec.defined()) {
      std::vector<float> values;
      for (int a = 6 - 3 * k; a < 9 - 3 * k; ++a) {
        values.push_back(static_cast<float>(kAnchors[a][0] / Stride(k)));
        values.push_back(static_cast<float>(kAnchors[a][1] / Stride(k)));
      }
      s.anchor_vec = torch::tensor(values).view({3, 2});
    }
    if (s.anchor_vec.device() != device) s.anchor_vec = s.anchor_vec.to(device);
    return s.anchor_vec;
  }

  std::pair<std::vector<torch::Tensor>, torch::Tensor> forward(
      torch::Tensor x) {
    std::vector<torch::Tensor> out(defs_.size());
    std::vector<torch::Tensor> p, io;
    for (size_t i = 0; i < defs_.size(); ++i) {
      const LayerDef& d = defs_[i];
      auto source = [&](int64_t f) {
        return out[f < 0 ? static_cast<int64_t>(i) + f : f];
      };
      switch (d.type) {
        case LayerDef::Type::kConv:
          x = convs_[i]->forward(x);
          break;
        case LayerDef::Type::kMaxPool:
        case LayerDef::Type::kUpsample:
          x = Apply(i, x);
          break;
        case LayerDef::Type::kShortcut:
          x = x + source(d.from[0]);
          break;
        case LayerDef::Type::kRoute:
          if (d.from.size() == 1) {
            x = source(d.from[0]);
          } else {
            std::vector<torch::Tensor> parts;
            for (int64_t f : d.from) parts.push_back(source(f));
            x = torch::cat(parts, 1);
          }
          break;
        case LayerDef::Type::kYolo:
          YoloLayer(static_cast<int>(p.size()), x, &p, &io);
          break;
      }
      if (stored_[i]) out[i] = x;
    }
    return {p, is_training() ? torch::Tensor() : torch::cat(io, 1)};
  }

 private:
  static double Stride(int k) { return 32 >> k; }

  torch::Tensor Apply(size_t i, const torch::Tensor& x) {
    if (auto* pool = module_list_[i]->as<torch::nn::MaxPool2d>()) {
      return pool->forward(x);
    }
    return module_list_[i]->as<torch::nn::Upsample>()->forward(x);
  }

  // The constructor's "smart bias initialization" of a detection conv:
  // objectness -4.5, classes log(0.6 / (nc - 0.99)).
  static void SmartBiasInit(torch::nn::Sequential conv) {
    torch::NoGradGuard no_grad;
    torch::Tensor bias =
        conv[0]->as<torch::nn::Conv2d>()->bias.view({kAnchorsPerLayer, -1});
    bias.select(1, 4).add_(-4.5);
    bias.index({Slice(), Slice(5, None)})
        .add_(std::log(0.6 / (kClasses - 0.99)));
  }

  // YOLOLayer.forward: the (B, 3, ny, nx, 85) map; in eval mode also the
  // boxes decoded in pixels with sigmoid scores, as (B, 3 * ny * nx, 85).
  void YoloLayer(int k, const torch::Tensor& x, std::vector<torch::Tensor>* p,
                 std::vector<torch::Tensor>* io) {
    const int64_t bs = x.size(0), ny = x.size(2), nx = x.size(3);
    torch::Tensor pk = x.view({bs, kAnchorsPerLayer, kOutputs, ny, nx})
                           .permute({0, 1, 3, 4, 2})
                           .contiguous();
    p->push_back(pk);
    if (is_training()) return;
    // create_grids: only when the grid size changes (or the device).
    const torch::Device device = x.device();
    YoloState& s = yolo_[k];
    if (!s.grid.defined() || s.grid.size(2) != ny || s.grid.size(3) != nx ||
        s.grid.device() != device) {
      std::vector<torch::Tensor> yx = torch::meshgrid(
          {torch::arange(ny, torch::TensorOptions().device(device)),
           torch::arange(nx, torch::TensorOptions().device(device))},
          "ij");
      s.grid = torch::stack({yx[1], yx[0]}, 2)
                   .view({1, 1, ny, nx, 2})
                   .to(torch::kFloat);
    }
    torch::Tensor anchor_wh = AnchorVec(k, device).view({1, 3, 1, 1, 2});
    const torch::Tensor& grid = s.grid;
    torch::Tensor out = pk.clone();
    out.index_put_(
        {Ellipsis, Slice(None, 2)},
        torch::sigmoid(out.index({Ellipsis, Slice(None, 2)})) + grid);
    out.index_put_({Ellipsis, Slice(2, 4)},
                   torch::exp(out.index({Ellipsis, Slice(2, 4)})) * anchor_wh);
    out.index({Ellipsis, Slice(None, 4)}).mul_(Stride(k));
    out.index({Ellipsis, Slice(4, None)}).sigmoid_();
    io->push_back(out.view({bs, -1, kOutputs}));
  }

  // YOLOLayer's cached tensors (plain attributes, not buffers).
  struct YoloState {
    torch::Tensor anchor_vec, grid;
  };

  std::vector<LayerDef> defs_;
  YoloState yolo_[3];
  std::vector<bool> stored_;  // outputs a later route or shortcut reads
  torch::nn::ModuleList module_list_{nullptr};
  std::vector<torch::nn::Sequential> convs_;  // per layer; null if not conv
};
TORCH_MODULE(Darknet);

}  // namespace torchbench::yolov3

#endif  // TORCHBENCH_MODELS_VISION_YOLOV3_NET_H_
