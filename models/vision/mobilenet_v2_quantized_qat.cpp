// TorchBench's mobilenet_v2_quantized_qat: torchvision's mobilenet_v2()
// (common/torchvision_mobilenet_v2.h, random init) prepared for
// quantization-aware training as prepare_qat_fx prepares it with the fbgemm
// QAT qconfig, and for Eval converted to int8 as convert_fx converts it
// (common/fx_qat.h has the pieces and the benchmark steps).
//
// The prepared graph: every conv + BatchNorm is a ConvBn2d (ReLU6 is not
// fused: it stays a float op); a fake-quant observes the input, every
// ConvBn2d's output, every residual add and the classifier's dropout and
// linear outputs. ReLU6, the average pool and the flatten keep their input's
// qparams: prepare_qat_fx gives each the fake-quant module of the op before
// it, which the forward therefore calls twice (as the GraphModule does).
// The int8 model: quantize_per_tensor, quantized conv2d (packed per-channel
// weights with the BatchNorm folded in), ReLU6 on the quantized tensor
// (hardtanh), quantized add, quantized average pool, quantized linear,
// dequantize.
//
// TorchBench's Eval converts the model right after prepare_qat_fx, before
// any observer has run: every activation scale is 1 and zero point 0, so
// its int8 output is coarse (integers); this port does the same.
//
// The quantization mechanisms and the differences from the reference (none
// in the numbers) are listed in common/fx_qat.h. CPU tests (small_inputs)
// use 64x64 images instead of 224x224 (the same path).
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/dropout.h>
#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/fx_qat.h"
#include "common/torchvision_mobilenet_v2.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace mobilenet_v2_quantized_qat_model {
namespace {

using fx_qat::ConvBn;
using fx_qat::FakeQuantize;
using fx_qat::Find;

// One ConvBn2d and the fake-quant after it; with ReLU6, the same fake-quant
// again after the ReLU6.
struct Unit {
  ConvBn conv{nullptr};
  FakeQuantize fq{nullptr};
  bool relu6 = false;
};

struct Block {
  std::vector<Unit> units;
  bool residual = false;
  FakeQuantize add_fq{nullptr};
};

struct Int8Block {
  std::vector<std::pair<fx_qat::Int8Conv, bool>> convs;  // (conv, relu6)
  bool residual = false;
  fx_qat::QParams add;
};

class MobileNetV2QatImpl : public fx_qat::QatNet {
 public:
  MobileNetV2QatImpl() : fqs_(*this) {
    torchvision_mobilenet_v2::MobileNetV2 net(
        torchvision_mobilenet_v2::MobileNetV2Options{});
    input_fq_ = fqs_.New();
    auto unit = [&](const std::string& conv_name, const std::string& bn_name,
                    const std::string& qat_name, bool relu6) {
      Unit u;
      u.conv = ConvBn(
          torch::nn::Conv2d(Find<torch::nn::Conv2dImpl>(*net, conv_name)),
          torch::nn::BatchNorm2d(
              Find<torch::nn::BatchNorm2dImpl>(*net, bn_name)),
          /*relu=*/false);
      fx_qat::RegisterAt(*this, qat_name, u.conv.ptr());
      u.fq = fqs_.New();
      if (relu6) fqs_.Shared();
      u.relu6 = relu6;
      return u;
    };
    const int64_t num_features = static_cast<int64_t>(
        Find<torch::nn::SequentialImpl>(*net, "features")->size());
    for (int64_t i = 0; i < num_features; ++i) {
      const std::string f = "features." + std::to_string(i);
      Block block;
      if (i == 0 || i == num_features - 1) {
        block.units.push_back(unit(f + ".0", f + ".1", f + ".0", true));
      } else {
        const std::string c = f + ".conv.";
        const bool expand =
            Find<torch::nn::SequentialImpl>(*net, f + ".conv")->size() == 4;
        int64_t k = 0;
        if (expand) {
          block.units.push_back(unit(c + "0.0", c + "0.1", c + "0.0", true));
          ++k;
        }
        const std::string dw = c + std::to_string(k);
        block.units.push_back(unit(dw + ".0", dw + ".1", dw + ".0", true));
        ++k;
        block.units.push_back(unit(c + std::to_string(k),
                                   c + std::to_string(k + 1),
                                   c + std::to_string(k), false));
        // InvertedResidual: stride 1 and as many channels out as in.
        // (The depthwise conv's weight is C x 1 x k x k.)
        const torch::Tensor& first = block.units.front().conv->weight;
        const int64_t in = expand ? first.size(1) : first.size(0);
        const auto dw_conv = Find<torch::nn::Conv2dImpl>(*net, dw + ".0");
        block.residual = dw_conv->options.stride()->at(0) == 1 &&
                         in == block.units.back().conv->weight.size(0);
        if (block.residual) block.add_fq = fqs_.New();
      }
      blocks_.push_back(std::move(block));
    }
    // adaptive_avg_pool2d and flatten keep the last ReLU6's fake-quant.
    fqs_.Shared();
    fqs_.Shared();
    dropout_ =
        torch::nn::Dropout(Find<torch::nn::DropoutImpl>(*net, "classifier.0"));
    fx_qat::RegisterAt(*this, "classifier.0", dropout_.ptr());
    dropout_fq_ = fqs_.New();
    classifier_ = fx_qat::Linear(
        torch::nn::Linear(Find<torch::nn::LinearImpl>(*net, "classifier.1")));
    fx_qat::RegisterAt(*this, "classifier.1", classifier_.ptr());
    output_fq_ = fqs_.New();
  }

  torch::Tensor forward(const torch::Tensor& input) override {
    torch::Tensor x = input_fq_(input);
    for (Block& block : blocks_) {
      const torch::Tensor identity = x;
      for (Unit& u : block.units) {
        x = u.fq(u.conv(x));
        if (u.relu6) x = u.fq(torch::hardtanh_(x, 0.0, 6.0));
      }
      if (block.residual) x = block.add_fq(identity + x);
    }
    FakeQuantize& last = blocks_.back().units.back().fq;
    x = last(torch::adaptive_avg_pool2d(x, {1, 1}));
    x = last(torch::flatten(x, 1));
    x = dropout_fq_(dropout_(x));
    return output_fq_(classifier_(x));
  }

  std::function<torch::Tensor(const torch::Tensor&)> Convert() override {
    std::vector<Int8Block> blocks;
    for (const Block& block : blocks_) {
      Int8Block b;
      for (const Unit& u : block.units) {
        b.convs.emplace_back(u.conv->Convert(u.fq), u.relu6);
      }
      b.residual = block.residual;
      if (block.residual) b.add = block.add_fq->CalculateQParams();
      blocks.push_back(std::move(b));
    }
    const fx_qat::QParams input = input_fq_->CalculateQParams();
    const fx_qat::Int8Linear classifier = classifier_->Convert(output_fq_);
    return [blocks = std::move(blocks), input,
            classifier](const torch::Tensor& image) {
      torch::Tensor q = fx_qat::QuantizeInput(image, input);
      for (const Int8Block& b : blocks) {
        const torch::Tensor identity = q;
        for (const auto& [conv, relu6] : b.convs) {
          q = conv(q);
          if (relu6) q = torch::hardtanh_(q, 0.0, 6.0);
        }
        if (b.residual) q = fx_qat::Int8Add(identity, q, b.add, /*relu=*/false);
      }
      q = torch::flatten(torch::adaptive_avg_pool2d(q, {1, 1}), 1);
      // The dropout is QuantizedDropout, the identity in eval().
      return classifier(q).dequantize();
    };
  }

 private:
  fx_qat::ActivationFakeQuants fqs_;
  FakeQuantize input_fq_{nullptr};
  std::vector<Block> blocks_;
  torch::nn::Dropout dropout_{nullptr};
  FakeQuantize dropout_fq_{nullptr};
  fx_qat::Linear classifier_{nullptr};
  FakeQuantize output_fq_{nullptr};
};

}  // namespace

// DEFAULT_TRAIN_BSIZE = DEFAULT_EVAL_BSIZE = 96. Counts: TorchBench's
// prepared model (Model(test="train").model, pinned torch, pinned
// torchvision), counted in Python: sum(p.numel()) over parameters() is
// mobilenet_v2's; over buffers() 34884 = 34164 (BatchNorm) + 65 activation
// fake-quants x 7 (fake_quant_enabled, observer_enabled, scale, zero_point,
// eps, min_val, max_val) + 53 weight fake-quants x 5 (empty per-channel
// min_val/max_val until the first forward).
TORCHBENCH_REGISTER_MODEL(
    fx_qat::QatClassifierSpec("mobilenet_v2", /*batch_size=*/96,
                              {.parameters = 3504872, .buffers = 34884}),
    fx_qat::MakeQatClassifier(
        {.make_net = [] { return std::make_shared<MobileNetV2QatImpl>(); },
         .golden_parameters = {"features.0.0.weight", "features.0.0.bn.weight",
                               "features.17.conv.2.weight",
                               "classifier.1.weight", "classifier.1.bias"}}));

}  // namespace mobilenet_v2_quantized_qat_model
}  // namespace torchbench
