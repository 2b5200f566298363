// TorchBench's resnet50_quantized_qat: torchvision's resnet50()
// (common/torchvision_resnet.h, random init) prepared for
// quantization-aware training as prepare_qat_fx prepares it with the fbgemm
// QAT qconfig, and for Eval converted to int8 as convert_fx converts it
// (common/fx_qat.h has the pieces and the benchmark steps).
//
// The prepared graph: conv1 + bn1 + relu and each bottleneck's conv1/bn1/
// relu and conv2/bn2/relu are ConvBnReLU2d, conv3/bn3 and the downsample
// conv/bn ConvBn2d (named conv1, layerL.B.conv1, ..., with the BatchNorm as
// their "bn" child); a fake-quant observes the input, every fused conv's
// output, each block's add + ReLU and the fc output; the max pool, the
// average pool and the flatten keep their input's fake-quant (the same
// module called again). The int8 model: quantize_per_tensor, quantized
// conv2d_relu / conv2d (packed per-channel weights with the BatchNorm
// folded in), quantized max pool, quantized add_relu, quantized average
// pool, quantized linear, dequantize.
//
// TorchBench's Eval converts the model right after prepare_qat_fx, before
// any observer has run: every activation scale is 1 and zero point 0, so
// its int8 output is coarse (integers); this port does the same.
//
// The quantization mechanisms and the differences from the reference (none
// in the numbers) are listed in common/fx_qat.h. CPU tests (small_inputs)
// use 64x64 images instead of 224x224 (the same path).
#include <torch/torch.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/fx_qat.h"
#include "common/torchvision_resnet.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace resnet50_quantized_qat_model {
namespace {

using fx_qat::ConvBn;
using fx_qat::FakeQuantize;
using fx_qat::Find;

struct Stage {
  ConvBn conv{nullptr};
  FakeQuantize fq{nullptr};
};

struct Block {
  Stage conv1, conv2, conv3, downsample;  // downsample.conv may be empty.
  FakeQuantize add_fq{nullptr};
};

struct Int8Block {
  fx_qat::Int8Conv conv1, conv2, conv3;
  std::optional<fx_qat::Int8Conv> downsample;
  fx_qat::QParams add;
};

class ResNet50QatImpl : public fx_qat::QatNet {
 public:
  ResNet50QatImpl() : fqs_(*this) {
    torchvision_resnet::ResNet net(
        torchvision_resnet::ResNetOptions()
            .block(torchvision_resnet::ResNetBlock::kBottleneck)
            .layers({3, 4, 6, 3}));
    auto stage = [&](const std::string& conv_name, const std::string& bn_name,
                     const std::string& qat_name, bool relu) {
      Stage s;
      s.conv = ConvBn(
          torch::nn::Conv2d(Find<torch::nn::Conv2dImpl>(*net, conv_name)),
          torch::nn::BatchNorm2d(
              Find<torch::nn::BatchNorm2dImpl>(*net, bn_name)),
          relu);
      fx_qat::RegisterAt(*this, qat_name, s.conv.ptr());
      s.fq = fqs_.New();
      return s;
    };
    input_fq_ = fqs_.New();
    stem_ = stage("conv1", "bn1", "conv1", /*relu=*/true);
    fqs_.Shared();  // maxpool
    const std::vector<int64_t> layers = {3, 4, 6, 3};
    for (size_t l = 0; l < layers.size(); ++l) {
      for (int64_t b = 0; b < layers[l]; ++b) {
        const std::string p =
            "layer" + std::to_string(l + 1) + "." + std::to_string(b) + ".";
        Block block;
        block.conv1 = stage(p + "conv1", p + "bn1", p + "conv1", true);
        block.conv2 = stage(p + "conv2", p + "bn2", p + "conv2", true);
        block.conv3 = stage(p + "conv3", p + "bn3", p + "conv3", false);
        if (b == 0) {
          block.downsample = stage(p + "downsample.0", p + "downsample.1",
                                   p + "downsample.0", false);
        }
        block.add_fq = fqs_.New();
        blocks_.push_back(std::move(block));
      }
    }
    fqs_.Shared();  // avgpool
    fqs_.Shared();  // flatten
    fc_ = fx_qat::Linear(
        torch::nn::Linear(Find<torch::nn::LinearImpl>(*net, "fc")));
    register_module("fc", fc_);
    output_fq_ = fqs_.New();
  }

  torch::Tensor forward(const torch::Tensor& input) override {
    torch::Tensor x = stem_.fq(stem_.conv(input_fq_(input)));
    x = stem_.fq(torch::max_pool2d(x, {3, 3}, {2, 2}, {1, 1}, {1, 1}));
    for (Block& b : blocks_) {
      torch::Tensor out = b.conv1.fq(b.conv1.conv(x));
      out = b.conv2.fq(b.conv2.conv(out));
      out = b.conv3.fq(b.conv3.conv(out));
      const torch::Tensor identity =
          b.downsample.conv.is_empty() ? x
                                       : b.downsample.fq(b.downsample.conv(x));
      x = b.add_fq(torch::relu(out + identity));
    }
    FakeQuantize& last = blocks_.back().add_fq;
    x = last(torch::adaptive_avg_pool2d(x, {1, 1}));
    x = last(torch::flatten(x, 1));
    return output_fq_(fc_(x));
  }

  std::function<torch::Tensor(const torch::Tensor&)> Convert() override {
    const fx_qat::QParams input = input_fq_->CalculateQParams();
    const fx_qat::Int8Conv stem = stem_.conv->Convert(stem_.fq);
    std::vector<Int8Block> blocks;
    for (const Block& b : blocks_) {
      Int8Block q{.conv1 = b.conv1.conv->Convert(b.conv1.fq),
                  .conv2 = b.conv2.conv->Convert(b.conv2.fq),
                  .conv3 = b.conv3.conv->Convert(b.conv3.fq),
                  .downsample = std::nullopt,
                  .add = b.add_fq->CalculateQParams()};
      if (!b.downsample.conv.is_empty()) {
        q.downsample = b.downsample.conv->Convert(b.downsample.fq);
      }
      blocks.push_back(std::move(q));
    }
    const fx_qat::Int8Linear fc = fc_->Convert(output_fq_);
    return [input, stem, blocks = std::move(blocks),
            fc](const torch::Tensor& image) {
      torch::Tensor q = stem(fx_qat::QuantizeInput(image, input));
      q = torch::max_pool2d(q, {3, 3}, {2, 2}, {1, 1}, {1, 1});
      for (const Int8Block& b : blocks) {
        const torch::Tensor out = b.conv3(b.conv2(b.conv1(q)));
        const torch::Tensor identity = b.downsample ? (*b.downsample)(q) : q;
        q = fx_qat::Int8Add(out, identity, b.add, /*relu=*/true);
      }
      q = torch::flatten(torch::adaptive_avg_pool2d(q, {1, 1}), 1);
      return fc(q).dequantize();
    };
  }

 private:
  fx_qat::ActivationFakeQuants fqs_;
  FakeQuantize input_fq_{nullptr};
  Stage stem_;
  std::vector<Block> blocks_;
  fx_qat::Linear fc_{nullptr};
  FakeQuantize output_fq_{nullptr};
};

}  // namespace

// DEFAULT_TRAIN_BSIZE = DEFAULT_EVAL_BSIZE = 32. Counts: TorchBench's
// prepared model (Model(test="train").model, pinned torch and
// torchvision), counted in Python: parameters() is resnet50's; buffers()
// 53940 = 53173 (BatchNorm) + 71 activation fake-quants x 7 + 54 weight
// fake-quants x 5 (empty per-channel min/max until a forward).
TORCHBENCH_REGISTER_MODEL(
    fx_qat::QatClassifierSpec("resnet50", /*batch_size=*/32,
                              {.parameters = 25557032, .buffers = 53940}),
    fx_qat::MakeQatClassifier(
        {.make_net = [] { return std::make_shared<ResNet50QatImpl>(); },
         .golden_parameters = {"conv1.weight", "conv1.bn.weight",
                               "layer4.2.conv3.weight", "fc.weight",
                               "fc.bias"}}));

}  // namespace resnet50_quantized_qat_model
}  // namespace torchbench
