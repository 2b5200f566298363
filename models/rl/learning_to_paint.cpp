// TorchBench's LearningToPaint (torchbenchmark/models/LearningToPaint at
// 43ca0857: __init__.py, baseline/DRL/{ddpg,actor,critic,evaluator,multi,
// rpm}.py, baseline/env.py, baseline/Renderer/model.py,
// baseline/utils/util.py): the DDPG painting agent of Huang et al., ICCV
// 2019. The actor is a ResNet-18 (9 input planes: canvas, target, step
// number, two coordinate planes; 65 outputs: 5 strokes of 13 numbers), the
// critic a ResNet-18 without batch norm (weight-normalised convs, TReLU), the
// neural renderer an FCN (random init: TorchBench does not load
// renderer.pkl), the environment a batched canvas (fastenv / Paint).
//
// One Train call is TorchBench's train() at this commit. It sets
// `episode_steps = 0` and then `+= 1` on every call, so `episode_steps >=
// max_step` (40) never holds and the update branch (update_policy, the WGAN
// discriminator update, the soft target updates) is unreachable. What runs is:
// the actor's action on the current observation (select_action: eval mode,
// no grad, noise_factor 0, the action brought to the host), one environment
// step (the renderer paints the 5 strokes, the canvas is stored as uint8,
// the reward is Paint.cal_reward, the L2-distance gain) and observe(): the
// batch's transitions (host copies) pushed into the replay memory (a ring of
// rmsize * max_step = 32000 entries, as rpm's). The episode never resets, so
// the step counter keeps growing; the observation's step plane is uint8
// (torch.ones(uint8) * stepnum wraps modulo 256, as here). The memory holds
// two host copies of a 7x128x128 uint8 observation per entry: 7.3 GB when
// full (after 334 Train calls at batch 96), as the reference's. No parameter
// ever changes (checks.train_may_not_update). A Train step returns the
// step's reward (host, float32, one per canvas).
//
// One Eval call is TorchBench's eval(): the reference's Evaluator, 5
// validation episodes, each an env reset on the test images (image
// (i + episode * batch) % 2001 of the loaded list) and 40 actor + env steps.
// It returns the last episode's summed reward and final L2 distance, stacked
// as a [2, batch] tensor (the reference returns the two as a tuple, float64
// and float32, whatever the model's precision, as both come from uint8
// canvases; the harness's tests want Eval's output in config.dtype(), so the
// stacked pair is converted to it at the end, except under fp16, where it
// stays float32: with the black targets below, ini_dis is 0 and every reward
// is a distance divided by 1e-8, beyond fp16's range).
//
// Data: the reference's own synthetic images, torch.rand(2000, 3, 128, 128),
// here from LibTorch's generator, kept on the host like the reference's list;
// a reset copies the batch's images to the device one by one, as
// Paint.reset does.
// Paint.load_data files image i % 2000 for i < 200000 as a test image when
// i <= 2000, else as a training image. Copying these [0, 1) floats into the
// uint8 target canvas truncates them to 0, as the reference does, so every
// target is black. The training reset draws each canvas's image with
// LibTorch's generator (np.random.randint in the reference); that reset runs
// only in the constructor.
//
// Counts: everything the reference Model holds through its agent and env:
// actor, actor_target, critic, critic_target and the Decoder (FCN). The WGAN
// discriminators (wgan.py's netD / target_netD) are module globals of wgan.py,
// used only by update_policy, which never runs at this commit. They are not
// held by the Model, not counted and not ported.
//
// Where the port differs from the reference:
// - hard_update makes actor_target share the actor's batch-norm buffers
//   (m1._buffers = m2._buffers.copy()). Here they are copies. No code that
//   runs at this commit reads the target networks.
// - DDPG.update_policy, the WGAN (wgan.py) and the Evaluator's image writer
//   (writer=None in TorchBench) are not ported: none of them runs.
// - Under ModelConfig::small_inputs (CPU smoke and precision tests only) Eval
//   runs 1 validation episode instead of 5 (40 steps each, the same code):
//   the canvas is fixed at 128x128 by the renderer, so no size can shrink.
#include <torch/nn/functional/pixelshuffle.h>
#include <torch/nn/functional/pooling.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "torchbench/amp.h"
#include "torchbench/checks.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace learning_to_paint_model {
namespace {

namespace F = torch::nn::functional;
using torch::indexing::Slice;

// Model.args and the renderer's fixed canvas.
constexpr int64_t kWidth = 128;
constexpr int64_t kMaxStep = 40;
constexpr int64_t kValidateEpisodes = 5;
constexpr int64_t kSmallValidateEpisodes = 1;  // ModelConfig::small_inputs
constexpr int64_t kReplayCapacity = 800 * kMaxStep;  // rmsize * max_step
constexpr int64_t kNumImages = 2000;
// Paint.load_data: i in [0, 200000), test when i <= 2000.
constexpr int64_t kTestNum = 2001;
constexpr int64_t kTrainNum = 200000 - kTestNum;
constexpr int64_t kStrokes = 5;
constexpr int64_t kStrokeParams = 13;  // 10 shape + 3 colour
constexpr int64_t kActionDim = kStrokes * kStrokeParams;
// The golden check's canvases and step number
// (tools/golden/adapters/LearningToPaint.py).
constexpr int64_t kGoldenStepnum = 3;

// nn.utils.weight_norm(nn.Conv2d(..., bias=True)): weight = g * v / |v|,
// the norm over every dimension but 0; g starts as |v| of the default init.
// Registered in Python's order: bias, weight_g, weight_v.
class WeightNormConvImpl : public torch::nn::Module {
 public:
  WeightNormConvImpl(int64_t in, int64_t out, int64_t kernel, int64_t stride,
                     int64_t padding)
      : stride_(stride), padding_(padding) {
    torch::nn::Conv2d conv(torch::nn::Conv2dOptions(in, out, kernel)
                               .stride(stride)
                               .padding(padding)
                               .bias(true));
    torch::Tensor v = conv->weight.detach().clone();
    bias = register_parameter("bias", conv->bias.detach().clone());
    weight_g = register_parameter(
        "weight_g", v.pow(2).sum({1, 2, 3}, /*keepdim=*/true).sqrt());
    weight_v = register_parameter("weight_v", v);
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor weight = torch::_weight_norm(weight_v, weight_g, 0);
    return torch::conv2d(x, weight, bias, stride_, padding_);
  }

  torch::Tensor bias, weight_g, weight_v;

 private:
  int64_t stride_, padding_;
};
TORCH_MODULE(WeightNormConv);

// critic.py TReLU: relu(x - alpha) + alpha, alpha starting at 0.
class TReLUImpl : public torch::nn::Module {
 public:
  TReLUImpl() : alpha(register_parameter("alpha", torch::zeros({1}))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    return torch::relu(x - alpha) + alpha;
  }
  torch::Tensor alpha;
};
TORCH_MODULE(TReLU);

torch::nn::Conv2d Conv3x3(int64_t in, int64_t out, int64_t stride) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 3)
                               .stride(stride)
                               .padding(1)
                               .bias(false));
}

// actor.py BasicBlock.
class BasicBlockImpl : public torch::nn::Module {
 public:
  BasicBlockImpl(int64_t in, int64_t planes, int64_t stride) {
    conv1 = register_module("conv1", Conv3x3(in, planes, stride));
    bn1 = register_module("bn1", torch::nn::BatchNorm2d(planes));
    conv2 = register_module("conv2", Conv3x3(planes, planes, 1));
    bn2 = register_module("bn2", torch::nn::BatchNorm2d(planes));
    shortcut = register_module("shortcut", torch::nn::Sequential());
    if (stride != 1 || in != planes) {
      shortcut->push_back(torch::nn::Conv2d(
          torch::nn::Conv2dOptions(in, planes, 1).stride(stride).bias(false)));
      shortcut->push_back(torch::nn::BatchNorm2d(planes));
    }
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor out = torch::relu(bn1->forward(conv1->forward(x)));
    out = bn2->forward(conv2->forward(out));
    out = out + (shortcut->is_empty() ? x : shortcut->forward(x));
    return torch::relu(out);
  }

  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr};
  torch::nn::Sequential shortcut{nullptr};
};
TORCH_MODULE(BasicBlock);

// critic.py BasicBlock: weight-normalised convs with bias, TReLU.
class BasicBlockWobnImpl : public torch::nn::Module {
 public:
  BasicBlockWobnImpl(int64_t in, int64_t planes, int64_t stride) {
    conv1 = register_module("conv1", WeightNormConv(in, planes, 3, stride, 1));
    conv2 = register_module("conv2", WeightNormConv(planes, planes, 3, 1, 1));
    shortcut = register_module("shortcut", torch::nn::Sequential());
    if (stride != 1 || in != planes) {
      shortcut->push_back(WeightNormConv(in, planes, 1, stride, 0));
    }
    relu_1 = register_module("relu_1", TReLU());
    relu_2 = register_module("relu_2", TReLU());
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor out = relu_1->forward(conv1->forward(x));
    out = conv2->forward(out);
    out = out + (shortcut->is_empty() ? x : shortcut->forward(x));
    return relu_2->forward(out);
  }

  WeightNormConv conv1{nullptr}, conv2{nullptr};
  torch::nn::Sequential shortcut{nullptr};
  TReLU relu_1{nullptr}, relu_2{nullptr};
};
TORCH_MODULE(BasicBlockWobn);

// actor.py ResNet(num_inputs, 18, num_outputs) (with_bn) and critic.py
// ResNet_wobn: conv1 (stride 2), four stages of two basic blocks (each
// stage's first stride 2), avg_pool2d(4), fc; the actor ends in a sigmoid.
class ResNetImpl : public torch::nn::Module {
 public:
  ResNetImpl(int64_t num_inputs, int64_t num_outputs, bool with_bn)
      : with_bn_(with_bn) {
    if (with_bn) {
      conv1_ = register_module("conv1", Conv3x3(num_inputs, 64, 2));
      bn1_ = register_module("bn1", torch::nn::BatchNorm2d(64));
    } else {
      wn_conv1_ =
          register_module("conv1", WeightNormConv(num_inputs, 64, 3, 2, 1));
    }
    int64_t in = 64;
    const int64_t planes[] = {64, 128, 256, 512};
    for (int64_t stage = 0; stage < 4; ++stage) {
      torch::nn::Sequential layer;
      for (int64_t block = 0; block < 2; ++block) {
        const int64_t stride = block == 0 ? 2 : 1;
        if (with_bn) {
          layer->push_back(BasicBlock(in, planes[stage], stride));
        } else {
          layer->push_back(BasicBlockWobn(in, planes[stage], stride));
        }
        in = planes[stage];
      }
      layers_.push_back(
          register_module("layer" + std::to_string(stage + 1), layer));
    }
    fc_ = register_module("fc", torch::nn::Linear(512, num_outputs));
    if (!with_bn) relu_1_ = register_module("relu_1", TReLU());
  }

  torch::Tensor forward(const torch::Tensor& input) {
    torch::Tensor x = with_bn_
                          ? torch::relu(bn1_->forward(conv1_->forward(input)))
                          : relu_1_->forward(wn_conv1_->forward(input));
    for (auto& layer : layers_) x = layer->forward(x);
    x = F::avg_pool2d(x, F::AvgPool2dFuncOptions(4));
    x = fc_->forward(x.view({x.size(0), -1}));
    return with_bn_ ? torch::sigmoid(x) : x;
  }

 private:
  bool with_bn_;
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr};
  WeightNormConv wn_conv1_{nullptr};
  TReLU relu_1_{nullptr};
  std::vector<torch::nn::Sequential> layers_;
  torch::nn::Linear fc_{nullptr};
};
TORCH_MODULE(ResNet);

// Renderer/model.py FCN: stroke parameters (10) to a 128x128 stroke map.
class FcnImpl : public torch::nn::Module {
 public:
  FcnImpl() {
    const int64_t fc_sizes[] = {10, 512, 1024, 2048, 4096};
    for (int64_t i = 0; i < 4; ++i) {
      fcs_.push_back(
          register_module("fc" + std::to_string(i + 1),
                          torch::nn::Linear(fc_sizes[i], fc_sizes[i + 1])));
    }
    const int64_t conv_sizes[][2] = {{16, 32}, {32, 32}, {8, 16},
                                     {16, 16}, {4, 8},   {8, 4}};
    for (int64_t i = 0; i < 6; ++i) {
      convs_.push_back(register_module(
          "conv" + std::to_string(i + 1),
          torch::nn::Conv2d(
              torch::nn::Conv2dOptions(conv_sizes[i][0], conv_sizes[i][1], 3)
                  .padding(1))));
    }
  }

  torch::Tensor forward(const torch::Tensor& input) {
    torch::Tensor x = input;
    for (auto& fc : fcs_) x = torch::relu(fc->forward(x));
    x = x.view({-1, 16, 16, 16});
    const auto shuffle = F::PixelShuffleFuncOptions(2);
    for (int64_t i = 0; i < 6; i += 2) {
      x = torch::relu(convs_[i]->forward(x));
      x = F::pixel_shuffle(convs_[i + 1]->forward(x), shuffle);
    }
    x = torch::sigmoid(x);
    return 1 - x.view({-1, kWidth, kWidth});
  }

 private:
  std::vector<torch::nn::Linear> fcs_;
  std::vector<torch::nn::Conv2d> convs_;
};
TORCH_MODULE(Fcn);

// What the reference Model holds: the DDPG's four networks and the Decoder.
class PaintNetsImpl : public torch::nn::Module {
 public:
  PaintNetsImpl() {
    // Model.__init__ builds the FCN before the DDPG's networks.
    decoder = Fcn();
    actor = register_module("actor", ResNet(9, kActionDim, true));
    actor_target = register_module("actor_target", ResNet(9, kActionDim, true));
    critic = register_module("critic", ResNet(3 + 9, 1, false));
    critic_target = register_module("critic_target", ResNet(3 + 9, 1, false));
    register_module("Decoder", decoder);
    HardUpdate(*actor_target, *actor);
    HardUpdate(*critic_target, *critic);
  }

  // util.py hard_update (buffers copied here, shared there).
  static void HardUpdate(torch::nn::Module& target,
                         const torch::nn::Module& source) {
    torch::NoGradGuard no_grad;
    auto copy = [](const std::vector<torch::Tensor>& to,
                   const std::vector<torch::Tensor>& from) {
      for (size_t i = 0; i < to.size(); ++i) to[i].copy_(from[i]);
    };
    copy(target.parameters(), source.parameters());
    copy(target.buffers(), source.buffers());
  }

  ResNet actor{nullptr}, actor_target{nullptr};
  ResNet critic{nullptr}, critic_target{nullptr};
  Fcn decoder{nullptr};
};
TORCH_MODULE(PaintNets);

// ddpg.py decode: paints the 5 strokes of each action onto `canvas`
// (float, [0, 1]).
torch::Tensor Decode(Fcn& decoder, const torch::Tensor& action,
                     torch::Tensor canvas) {
  torch::Tensor x = action.view({-1, kStrokeParams});
  torch::Tensor stroke = 1 - decoder->forward(x.index({Slice(), Slice(0, 10)}));
  stroke = stroke.view({-1, kWidth, kWidth, 1});
  torch::Tensor color_stroke =
      stroke *
      x.index({Slice(), Slice(-3, torch::indexing::None)}).view({-1, 1, 1, 3});
  stroke =
      stroke.permute({0, 3, 1, 2}).reshape({-1, kStrokes, 1, kWidth, kWidth});
  color_stroke = color_stroke.permute({0, 3, 1, 2})
                     .reshape({-1, kStrokes, 3, kWidth, kWidth});
  for (int64_t i = 0; i < kStrokes; ++i) {
    canvas = canvas * (1 - stroke.select(1, i)) + color_stroke.select(1, i);
  }
  return canvas;
}

// One rpm entry: a canvas's (state, action, reward, next state, done).
struct Transition {
  torch::Tensor state, action, reward, next_state, done;
};

// rpm.py: a list filled up to its capacity, then a ring.
class ReplayMemory {
 public:
  void Append(Transition t) {
    if (static_cast<int64_t>(buffer_.size()) < kReplayCapacity) {
      buffer_.push_back(std::move(t));
    } else {
      buffer_[index_] = std::move(t);
      index_ = (index_ + 1) % kReplayCapacity;
    }
  }
  const std::vector<Transition>& buffer() const { return buffer_; }

 private:
  std::vector<Transition> buffer_;
  int64_t index_ = 0;
};

// What env.step returns: observation (device, uint8), reward (host,
// float32), done.
struct EnvStepResult {
  torch::Tensor observation, reward;
  bool done = false;
};

class LearningToPaint final : public Model, public GoldenCheck {
 public:
  explicit LearningToPaint(const ModelConfig& config)
      : mode_(config.mode),
        batch_(config.batch_size),
        device_(config.device),
        dtype_(config.dtype()),
        validate_episodes_(config.small_inputs ? kSmallValidateEpisodes
                                               : kValidateEpisodes) {
    images_ = torch::rand({kNumImages, 3, kWidth, kWidth});
    nets_ = PaintNets();
    nets_->to(device_);
    // DDPG.coord: plane 0 holds i / 127 (row), plane 1 j / 127 (column),
    // computed in double and stored as float32, as the Python loop does.
    torch::Tensor ramp = torch::arange(kWidth, torch::kDouble) / 127.0;
    coord_ = torch::stack({ramp.view({kWidth, 1}).expand({kWidth, kWidth}),
                           ramp.view({1, kWidth}).expand({kWidth, kWidth})})
                 .unsqueeze(0)
                 .to(torch::kFloat)
                 .to(device_);
    // env.reset() and agent.reset(observation, noise_factor 0).
    observation_ = Reset(/*test=*/false, 0);
    state_ = observation_;
    SetAgentTraining(mode_ == Mode::kTrain);
  }

  torch::Tensor Step() override {
    torch::NoGradGuard no_grad;
    return mode_ == Mode::kTrain ? TrainStep() : EvalStep();
  }

  torch::nn::Module& module() override { return *nets_; }

  // The actor's action, the decoded canvas, one env step and what observe()
  // stores, on filled canvases, as tools/golden/adapters/LearningToPaint.py
  // runs the reference's.
  std::map<std::string, torch::Tensor> GoldenOutputs() override;

 private:
  // Model.train() at 43ca0857: episode_steps is 1, never max_step.
  torch::Tensor TrainStep() {
    StepHasNoBackward();
    torch::Tensor action = SelectAction(observation_);
    EnvStepResult result = EnvStep(action);
    observation_ = result.observation;
    Observe(result.reward, result.observation, result.done);
    return result.reward;
  }

  // Evaluator.__call__ with validate_episodes 5 and max_step 40.
  torch::Tensor EvalStep() {
    torch::Tensor episode_reward, dist;
    for (int64_t episode = 0; episode < validate_episodes_; ++episode) {
      torch::Tensor observation = Reset(/*test=*/true, episode * batch_);
      // np.zeros(env_batch) + float32 rewards: float64.
      episode_reward = torch::zeros({batch_}, torch::kDouble);
      for (int64_t step = 0; step < kMaxStep; ++step) {
        EnvStepResult result = EnvStep(SelectAction(observation));
        observation = result.observation;
        episode_reward += result.reward;
      }
      dist = GetDist();  // every episode's, as the Evaluator does
    }
    // In config.dtype(), except fp16: the rewards (~1e7 here) overflow it.
    return torch::stack({episode_reward, dist.to(torch::kDouble)})
        .to(dtype_ == torch::kHalf ? torch::kFloat : dtype_);
  }

  // DDPG.train() / eval(): the four networks' mode.
  void SetAgentTraining(bool on) {
    nets_->actor->train(on);
    nets_->actor_target->train(on);
    nets_->critic->train(on);
    nets_->critic_target->train(on);
  }

  // DDPG.play on the current actor.
  torch::Tensor Play(const torch::Tensor& state) {
    torch::Tensor input = torch::cat(
        {state.index({Slice(), Slice(0, 6)}).to(torch::kFloat) / 255,
         state.index({Slice(), Slice(6, 7)}).to(torch::kFloat) / kMaxStep,
         coord_.expand({state.size(0), 2, kWidth, kWidth})},
        1);
    return nets_->actor->forward(input.to(dtype_));
  }

  // DDPG.select_action (noise_factor 0): eval mode, no grad, the action on
  // the host (to_numpy), train mode again.
  torch::Tensor SelectAction(const torch::Tensor& state) {
    SetAgentTraining(false);
    torch::Tensor action;
    {
      torch::NoGradGuard no_grad;
      action = Play(state).to(torch::kCPU);
    }
    SetAgentTraining(true);
    action_ = action;
    return action;
  }

  // Paint.reset (through fastenv.reset).
  torch::Tensor Reset(bool test, int64_t begin_num) {
    test_ = test;
    torch::Tensor ids;
    if (test) {
      ids = (torch::arange(batch_) + begin_num) % kTestNum;
      ids = ids % kNumImages;  // img_test[id] is image id % 2000
    } else {
      ids = torch::randint(kTrainNum, {batch_}, torch::kLong);
      ids = (ids + kTestNum) % kNumImages;  // img_train[id]
    }
    // The target canvas is zeroed on the host and copied to the device, then
    // each image is cloned on the host, copied over on its own and stored
    // into its uint8 row ([0, 1) truncates to 0), as the reference's
    // self.gt[i] = img.clone().detach().to(device) does.
    gt_ = torch::zeros({batch_, 3, kWidth, kWidth}, torch::kUInt8).to(device_);
    const auto id = ids.accessor<int64_t, 1>();
    for (int64_t i = 0; i < batch_; ++i) {
      gt_[i].copy_(images_[id[i]].clone().to(device_));
    }
    tot_reward_ = (gt_.to(torch::kFloat) / 255).pow(2).mean(1).mean(1).mean(1);
    stepnum_ = 0;
    canvas_ =
        torch::zeros({batch_, 3, kWidth, kWidth}, torch::kUInt8).to(device_);
    lastdis_ = ini_dis_ = CalDis();
    return Observation();
  }

  // Paint.observation: canvas, target, and the step number as a uint8
  // plane made on the host.
  torch::Tensor Observation() {
    torch::Tensor t =
        torch::ones({batch_, 1, kWidth, kWidth}, torch::kUInt8) * stepnum_;
    return torch::cat({canvas_, gt_, t.to(device_)}, 1);
  }

  torch::Tensor CalDis() {
    return ((canvas_.to(torch::kFloat) - gt_.to(torch::kFloat)) / 255)
        .pow(2)
        .mean(1)
        .mean(1)
        .mean(1);
  }

  // fastenv.get_dist, on the host.
  torch::Tensor GetDist() {
    return ((gt_.to(torch::kFloat) - canvas_.to(torch::kFloat)) / 255)
        .pow(2)
        .mean(1)
        .mean(1)
        .mean(1)
        .to(torch::kCPU);
  }

  // fastenv.step -> Paint.step: the host action back on the device, painted
  // by the renderer; reward Paint.cal_reward, on the host.
  EnvStepResult EnvStep(const torch::Tensor& host_action) {
    torch::NoGradGuard no_grad;
    torch::Tensor action = host_action.to(device_);
    canvas_ =
        (Decode(nets_->decoder, action, canvas_.to(torch::kFloat) / 255) * 255)
            .to(torch::kUInt8);
    ++stepnum_;
    EnvStepResult result;
    result.observation = Observation();
    result.done = stepnum_ == kMaxStep;
    torch::Tensor dis = CalDis();
    result.reward = ((lastdis_ - dis) / (ini_dis_ + 1e-8)).to(torch::kCPU);
    lastdis_ = dis;
    if (result.done && !test_) dist_ = GetDist();  // fastenv's self.dist
    return result;
  }

  // DDPG.observe: host copies of the previous and new observations, the
  // action, reward and done as float32, one rpm entry per canvas.
  void Observe(const torch::Tensor& reward, const torch::Tensor& state,
               bool done) {
    torch::Tensor s0 = state_.to(torch::kCPU, /*non_blocking=*/false,
                                 /*copy=*/true);
    torch::Tensor a = action_.to(torch::kFloat, false, true);
    torch::Tensor r = reward.to(torch::kFloat, false, true);
    torch::Tensor s1 = state.to(torch::kCPU, false, true);
    torch::Tensor d = torch::full({batch_}, done ? 1.0f : 0.0f);
    for (int64_t i = 0; i < batch_; ++i) {
      memory_.Append({s0[i], a[i], r[i], s1[i], d[i]});
    }
    state_ = state;
  }

  Mode mode_;
  int64_t batch_;
  torch::Device device_;
  torch::ScalarType dtype_;
  int64_t validate_episodes_;
  PaintNets nets_{nullptr};
  torch::Tensor images_, coord_;
  // Paint's state.
  bool test_ = false;
  int64_t stepnum_ = 0;
  torch::Tensor gt_, canvas_, tot_reward_, lastdis_, ini_dis_, dist_;
  // Model.observation and the DDPG's state / action.
  torch::Tensor observation_, state_, action_;
  ReplayMemory memory_;
};

std::map<std::string, torch::Tensor> LearningToPaint::GoldenOutputs() {
  const std::vector<int64_t> image = {batch_, 3, kWidth, kWidth};
  canvas_ = DeterministicIntegers("canvas", image, 0, 256)
                .to(torch::kUInt8)
                .to(device_);
  gt_ =
      DeterministicIntegers("gt", image, 0, 256).to(torch::kUInt8).to(device_);
  stepnum_ = kGoldenStepnum;
  test_ = false;
  lastdis_ = ini_dis_ = CalDis();
  torch::Tensor observation = Observation();
  state_ = observation;
  std::map<std::string, torch::Tensor> out;
  torch::Tensor action = SelectAction(observation);
  out["action"] = action;
  {
    torch::NoGradGuard no_grad;
    out["decode"] = Decode(nets_->decoder, action.to(device_),
                           canvas_.to(torch::kFloat) / 255);
  }
  EnvStepResult result = EnvStep(action);
  out["env.observation"] = result.observation.to(torch::kFloat);
  out["env.reward"] = result.reward;
  Observe(result.reward, result.observation, result.done);
  std::vector<torch::Tensor> s0, a, r, s1, d;
  for (const Transition& t : memory_.buffer()) {
    s0.push_back(t.state);
    a.push_back(t.action);
    r.push_back(t.reward);
    s1.push_back(t.next_state);
    d.push_back(t.done);
  }
  // The constructor's memory is empty: every entry is this step's.
  out["memory.state"] = torch::stack(s0).to(torch::kFloat);
  out["memory.action"] = torch::stack(a);
  out["memory.reward"] = torch::stack(r);
  out["memory.next_state"] = torch::stack(s1).to(torch::kFloat);
  out["memory.done"] = torch::stack(d);
  return out;
}

}  // namespace

// Counts: the reference's DDPG(env_batch 2) and FCN() (pinned torch, cv2
// stubbed), parameters / buffers: actor and actor_target 11209857 / 9749
// each, critic and critic_target 11178770 / 0 each, Decoder 11040812 / 0.
TORCHBENCH_REGISTER_MODEL(
    ModelSpec(
        {.name = "LearningToPaint",
         .domain = "rl",
         .task = "reinforcement learning (stroke-based painting)",
         .reference = "TorchBench LearningToPaint (DDPG actor/critic "
                      "ResNet-18, FCN renderer, batched canvas env)",
         .train_batch_size = 96,  // DEFAULT_TRAIN_BSIZE
         .eval_batch_size = 96,   // DEFAULT_EVAL_BSIZE
         .reference_parameters = 55818066,
         .reference_buffers = 19498,
         // TorchBench's metadata.yaml (tests/golden/cudnn_flags.txt).
         .train_cudnn = {.benchmark = true},
         .eval_cudnn = {.benchmark = true},
         .checks =
             {.golden_file = "LearningToPaint.golden",
              .train_may_not_update =
                  "train() at 43ca0857 never reaches update_policy "
                  "(episode_steps is 1 on every call, max_step 40): a Train "
                  "call is actor inference, one env step and a replay push"}}),
    MakeModel<LearningToPaint>());

}  // namespace learning_to_paint_model
}  // namespace torchbench
