// Quantization-aware training and int8 conversion as torch's FX quantization
// does them with the fbgemm QAT qconfig (torch.ao.quantization.quantize_fx:
// prepare_qat_fx, then convert_fx; get_default_qat_qconfig("fbgemm")), for
// TorchBench's *_quantized_qat models. There is no FX in C++: a model file
// writes the prepared graph's forward by hand from these pieces, placing the
// fake-quantize modules where prepare_qat_fx places them, and writes the
// converted graph with the int8 pieces.
//
//   FakeQuantize  FusedMovingAvgObsFakeQuantize: the fused observer +
//                 fake-quant op (aten::fused_moving_avg_obs_fake_quant, the
//                 kernel Python runs) with its state as buffers named as
//                 torch names them (scale, zero_point, ...,
//                 activation_post_process.{eps,min_val,max_val}).
//                 Activations: quint8, per-tensor affine, reduce_range
//                 (0..127); weights: qint8, per-channel symmetric on axis 0;
//                 both with moving-average min/max (averaging constant 0.01).
//   ConvBn        torch.ao.nn.intrinsic.qat ConvBn2d / ConvBnReLU2d: the
//                 BatchNorm is folded into the fake-quantized weight with the
//                 running statistics and the output rescaled before the
//                 train-mode BatchNorm (_forward_approximate).
//   Linear        torch.ao.nn.qat.Linear: linear with a fake-quantized weight.
//   Int8Conv / Int8Linear / Int8Add / QuantizeInput
//                 what convert_fx lowers those to on the CPU: LibTorch's
//                 quantized operators called through the dispatcher
//                 (quantized::conv2d_prepack + conv2d / conv2d_relu,
//                 linear_prepack + linear, add / add_relu) on weights folded
//                 and quantized as convert_fx quantizes them.
//
// Mechanisms, all LibTorch's own kernels (the ones Python's torch runs):
// Train: aten::fused_moving_avg_obs_fake_quant (observer update, qparams,
// fake-quant, and its straight-through gradient) and ATen conv /
// batch_norm / linear. Eval: torch::quantize_per_tensor /
// quantize_per_channel, quantized::{conv2d_prepack, conv2d.new,
// conv2d_relu.new, linear_prepack, linear, add, add_relu} called boxed
// through c10::Dispatcher, and the QuantizedCPU kernels of max_pool2d,
// adaptive_avg_pool2d, hardtanh_ (ReLU6), flatten and dequantize, on
// LibTorch's default quantized engine (x86: fbgemm / oneDNN), Python's
// default too. Observer qparams (calculate_qparams) are recomputed with the
// same tensor ops as torch/ao/quantization/observer.py.
//
// Differences from the reference, all outside the numbers (the golden
// files, made from torch's own prepare_qat_fx / convert_fx, match bit for
// bit on one thread):
//   - no FX: each model writes the prepared and the converted graph out by
//     hand, from what prepare_qat_fx / convert_fx produce in pinned torch
//     (a torch that placed fake-quants differently needs the files updated);
//   - a fake-quant prepare_qat_fx shares under several names is registered
//     under the first only (buffers() counts it once in Python too; Python's
//     state_dict lists it under each name);
//   - convert observes the folded weights with a copy of each weight
//     fake-quant, where convert_fx updates the prepared model's (TorchBench
//     discards the prepared model, so nothing reads it again);
//   - the int8 model is a function over packed weights, not a module:
//     module() is the prepared model, as what TorchBench counts;
//   - the Train labels come from LibTorch's generator (random_, as in
//     Python, but not Python's stream).
#ifndef TORCHBENCH_MODELS_COMMON_FX_QAT_H_
#define TORCHBENCH_MODELS_COMMON_FX_QAT_H_

#include <ATen/core/ivalue.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "torchbench/model.h"

namespace torchbench::fx_qat {

enum class FakeQuantKind { kActivation, kWeight };

// An observer's calculate_qparams(): float32 scales and int64 zero points.
struct QParams {
  torch::Tensor scale;
  torch::Tensor zero_point;
  // The per-tensor values as convert_fx passes them to quantized operators
  // (float(scale), int(zero_point)).
  double scale_value() const;
  int64_t zero_point_value() const;
};

// The observer child (MovingAverageMinMaxObserver or its per-channel twin):
// only its state, which the fused op reads and writes.
class ObserverImpl : public torch::nn::Module {
 public:
  explicit ObserverImpl(bool per_channel);
  torch::Tensor eps, min_val, max_val;
};
TORCH_MODULE(Observer);

class FakeQuantizeImpl : public torch::nn::Module {
 public:
  explicit FakeQuantizeImpl(FakeQuantKind kind);
  torch::Tensor forward(const torch::Tensor& x);
  // The observer's calculate_qparams() (observer.py _calculate_qparams):
  // scale 1 and zero point 0 when it has observed nothing.
  QParams CalculateQParams() const;
  // Puts the state back to what prepare_qat_fx creates (after a fill).
  void ResetState();
  // A copy with the same state, for convert_fx's weight observation, which
  // must not change the prepared model here.
  std::shared_ptr<FakeQuantizeImpl> Copy() const;
  FakeQuantKind kind() const { return kind_; }

 private:
  FakeQuantKind kind_;
  int64_t quant_min_, quant_max_;
  torch::Tensor fake_quant_enabled_, observer_enabled_, scale_, zero_point_;
  Observer observer_{nullptr};
};
TORCH_MODULE(FakeQuantize);

// Packed int8 weights of a converted conv or linear and its output qparams.
struct Int8Conv {
  c10::IValue packed;
  double scale = 1;
  int64_t zero_point = 0;
  bool relu = false;
  torch::Tensor operator()(const torch::Tensor& qx) const;
};
struct Int8Linear {
  c10::IValue packed;
  double scale = 1;
  int64_t zero_point = 0;
  torch::Tensor operator()(const torch::Tensor& qx) const;
};

// quantized::add / add_relu with the output qparams of `out`.
torch::Tensor Int8Add(const torch::Tensor& qa, const torch::Tensor& qb,
                      const QParams& out, bool relu);
// torch.quantize_per_tensor(x, scale, zero_point, torch.quint8).
torch::Tensor QuantizeInput(const torch::Tensor& x, const QParams& qparams);

class ConvBnImpl : public torch::nn::Module {
 public:
  // Takes over `conv`'s weight and the `bn` module itself, as
  // ConvBn2d.from_float does.
  ConvBnImpl(const torch::nn::Conv2d& conv, torch::nn::BatchNorm2d bn,
             bool relu);
  torch::Tensor forward(const torch::Tensor& x);
  // convert_fx: to_float() (fuse_conv_bn_weights with the running
  // statistics), the weight fake-quant observes the folded weight,
  // quantize_per_channel, conv2d_prepack; `out` is the output observer.
  Int8Conv Convert(const FakeQuantize& out) const;

  torch::Tensor weight;
  torch::nn::BatchNorm2d bn{nullptr};
  FakeQuantize weight_fake_quant{nullptr};

 private:
  torch::nn::detail::ConvNdOptions<2> options_;
  bool relu_;
};
TORCH_MODULE(ConvBn);

class LinearImpl : public torch::nn::Module {
 public:
  explicit LinearImpl(const torch::nn::Linear& linear);
  torch::Tensor forward(const torch::Tensor& x);
  Int8Linear Convert(const FakeQuantize& out) const;

  torch::Tensor weight, bias;
  FakeQuantize weight_fake_quant{nullptr};
};
TORCH_MODULE(Linear);

// Registers `module` under a dotted path ("features.1.conv.0.0"), creating
// empty parent modules as the GraphModule's hierarchy has them.
void RegisterAt(torch::nn::Module& root, const std::string& path,
                std::shared_ptr<torch::nn::Module> module);

// Looks a float module up by its dotted name in a torchvision network.
template <typename Impl>
std::shared_ptr<Impl> Find(torch::nn::Module& net, const std::string& name) {
  for (const auto& item : net.named_modules()) {
    if (item.key() == name) {
      auto found = std::dynamic_pointer_cast<Impl>(item.value());
      TORCH_CHECK(found != nullptr, name, " has another module type");
      return found;
    }
  }
  TORCH_CHECK(false, "no module ", name);
}

// The prepared model's activation fake-quants, numbered as FX numbers them
// (activation_post_process_<n>, top level). prepare_qat_fx shares one module
// between an op and the ops after it that keep its qparams (ReLU6 after a
// conv, maxpool, avgpool, flatten): Shared() takes the next number but
// returns the last module, which the forward calls again, as the
// GraphModule does; buffers() counts it once, as Python's does.
class ActivationFakeQuants {
 public:
  explicit ActivationFakeQuants(torch::nn::Module& root) : root_(root) {}
  FakeQuantize New();
  FakeQuantize Shared();

 private:
  torch::nn::Module& root_;
  int64_t next_ = 0;
  FakeQuantize last_{nullptr};
};

// A prepared network: the fake-quant Train forward, and convert_fx's int8
// model (a function of the float input).
class QatNet : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;
  virtual std::function<torch::Tensor(const torch::Tensor&)> Convert() = 0;
};

// TorchBench's *_quantized_qat Model: Train is a new Adam(lr 1e-3) every
// call, the fake-quant forward on randn(B, 3, 224, 224), CrossEntropyLoss
// against labels drawn each step (empty(B).random_(num_classes)), backward,
// step. Eval runs the int8 model converted at construction on the first
// image (example_inputs[0][0].unsqueeze(0)), on the CPU only. With
// config.small_inputs the images are 64x64 (the same path).
struct QatClassifierOptions {
  std::function<std::shared_ptr<QatNet>()> make_net;
  // Parameters whose gradients and updated values the golden file records.
  std::vector<std::string> golden_parameters;
};
ModelFactory MakeQatClassifier(QatClassifierOptions options);

// The spec both *_quantized_qat models share: "<network>_quantized_qat",
// DEFAULT_TRAIN_BSIZE = DEFAULT_EVAL_BSIZE = batch_size, the golden file
// "<name>.golden", and fp16, bf16, amp_fp16 and amp_bf16 unsupported in both
// modes: the fake-quant kernel takes float32 only (the reference fails the
// same way: "expected scalar type Float but found BFloat16", measured with
// pinned torch), and the int8 Eval model has no floating-point compute to
// lower. `reference` is the prepared model's counts.
ModelSpec QatClassifierSpec(const std::string& network, int64_t batch_size,
                            ElementCounts reference);

}  // namespace torchbench::fx_qat

#endif  // TORCHBENCH_MODELS_COMMON_FX_QAT_H_
