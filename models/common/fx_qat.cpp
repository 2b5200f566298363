#include "common/fx_qat.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <torch/nn/functional/loss.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "torchbench/amp.h"
#include "torchbench/checks.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/golden.h"
#include "torchbench/optim.h"

namespace torchbench::fx_qat {
namespace {

// The fbgemm QAT qconfig's ranges: activations quint8 0..255 with
// reduce_range (the observer's 0..127), weights qint8 -128..127.
constexpr int64_t kActivationQuantMin = 0;
constexpr int64_t kActivationQuantMax = 127;
constexpr int64_t kWeightQuantMin = -128;
constexpr int64_t kWeightQuantMax = 127;
// MovingAverage*MinMaxObserver's default averaging_constant.
constexpr double kAveragingConstant = 0.01;

c10::OperatorHandle QuantizedOp(const char* name, const char* overload) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, overload);
}

// Calls a quantized:: operator boxed: its packed-parameter classes are
// TorchScript custom classes without public C++ headers.
c10::IValue CallBoxed(const c10::OperatorHandle& op, torch::jit::Stack stack) {
  op.callBoxed(&stack);
  TORCH_CHECK(stack.size() == 1, "expected one result");
  return std::move(stack[0]);
}

}  // namespace

double QParams::scale_value() const {
  return static_cast<double>(scale.item<float>());
}
int64_t QParams::zero_point_value() const { return zero_point.item<int64_t>(); }

ObserverImpl::ObserverImpl(bool per_channel) {
  const float inf = std::numeric_limits<float>::infinity();
  eps = register_buffer("eps",
                        torch::tensor({std::numeric_limits<float>::epsilon()}));
  // Per-tensor min/max are 0-d (inf, -inf); per-channel ones start empty.
  min_val = register_buffer(
      "min_val", per_channel ? torch::empty({0}) : torch::tensor(inf));
  max_val = register_buffer(
      "max_val", per_channel ? torch::empty({0}) : torch::tensor(-inf));
}

FakeQuantizeImpl::FakeQuantizeImpl(FakeQuantKind kind)
    : kind_(kind),
      quant_min_(kind == FakeQuantKind::kActivation ? kActivationQuantMin
                                                    : kWeightQuantMin),
      quant_max_(kind == FakeQuantKind::kActivation ? kActivationQuantMax
                                                    : kWeightQuantMax) {
  const auto long_options = torch::TensorOptions().dtype(torch::kLong);
  fake_quant_enabled_ =
      register_buffer("fake_quant_enabled", torch::ones({1}, long_options));
  observer_enabled_ =
      register_buffer("observer_enabled", torch::ones({1}, long_options));
  scale_ = register_buffer("scale", torch::ones({1}));
  zero_point_ = register_buffer(
      "zero_point",
      torch::zeros({1}, torch::TensorOptions().dtype(torch::kInt)));
  observer_ = register_module("activation_post_process",
                              Observer(kind == FakeQuantKind::kWeight));
}

torch::Tensor FakeQuantizeImpl::forward(const torch::Tensor& x) {
  const bool per_channel = kind_ == FakeQuantKind::kWeight;
  return torch::fused_moving_avg_obs_fake_quant(
      x, observer_enabled_, fake_quant_enabled_, observer_->min_val,
      observer_->max_val, scale_, zero_point_, kAveragingConstant, quant_min_,
      quant_max_, /*ch_axis=*/0, /*per_row_fake_quant=*/per_channel,
      /*symmetric_quant=*/per_channel);
}

QParams FakeQuantizeImpl::CalculateQParams() const {
  torch::NoGradGuard no_grad;
  const torch::Tensor& min_val = observer_->min_val;
  const torch::Tensor& max_val = observer_->max_val;
  const auto device = min_val.device();
  // check_min_max_valid: nothing observed yet.
  if (min_val.numel() == 0 || max_val.numel() == 0 ||
      (min_val.dim() == 0 && std::isinf(min_val.item<float>()) &&
       std::isinf(max_val.item<float>()))) {
    return {torch::ones({1}, torch::TensorOptions().device(device)),
            torch::zeros({1}, torch::TensorOptions().device(device).dtype(
                                  torch::kLong))};
  }
  torch::Tensor min_neg = torch::min(min_val, torch::zeros_like(min_val));
  torch::Tensor max_pos = torch::max(max_val, torch::zeros_like(max_val));
  torch::Tensor scale;
  torch::Tensor zero_point;
  if (kind_ == FakeQuantKind::kWeight) {
    // per_channel_symmetric, qint8: zero points 0.
    max_pos = torch::max(-min_neg, max_pos);
    scale = max_pos / (static_cast<double>(quant_max_ - quant_min_) / 2);
    scale = torch::max(scale, observer_->eps);
    zero_point =
        torch::zeros(min_neg.sizes(), min_neg.options().dtype(torch::kLong));
  } else {
    scale = (max_pos - min_neg) / static_cast<double>(quant_max_ - quant_min_);
    scale = torch::max(scale, observer_->eps);
    zero_point = quant_min_ - torch::round(min_neg / scale).to(torch::kInt);
    zero_point = torch::clamp(zero_point, quant_min_, quant_max_);
  }
  if (scale.dim() == 0) scale = scale.reshape({1});
  if (zero_point.dim() == 0) zero_point = zero_point.reshape({1});
  return {scale, zero_point};
}

void FakeQuantizeImpl::ResetState() {
  torch::NoGradGuard no_grad;
  scale_.fill_(1.0);
  zero_point_.zero_();
  observer_->eps.fill_(std::numeric_limits<float>::epsilon());
  if (kind_ == FakeQuantKind::kActivation) {
    observer_->min_val.fill_(std::numeric_limits<float>::infinity());
    observer_->max_val.fill_(-std::numeric_limits<float>::infinity());
  }
}

std::shared_ptr<FakeQuantizeImpl> FakeQuantizeImpl::Copy() const {
  auto copy = std::make_shared<FakeQuantizeImpl>(kind_);
  torch::NoGradGuard no_grad;
  copy->fake_quant_enabled_.set_(fake_quant_enabled_.clone());
  copy->observer_enabled_.set_(observer_enabled_.clone());
  copy->scale_.set_(scale_.clone());
  copy->zero_point_.set_(zero_point_.clone());
  copy->observer_->eps.set_(observer_->eps.clone());
  copy->observer_->min_val.set_(observer_->min_val.clone());
  copy->observer_->max_val.set_(observer_->max_val.clone());
  return copy;
}

torch::Tensor Int8Conv::operator()(const torch::Tensor& qx) const {
  static const c10::OperatorHandle conv =
      QuantizedOp("quantized::conv2d", "new");
  static const c10::OperatorHandle conv_relu =
      QuantizedOp("quantized::conv2d_relu", "new");
  return CallBoxed(relu ? conv_relu : conv, {qx, packed, scale, zero_point})
      .toTensor();
}

torch::Tensor Int8Linear::operator()(const torch::Tensor& qx) const {
  static const c10::OperatorHandle linear =
      QuantizedOp("quantized::linear", "");
  return CallBoxed(linear, {qx, packed, scale, zero_point}).toTensor();
}

torch::Tensor Int8Add(const torch::Tensor& qa, const torch::Tensor& qb,
                      const QParams& out, bool relu) {
  static const c10::OperatorHandle add = QuantizedOp("quantized::add", "");
  static const c10::OperatorHandle add_relu =
      QuantizedOp("quantized::add_relu", "");
  return CallBoxed(relu ? add_relu : add,
                   {qa, qb, out.scale_value(), out.zero_point_value()})
      .toTensor();
}

torch::Tensor QuantizeInput(const torch::Tensor& x, const QParams& qparams) {
  return torch::quantize_per_tensor(x, qparams.scale_value(),
                                    qparams.zero_point_value(), torch::kQUInt8);
}

namespace {

// convert_weighted_module: the weight fake-quant (a copy here) observes the
// float weight once more, then its qparams quantize it per channel.
torch::Tensor QuantizeWeight(const FakeQuantize& weight_fake_quant,
                             const torch::Tensor& weight) {
  std::shared_ptr<FakeQuantizeImpl> observer = weight_fake_quant->Copy();
  observer->forward(weight);
  const QParams qparams = observer->CalculateQParams();
  return torch::quantize_per_channel(weight, qparams.scale, qparams.zero_point,
                                     /*axis=*/0, torch::kQInt8);
}

}  // namespace

ConvBnImpl::ConvBnImpl(const torch::nn::Conv2d& conv,
                       torch::nn::BatchNorm2d bn_module, bool relu)
    : options_(conv->options), relu_(relu) {
  TORCH_CHECK(!options_.bias(), "a conv before a BatchNorm has no bias here");
  weight = register_parameter("weight", conv->weight);
  bn = register_module("bn", std::move(bn_module));
  weight_fake_quant = register_module("weight_fake_quant",
                                      FakeQuantize(FakeQuantKind::kWeight));
}

torch::Tensor ConvBnImpl::forward(const torch::Tensor& x) {
  const torch::Tensor running_std =
      torch::sqrt(bn->running_var + bn->options.eps());
  const torch::Tensor scale_factor = bn->weight / running_std;
  const torch::Tensor scaled_weight =
      weight_fake_quant(weight * scale_factor.reshape({-1, 1, 1, 1}));
  // The conv's own bias is added after the rescale: a zero bias here.
  const torch::Tensor zero_bias = torch::zeros(
      {options_.out_channels()}, torch::TensorOptions()
                                     .device(scaled_weight.device())
                                     .dtype(x.scalar_type()));
  torch::Tensor out =
      torch::conv2d(x, scaled_weight, zero_bias, options_.stride(),
                    std::get<torch::ExpandingArray<2>>(options_.padding()),
                    options_.dilation(), options_.groups());
  out = bn(out / scale_factor.reshape({1, -1, 1, 1}));
  return relu_ ? torch::relu(out) : out;
}

Int8Conv ConvBnImpl::Convert(const FakeQuantize& out) const {
  torch::NoGradGuard no_grad;
  // fuse_conv_bn_weights.
  const torch::Tensor rsqrt_var =
      torch::rsqrt(bn->running_var + bn->options.eps());
  const torch::Tensor folded_weight =
      weight * (bn->weight * rsqrt_var).reshape({-1, 1, 1, 1});
  const torch::Tensor folded_bias =
      (torch::zeros_like(bn->running_mean) - bn->running_mean) * rsqrt_var *
          bn->weight +
      bn->bias;
  static const c10::OperatorHandle prepack =
      QuantizedOp("quantized::conv2d_prepack", "");
  const auto list = [](torch::IntArrayRef v) { return v.vec(); };
  Int8Conv conv;
  conv.packed = CallBoxed(
      prepack, {QuantizeWeight(weight_fake_quant, folded_weight), folded_bias,
                list(options_.stride()),
                list(std::get<torch::ExpandingArray<2>>(options_.padding())),
                list(options_.dilation()), options_.groups()});
  const QParams qparams = out->CalculateQParams();
  conv.scale = qparams.scale_value();
  conv.zero_point = qparams.zero_point_value();
  conv.relu = relu_;
  return conv;
}

LinearImpl::LinearImpl(const torch::nn::Linear& linear) {
  weight = register_parameter("weight", linear->weight);
  bias = register_parameter("bias", linear->bias);
  weight_fake_quant = register_module("weight_fake_quant",
                                      FakeQuantize(FakeQuantKind::kWeight));
}

torch::Tensor LinearImpl::forward(const torch::Tensor& x) {
  return torch::linear(x, weight_fake_quant(weight), bias);
}

Int8Linear LinearImpl::Convert(const FakeQuantize& out) const {
  torch::NoGradGuard no_grad;
  static const c10::OperatorHandle prepack =
      QuantizedOp("quantized::linear_prepack", "");
  Int8Linear linear;
  linear.packed = CallBoxed(
      prepack, {QuantizeWeight(weight_fake_quant, weight), bias.detach()});
  const QParams qparams = out->CalculateQParams();
  linear.scale = qparams.scale_value();
  linear.zero_point = qparams.zero_point_value();
  return linear;
}

void RegisterAt(torch::nn::Module& root, const std::string& path,
                std::shared_ptr<torch::nn::Module> module) {
  torch::nn::Module* parent = &root;
  size_t start = 0;
  for (size_t dot = path.find('.'); dot != std::string::npos;
       dot = path.find('.', start)) {
    const std::string name = path.substr(start, dot - start);
    std::shared_ptr<torch::nn::Module> child;
    for (const auto& item : parent->named_children()) {
      if (item.key() == name) child = item.value();
    }
    if (child == nullptr) {
      child =
          parent->register_module(name, std::make_shared<torch::nn::Module>());
    }
    parent = child.get();
    start = dot + 1;
  }
  parent->register_module(path.substr(start), std::move(module));
}

FakeQuantize ActivationFakeQuants::New() {
  last_ = root_.register_module(
      "activation_post_process_" + std::to_string(next_++),
      FakeQuantize(FakeQuantKind::kActivation));
  return last_;
}

FakeQuantize ActivationFakeQuants::Shared() {
  TORCH_CHECK(!last_.is_empty(), "no fake-quant to share");
  ++next_;
  return last_;
}

namespace {

class QatClassifier final : public Model,
                            public GoldenCheck,
                            public FidelityCheck {
 public:
  QatClassifier(const ModelConfig& config, QatClassifierOptions options)
      : config_(config), options_(std::move(options)) {
    TORCH_CHECK(config.mode == Mode::kTrain || config.device.is_cpu(),
                "The eval test only supports CPU.");
    net_ = options_.make_net();
    net_->to(config.device);
    const int64_t size = config.small_inputs ? 64 : 224;
    images_ = torch::randn({config.batch_size, 3, size, size},
                           torch::TensorOptions().device(config.device))
                  .to(config.dtype());
    // prepare_qat_fx runs on the train()-mode model; Eval converts it
    // right away (prep_qat_eval), before any observer has run.
    net_->train();
    if (config.mode == Mode::kEval) int8_ = net_->Convert();
  }

  torch::Tensor Step() override {
    if (config_.mode == Mode::kEval) return int8_(images_[0].unsqueeze(0));
    return TrainStep(images_, torch::Tensor());
  }

  torch::nn::Module& module() override { return *net_; }

  torch::Tensor Forward(const std::vector<torch::Tensor>& inputs) override {
    TORCH_CHECK(inputs.size() == 1, "a classifier takes one batch");
    return net_->forward(inputs[0]);
  }

  // tools/golden/adapters/mobilenet_v2_quantized_qat.py's keys: the fresh
  // conversion (TorchBench's eval path), the same at fixed activation
  // ranges, one train(), and a conversion inside it after backward. The fill
  // covers weights and BatchNorm statistics; the observers go back to their
  // initial state, and dropout is off.
  std::map<std::string, torch::Tensor> GoldenOutputs() override {
    constexpr int64_t kImageSize = 32;
    constexpr double kFixedRange = 4.0;
    for (const auto& m : net_->modules()) {
      if (auto* fq = m->as<FakeQuantizeImpl>()) fq->ResetState();
    }
    TurnOffDropout(*net_);
    const torch::Tensor images = DeterministicTensor(
        "images", {config_.batch_size, 3, kImageSize, kImageSize});
    const torch::Tensor labels =
        DeterministicIntegers("labels", {config_.batch_size}, 0, 1000);
    std::map<std::string, torch::Tensor> out;
    {
      torch::NoGradGuard no_grad;
      out["eval_output_fresh"] = net_->Convert()(images[0].unsqueeze(0));
      // The adapter's fix_activation_ranges: every per-tensor (activation)
      // observer as if it had seen [-4, 4].
      for (const auto& m : net_->modules()) {
        if (auto* observer = m->as<ObserverImpl>();
            observer != nullptr && observer->min_val.dim() == 0) {
          observer->min_val.fill_(-kFixedRange);
          observer->max_val.fill_(kFixedRange);
        }
      }
      out["eval_output_fixed_range"] = net_->Convert()(images[0].unsqueeze(0));
      for (const auto& m : net_->modules()) {
        if (auto* fq = m->as<FakeQuantizeImpl>()) fq->ResetState();
      }
    }
    out.merge(recorder_.Capture([&] { TrainStep(images, labels); }));
    return out;
  }

 private:
  torch::Tensor TrainStep(const torch::Tensor& images, torch::Tensor labels) {
    optim::Adam optimizer(net_->parameters(), optim::AdamOptions{},
                          config_.optimizer);
    optimizer.ZeroGrad();
    torch::Tensor pred = net_->forward(images);
    if (!labels.defined()) {
      labels =
          torch::empty(
              {pred.size(0)},
              torch::TensorOptions().device(pred.device()).dtype(torch::kLong))
              .random_(pred.size(1));
    }
    torch::Tensor loss = torch::nn::functional::cross_entropy(pred, labels);
    Backward(loss);
    if (recorder_.recording()) {
      recorder_.Record("output", pred.clone());
      recorder_.Record("loss", loss.clone());
      // Before the step: see the adapter on Adam's sign-like first step.
      torch::NoGradGuard no_grad;
      recorder_.Record("eval_output", net_->Convert()(images[0].unsqueeze(0)));
    }
    optimizer.Step();
    if (recorder_.recording()) {
      const auto params = net_->named_parameters();
      for (const std::string& name : options_.golden_parameters) {
        const torch::Tensor& p = params[name];
        recorder_.Record("grad:" + name, p.grad().clone());
        recorder_.Record("after_step:" + name, p.clone());
      }
    }
    return loss.detach();
  }

  ModelConfig config_;
  QatClassifierOptions options_;
  std::shared_ptr<QatNet> net_;
  torch::Tensor images_;
  std::function<torch::Tensor(const torch::Tensor&)> int8_;
  GoldenRecorder recorder_;
};

}  // namespace

ModelSpec QatClassifierSpec(const std::string& network, int64_t batch_size,
                            ElementCounts reference) {
  const std::string name = network + "_quantized_qat";
  ModelSpec spec(
      {.name = name,
       .domain = "vision",
       .task = "image classification",
       .reference =
           "torchvision " + network +
           " + torch.ao FX QAT (prepare_qat_fx, fbgemm) and convert_fx",
       .train_batch_size = batch_size,
       .eval_batch_size = batch_size,  // Eval runs one image whatever it is.
       .reference_parameters = reference.parameters,
       .reference_buffers = reference.buffers,
       // TorchBench's metadata.yaml: cudnn.benchmark in Eval only.
       .eval_cudnn = {.benchmark = true},
       .checks = {.golden_file = name + ".golden"}});
  const std::string train_reason =
      "the fake-quant kernel (fused_moving_avg_obs_fake_quant) takes float32 "
      "only, in the reference too";
  const std::string eval_reason =
      "Eval runs the converted int8 model on the float32 image";
  for (Precision p : {Precision::kFp16, Precision::kBf16, Precision::kAmpFp16,
                      Precision::kAmpBf16}) {
    spec.unsupported_precisions.push_back(
        {.precision = p, .reason = train_reason, .mode = Mode::kTrain});
    spec.unsupported_precisions.push_back(
        {.precision = p, .reason = eval_reason, .mode = Mode::kEval});
  }
  return spec;
}

ModelFactory MakeQatClassifier(QatClassifierOptions options) {
  return [options](const ModelConfig& config) -> std::unique_ptr<Model> {
    return std::make_unique<QatClassifier>(config, options);
  };
}

}  // namespace torchbench::fx_qat
