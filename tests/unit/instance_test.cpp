#include "torchbench/instance.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>

#include "amp_internal.h"
#include "instance_internal.h"
#include "torchbench/amp.h"
#include "torchbench/optim.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace {

// Records, per step, whether the harness gave it a GradScaler and its scale
// then; its first step's gradients are Inf (the scaler backs off).
class ScalerProbe final : public Model {
 public:
  explicit ScalerProbe(const ModelConfig& config)
      : w_(root_.register_parameter("w", torch::ones({2}))),
        sgd_({w_}, {.lr = 0.1}, config.optimizer) {}
  torch::Tensor Step() override {
    had_scaler_ = ActiveGradScaler() != nullptr;
    scale_ = had_scaler_ ? ActiveGradScaler()->scale() : 0;
    sgd_.ZeroGrad();
    const double factor =
        steps_++ == 0 ? std::numeric_limits<double>::infinity() : 3.0;
    torch::Tensor loss = (w_ * factor).sum();
    Backward(loss);
    sgd_.Step();
    return loss.detach();
  }
  torch::nn::Module& module() override { return root_; }
  bool had_scaler() const { return had_scaler_; }
  double scale() const { return scale_; }

 private:
  torch::nn::Module root_;
  torch::Tensor w_;
  optim::Sgd sgd_;
  bool had_scaler_ = false;
  double scale_ = 0;
  int steps_ = 0;
};

ModelSpec ProbeSpec(const std::string& name) {
  return {.name = name,
          .domain = "test",
          .train_batch_size = 1,
          .eval_batch_size = 1,
          .train_cudnn = {.benchmark = true},
          .eval_cudnn = {.deterministic = true}};
}

ModelConfig ProbeConfig(Mode mode, Precision precision) {
  ModelConfig config;
  config.mode = mode;
  config.precision = precision;
  return config;
}

// fp32 is PyTorch's default math (cuDNN TF32 on, matmul TF32 off), as
// TorchBench's fp32 leaves torch.backends alone; only tf32 turns matmul TF32
// on. cuDNN autotuning and determinism are the model's, per mode.
TEST(BackendFlagsTest, FollowThePrecisionAndTheModelsMode) {
  const ModelSpec spec = ProbeSpec("m");
  const BackendFlags train =
      BackendFlagsFor(spec, ProbeConfig(Mode::kTrain, Precision::kFp32));
  EXPECT_FALSE(train.allow_tf32_matmul);
  EXPECT_TRUE(train.allow_tf32_cudnn);
  EXPECT_TRUE(train.cudnn_benchmark);
  EXPECT_FALSE(train.cudnn_deterministic);
  const BackendFlags eval =
      BackendFlagsFor(spec, ProbeConfig(Mode::kEval, Precision::kFp16));
  EXPECT_FALSE(eval.allow_tf32_matmul);
  EXPECT_TRUE(eval.allow_tf32_cudnn);
  EXPECT_FALSE(eval.cudnn_benchmark);
  EXPECT_TRUE(eval.cudnn_deterministic);
  const BackendFlags tf32 =
      BackendFlagsFor(spec, ProbeConfig(Mode::kEval, Precision::kTf32));
  EXPECT_TRUE(tf32.allow_tf32_matmul);
  EXPECT_TRUE(tf32.allow_tf32_cudnn);
  for (Precision p :
       {Precision::kBf16, Precision::kAmpFp16, Precision::kAmpBf16}) {
    EXPECT_FALSE(
        BackendFlagsFor(spec, ProbeConfig(Mode::kTrain, p)).allow_tf32_matmul);
  }
}

// The flags are process-wide: each instance sets its own when built and
// when the cache hands it out again after another ran.
TEST(BackendFlagsTest, EachInstanceRunsUnderItsOwn) {
  Registry registry;
  ASSERT_TRUE(
      registry.Add(ProbeSpec("m"), MakeModel<ScalerProbe>(), "f", 1).ok());
  const RegisteredModel& entry = *registry.Find("m");
  const ModelConfig train = ProbeConfig(Mode::kTrain, Precision::kTf32);
  const ModelConfig eval = ProbeConfig(Mode::kEval, Precision::kFp32);
  Instance a(entry, train);
  EXPECT_EQ(CurrentBackendFlags(), BackendFlagsFor(entry.spec, train));
  Instance b(entry, eval);
  EXPECT_EQ(CurrentBackendFlags(), BackendFlagsFor(entry.spec, eval));
  a.Activate();
  EXPECT_EQ(CurrentBackendFlags(), a.backend_flags());

  InstanceCache cache;
  cache.Acquire(entry, train, /*warmup_steps=*/0);
  ApplyBackendFlags(BackendFlagsFor(entry.spec, eval));
  cache.Acquire(entry, train, /*warmup_steps=*/0);  // the live one again
  EXPECT_EQ(CurrentBackendFlags(), BackendFlagsFor(entry.spec, train));
  ApplyBackendFlags({});
}

// Labels and the context say what PyTorch holds, whoever set it: flags set
// straight in LibTorch's global context, not through the harness, are what
// CurrentBackendFlags reads and BackendFlagsText spells.
TEST(BackendFlagsTest, ReadBackIsWhatPyTorchHolds) {
  auto& ctx = at::globalContext();
  const BackendFlags before = CurrentBackendFlags();
  ctx.setAllowTF32CuBLAS(true);
  ctx.setAllowTF32CuDNN(false);
  ctx.setBenchmarkCuDNN(true);
  ctx.setDeterministicCuDNN(true);
  const BackendFlags read = CurrentBackendFlags();
  EXPECT_TRUE(read.allow_tf32_matmul);
  EXPECT_FALSE(read.allow_tf32_cudnn);
  EXPECT_TRUE(read.cudnn_benchmark);
  EXPECT_TRUE(read.cudnn_deterministic);
  EXPECT_EQ(BackendFlagsText(read),
            "tf32_matmul:true tf32_cudnn:false cudnn_benchmark:true "
            "cudnn_deterministic:true");
  ApplyBackendFlags(before);
  EXPECT_EQ(BackendFlagsText(CurrentBackendFlags()), BackendFlagsText(before));
}

TEST(InstanceTest, Fp16AmpTrainScalesOnlyWhereTheSpecSays) {
  Registry registry;
  ModelSpec scaled = ProbeSpec("scaled");
  scaled.amp_grad_scaler = AmpGradScaler::kKept;
  ModelSpec per_step = ProbeSpec("per_step");
  per_step.amp_grad_scaler = AmpGradScaler::kPerStep;
  ASSERT_TRUE(
      registry.Add(ProbeSpec("plain"), MakeModel<ScalerProbe>(), "f", 1).ok());
  ASSERT_TRUE(registry.Add(scaled, MakeModel<ScalerProbe>(), "f", 2).ok());
  ASSERT_TRUE(registry.Add(per_step, MakeModel<ScalerProbe>(), "f", 3).ok());
  const ModelConfig amp = ProbeConfig(Mode::kTrain, Precision::kAmpFp16);
  Instance plain(*registry.Find("plain"), amp);
  plain.Step();
  EXPECT_FALSE(dynamic_cast<ScalerProbe&>(plain.model()).had_scaler());
  // A kept scaler backs off after the Inf step and stays backed off; a new
  // one per step (pytorch_unet's) starts each step at 2^16.
  Instance with(*registry.Find("scaled"), amp);
  with.Step();
  EXPECT_TRUE(dynamic_cast<ScalerProbe&>(with.model()).had_scaler());
  with.Step();
  EXPECT_EQ(dynamic_cast<ScalerProbe&>(with.model()).scale(), 32768.0);
  Instance fresh(*registry.Find("per_step"), amp);
  fresh.Step();
  fresh.Step();
  EXPECT_TRUE(dynamic_cast<ScalerProbe&>(fresh.model()).had_scaler());
  EXPECT_EQ(dynamic_cast<ScalerProbe&>(fresh.model()).scale(), 65536.0);
  // amp_bf16 never scales.
  Instance bf16(*registry.Find("scaled"),
                ProbeConfig(Mode::kTrain, Precision::kAmpBf16));
  bf16.Step();
  EXPECT_FALSE(dynamic_cast<ScalerProbe&>(bf16.model()).had_scaler());
}

// A safetensors file of one F32 tensor, as Python's safetensors writes it.
std::string WriteOneTensor(const std::string& file, const std::string& key,
                           const std::vector<float>& values) {
  const std::string path =
      (std::filesystem::path(::testing::TempDir()) / file).string();
  const uint64_t bytes = values.size() * sizeof(float);
  const std::string header = "{\"" + key + "\":{\"dtype\":\"F32\",\"shape\":[" +
                             std::to_string(values.size()) +
                             "],\"data_offsets\":[0," + std::to_string(bytes) +
                             "]}}";
  std::string length(8, '\0');
  for (int i = 0; i < 8; ++i) {
    length[i] = static_cast<char>(uint64_t{header.size()} >> (8 * i));
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << length << header;
  out.write(reinterpret_cast<const char*>(values.data()),
            static_cast<std::streamsize>(bytes));
  return path;
}

// --torchbench_weights: every instance the cache builds holds the file's
// weights before its warm-up; a file that does not fit the module fails that
// instance with a message naming the flag and the key.
TEST(InstanceCacheTest, LoadsTheWeightsFileIntoEachInstanceItBuilds) {
  Registry registry;
  ASSERT_TRUE(
      registry.Add(ProbeSpec("m"), MakeModel<ScalerProbe>(), "f", 1).ok());
  const RegisteredModel& entry = *registry.Find("m");
  const ModelConfig train = ProbeConfig(Mode::kTrain, Precision::kFp32);
  InstanceCache cache;
  cache.set_weights_file(WriteOneTensor("weights_ok.safetensors", "w", {5, 7}));
  Instance& loaded = cache.Acquire(entry, train, /*warmup_steps=*/0);
  EXPECT_TRUE(torch::equal(loaded.model().module().named_parameters()["w"],
                           torch::tensor({5.0f, 7.0f})));

  cache.set_weights_file(
      WriteOneTensor("weights_bad.safetensors", "v", {5, 7}));
  EXPECT_FALSE(cache.has_instance());  // another file: built again
  try {
    cache.Acquire(entry, train, /*warmup_steps=*/0);
    FAIL() << "a file without the module's key loaded";
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("--torchbench_weights"), std::string::npos)
        << message;
    EXPECT_NE(message.find("missing keys"), std::string::npos) << message;
  }
  cache.set_weights_file("");
  Instance& own = cache.Acquire(entry, train, /*warmup_steps=*/0);
  EXPECT_TRUE(torch::equal(own.model().module().named_parameters()["w"],
                           torch::ones({2})));
}

// Python's module.half() re-flattens every RNN's weights for cuDNN; the
// harness's conversion must too (on the CPU flattening does nothing, so the
// count is what can be checked here).
TEST(InstanceTest, ConversionReflattensEveryRecurrentModule) {
  struct Net : torch::nn::Module {
    Net() {
      lstm = register_module("lstm", torch::nn::LSTM(4, 4));
      gru = register_module("gru", torch::nn::GRU(4, 4));
      inner = register_module(
          "inner",
          torch::nn::Sequential(torch::nn::Linear(4, 4), torch::nn::RNN(4, 4)));
    }
    torch::nn::LSTM lstm{nullptr};
    torch::nn::GRU gru{nullptr};
    torch::nn::Sequential inner{nullptr};
  };
  Net net;
  EXPECT_EQ(ConvertFloatingTensors(net, torch::kBFloat16), 3);
  EXPECT_EQ(net.lstm->all_weights().front().scalar_type(), torch::kBFloat16);
  const torch::Tensor out =
      std::get<0>(net.lstm->forward(torch::ones({2, 1, 4}, torch::kBFloat16)));
  EXPECT_EQ(out.scalar_type(), torch::kBFloat16);
}

}  // namespace
}  // namespace torchbench
