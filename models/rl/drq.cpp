// TorchBench's drq (torchbenchmark/models/drq at 43ca0857: __init__.py,
// config.py, drq.py, replay_buffer.py, utils.py), its own copy of
// denisyarats/drq: SAC from pixels with a shared conv encoder and random-
// shift augmentation of the replay batch.
//
// The reference runs a MockEnv whose every observation is one fixed uint8
// frame stack (obs.pkl, 9x84x84, overwritten by
// np.random.randint(11, 228)), wrapped in FrameStack(k=3): the agent sees
// 27x84x84, every reward is 0 and no episode ends. The observation here is
// randint(11, 228) of that shape from LibTorch's generator (the reference's
// comes from numpy's).
//
// One Train call is the reference's train(): one env step of a fresh
// episode. Call 0 (num_seed_steps 1) takes a random action
// (action_space.sample(): uniform on [-1, 1], here from LibTorch's
// generator, gym's own in the reference) and does no update; every later
// call n acts with a sampled action and runs one DRQAgent.update(step=n):
// the critic update on a replay batch of 128, the actor and alpha updates
// and the critic target's soft update when n is even. Then the transition is
// pushed into the replay buffer. The harness's warm-up calls are calls too,
// as TorchBench's are. A Train step returns the critic loss (the reference
// returns nothing), 0 on call 0.
//
// One Eval call is the reference's eval(): the deterministic action
// tanh(mu) of one observation, brought back to the host.
//
// Where the port differs from the reference:
// - The replay buffer stores each transition's observation tensors as
//   they come (capacity 100000, a ring like the reference's) instead of
//   preallocating np.empty((100000, 27, 84, 84)) twice (38 GB of address
//   space that the reference never touches beyond its first rows).
// - Replay indices, the seed action and the mock frames come from
//   LibTorch's generator (numpy's and gym's in the reference).
// - kornia.augmentation.RandomCrop((84, 84)) draws one offset per sample
//   (uniform over the 9 x 9 positions of the 92x92 padded image) and cuts
//   each sample's window; the reference leaves kornia unpinned, the port
//   follows 0.6.9 (tools/requirements.txt): one slice copy per sample. Its
//   offsets stay on the host; kornia moves them to the device and reads
//   them back per sample, a sync per window on a GPU that the port skips.
// - Under ModelConfig::small_inputs (CPU tests only) the replay batch is 16.
#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/functional/padding.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rl/sac_blocks.h"
#include "torchbench/amp.h"
#include "torchbench/checks.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/model.h"
#include "torchbench/optim.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace drq_model {
namespace {

namespace F = torch::nn::functional;
using rl::SquashedNormal;

// DRQConfig (config.py) and the MockEnv / FrameStack shapes.
constexpr uint64_t kConfigSeed = 1;   // set_seed_everywhere(cfg.seed)
constexpr int64_t kObsChannels = 27;  // 9-channel mock frames, stacked 3x
constexpr int64_t kImageSize = 84;
constexpr int64_t kImagePad = 4;
constexpr int64_t kNumFilters = 32;
constexpr int64_t kConvOutputSize = 35;  // Encoder.output_dim
constexpr int64_t kFeatureDim = 50;
constexpr int64_t kHiddenDim = 1024;
constexpr int64_t kActionDim = 1;
constexpr double kLogStdMin = -10.0;
constexpr double kLogStdMax = 2.0;
constexpr double kLr = 1e-3;
constexpr double kDiscount = 0.99;
constexpr double kInitTemperature = 0.1;
constexpr double kCriticTau = 0.01;
constexpr int64_t kActorUpdateFrequency = 2;
constexpr int64_t kCriticTargetUpdateFrequency = 2;
constexpr int64_t kNumSeedSteps = 1;
constexpr int64_t kReplayBatch = 128;
constexpr int64_t kSmallReplayBatch = 16;
constexpr int64_t kReplayCapacity = 100000;
// -action_shape[0], a Python int.
constexpr double kTargetEntropy = -static_cast<double>(kActionDim);
// The golden check's replay batch (tools/golden/adapters/drq.py).
constexpr int64_t kGoldenBatch = 4;

// utils.weight_init for a conv layer: orthogonal with ReLU's gain.
void ConvInit(torch::nn::Conv2d& conv) {
  rl::OrthogonalInit(conv->weight, conv->bias, std::sqrt(2.0));
}

// utils.mlp(input, 1024, output, hidden_depth 2) with weight_init applied:
// Linear, ReLU(inplace), Linear, ReLU(inplace), Linear.
torch::nn::Sequential Mlp(int64_t input_dim, int64_t output_dim) {
  torch::nn::Sequential mlp(
      torch::nn::Linear(input_dim, kHiddenDim),
      torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true)),
      torch::nn::Linear(kHiddenDim, kHiddenDim),
      torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true)),
      torch::nn::Linear(kHiddenDim, output_dim));
  return mlp;
}

// Module.apply(weight_init) on an MLP: every Linear, in order.
void MlpInit(torch::nn::Sequential& mlp) {
  for (const auto& child : mlp->children()) {
    if (auto* linear = child->as<torch::nn::Linear>()) {
      rl::OrthogonalInit(linear->weight, linear->bias);
    }
  }
}

// drq.py Encoder. The actor's encoder uses the critic's conv layers
// (copy_conv_weights_from ties them): those are registered once, under the
// critic, as Python's parameters() yields a tied tensor once.
class EncoderImpl : public torch::nn::Module {
 public:
  explicit EncoderImpl(bool owns_convs) {
    for (int64_t i = 0; i < 4; ++i) {
      convs_.push_back(torch::nn::Conv2d(
          torch::nn::Conv2dOptions(i == 0 ? kObsChannels : kNumFilters,
                                   kNumFilters, 3)
              .stride(i == 0 ? 2 : 1)));
    }
    if (owns_convs) {
      torch::nn::ModuleList list;
      for (auto& conv : convs_) list->push_back(conv);
      register_module("convs", list);
    }
    head = register_module(
        "head",
        torch::nn::Sequential(
            torch::nn::Linear(kNumFilters * kConvOutputSize * kConvOutputSize,
                              kFeatureDim),
            torch::nn::LayerNorm(torch::nn::LayerNormOptions({kFeatureDim}))));
  }

  // utils.tie_weights for every conv layer.
  void UseConvsOf(const EncoderImpl& source) { convs_ = source.convs_; }

  std::vector<torch::Tensor> ConvParameters() const {
    std::vector<torch::Tensor> out;
    for (const auto& conv : convs_) {
      out.push_back(conv->weight);
      out.push_back(conv->bias);
    }
    return out;
  }

  // weight_init on this encoder's layers (convs, then head.0), as
  // Module.apply visits them.
  void Init() {
    for (auto& conv : convs_) ConvInit(conv);
    auto linear = head->ptr(0)->as<torch::nn::Linear>();
    rl::OrthogonalInit(linear->weight, linear->bias);
  }

  torch::Tensor forward(const torch::Tensor& obs, bool detach) {
    torch::Tensor h = obs / 255.;
    for (auto& conv : convs_) h = torch::relu(conv->forward(h));
    h = h.view({h.size(0), -1});
    if (detach) h = h.detach();
    return torch::tanh(head->forward(h));
  }

  torch::nn::Sequential head{nullptr};

 private:
  std::vector<torch::nn::Conv2d> convs_;
};
TORCH_MODULE(Encoder);

// drq.py Actor: the encoder, then a trunk giving mu and log_std.
class ActorImpl : public torch::nn::Module {
 public:
  ActorImpl()
      : encoder(register_module("encoder", Encoder(/*owns_convs=*/false))),
        trunk(register_module("trunk", Mlp(kFeatureDim, 2 * kActionDim))) {
    encoder->Init();
    MlpInit(trunk);
  }

  SquashedNormal forward(const torch::Tensor& obs, bool detach_encoder) {
    std::vector<torch::Tensor> halves =
        trunk->forward(encoder->forward(obs, detach_encoder)).chunk(2, -1);
    torch::Tensor log_std = torch::tanh(halves[1]);
    log_std = kLogStdMin + 0.5 * (kLogStdMax - kLogStdMin) * (log_std + 1);
    return SquashedNormal(halves[0], log_std.exp());
  }

  Encoder encoder;
  torch::nn::Sequential trunk;
};
TORCH_MODULE(Actor);

// drq.py Critic: double Q on the encoded observation and the action.
class CriticImpl : public torch::nn::Module {
 public:
  CriticImpl()
      : encoder(register_module("encoder", Encoder(/*owns_convs=*/true))),
        q1(register_module("Q1", Mlp(kFeatureDim + kActionDim, 1))),
        q2(register_module("Q2", Mlp(kFeatureDim + kActionDim, 1))) {
    encoder->Init();
    MlpInit(q1);
    MlpInit(q2);
  }

  std::pair<torch::Tensor, torch::Tensor> forward(const torch::Tensor& obs,
                                                  const torch::Tensor& action,
                                                  bool detach_encoder) {
    torch::Tensor obs_action =
        torch::cat({encoder->forward(obs, detach_encoder), action}, -1);
    return {q1->forward(obs_action), q2->forward(obs_action)};
  }

  Encoder encoder;
  torch::nn::Sequential q1, q2;
};
TORCH_MODULE(Critic);

// What DRQAgent holds: actor, critic, critic_target and log_alpha (a bare
// float64 0-dim leaf in Python, torch.tensor(np.log(0.1))).
class DrqNetsImpl : public torch::nn::Module {
 public:
  DrqNetsImpl() {
    // DRQAgent.__init__'s order: actor, critic, critic_target, each with
    // its default init and then weight_init.
    actor = register_module("actor", Actor());
    critic = register_module("critic", Critic());
    critic_target = register_module("critic_target", Critic());
    {
      torch::NoGradGuard no_grad;  // load_state_dict(critic.state_dict())
      std::vector<torch::Tensor> source = critic->parameters();
      std::vector<torch::Tensor> target = critic_target->parameters();
      for (size_t i = 0; i < source.size(); ++i) target[i].copy_(source[i]);
    }
    actor->encoder->UseConvsOf(*critic->encoder);
    log_alpha = register_parameter(
        "log_alpha",
        torch::full({}, std::log(kInitTemperature), torch::kDouble));
  }

  Actor actor{nullptr};
  Critic critic{nullptr};
  Critic critic_target{nullptr};
  torch::Tensor log_alpha;
};
TORCH_MODULE(DrqNets);

// ReplayBuffer.sample's result, on the device, augmented.
struct ReplayBatch {
  torch::Tensor obs, action, reward, next_obs, not_done, obs_aug, next_obs_aug;
};

// nn.Sequential(ReplicationPad2d(4), kornia RandomCrop((84, 84))) on a
// batch: one random window per sample, cut with one slice copy per sample
// as kornia 0.6.9's crop_by_indices does. One advanced-indexing gather over
// all windows computes the same values but took about three times as long
// on a CPU (the index kernel's per-element offsets, then a permute copy),
// which made the C++ Train step 7 % slower than the reference's.
torch::Tensor Augment(const torch::Tensor& obs) {
  const int64_t batch = obs.size(0);
  torch::Tensor padded = F::pad(
      obs, F::PadFuncOptions({kImagePad, kImagePad, kImagePad, kImagePad})
               .mode(torch::kReplicate));
  // Drawn on the host, so cutting a device batch never waits on the device.
  torch::Tensor offsets =
      torch::randint(0, 2 * kImagePad + 1, {2, batch}, torch::kLong);
  const int64_t* rows = offsets.data_ptr<int64_t>();
  const int64_t* cols = rows + batch;
  torch::Tensor out = torch::empty({batch, obs.size(1), kImageSize, kImageSize},
                                   padded.options());
  for (int64_t i = 0; i < batch; ++i) {
    out[i].copy_(padded[i]
                     .narrow(1, rows[i], kImageSize)
                     .narrow(2, cols[i], kImageSize));
  }
  return out;
}

// replay_buffer.py ReplayBuffer: host storage (uint8 observations), sampled
// indices gathered on the host and copied to the device, as the reference
// does with numpy arrays and torch.as_tensor(..., device).
class ReplayBuffer {
 public:
  void Add(const torch::Tensor& obs, const torch::Tensor& action, float reward,
           const torch::Tensor& next_obs, float not_done,
           float not_done_no_max) {
    Transition t{obs, action, reward, next_obs, not_done, not_done_no_max};
    if (static_cast<int64_t>(storage_.size()) < kReplayCapacity) {
      storage_.push_back(std::move(t));
    } else {
      storage_[next_] = std::move(t);
    }
    next_ = (next_ + 1) % kReplayCapacity;
  }

  ReplayBatch Sample(int64_t batch_size, const torch::Device& device,
                     torch::ScalarType dtype) const {
    torch::Tensor idxs = torch::randint(static_cast<int64_t>(storage_.size()),
                                        {batch_size}, torch::kLong);
    std::vector<torch::Tensor> obses, next_obses, actions;
    std::vector<float> rewards, not_dones_no_max;
    const int64_t* idx = idxs.data_ptr<int64_t>();
    for (int64_t i = 0; i < batch_size; ++i) {
      const Transition& t = storage_[idx[i]];
      obses.push_back(t.obs);
      next_obses.push_back(t.next_obs);
      actions.push_back(t.action);
      rewards.push_back(t.reward);
      not_dones_no_max.push_back(t.not_done_no_max);
    }
    torch::Tensor obs = torch::stack(obses);
    torch::Tensor next_obs = torch::stack(next_obses);
    auto to_device = [&](const torch::Tensor& host) {
      return host.to(device).to(dtype);
    };
    ReplayBatch batch;
    // Four uint8 copies to the device (the reference's obses, next_obses
    // and their _aug copies), each augmented on its own.
    batch.obs = Augment(to_device(obs));
    batch.next_obs = Augment(to_device(next_obs));
    batch.obs_aug = Augment(to_device(obs));
    batch.next_obs_aug = Augment(to_device(next_obs));
    batch.action = to_device(torch::stack(actions));
    batch.reward = to_device(torch::tensor(rewards).view({batch_size, 1}));
    batch.not_done =
        to_device(torch::tensor(not_dones_no_max).view({batch_size, 1}));
    return batch;
  }

 private:
  struct Transition {
    torch::Tensor obs;
    torch::Tensor action;
    float reward;
    torch::Tensor next_obs;
    float not_done;
    float not_done_no_max;
  };
  std::vector<Transition> storage_;
  int64_t next_ = 0;
};

class Drq final : public Model, public GoldenCheck {
 public:
  explicit Drq(const ModelConfig& config)
      : mode_(config.mode),
        device_(config.device),
        dtype_(config.dtype()),
        replay_batch_(config.small_inputs ? kSmallReplayBatch : kReplayBatch) {
    // Model.__init__ seeds everything with cfg.seed before building.
    torch::manual_seed(kConfigSeed);
    nets_ = DrqNets();
    obs_ = torch::randint(11, 228, {kObsChannels, kImageSize, kImageSize},
                          torch::kUInt8);
    nets_->to(device_);
    if (mode_ == Mode::kTrain) {
      std::vector<torch::Tensor> actor_params =
          nets_->actor->encoder->ConvParameters();
      for (const auto& p : nets_->actor->parameters())
        actor_params.push_back(p);
      actor_optimizer_ = std::make_unique<optim::Adam>(
          actor_params, optim::AdamOptions{.lr = kLr}, config.optimizer);
      critic_optimizer_ = std::make_unique<optim::Adam>(
          nets_->critic->parameters(), optim::AdamOptions{.lr = kLr},
          config.optimizer);
      log_alpha_optimizer_ = std::make_unique<optim::Adam>(
          std::vector<torch::Tensor>{nets_->log_alpha},
          optim::AdamOptions{.lr = kLr}, config.optimizer);
    }
  }

  torch::Tensor Step() override {
    return mode_ == Mode::kTrain ? TrainStep() : EvalStep();
  }

  torch::nn::Module& module() override { return *nets_; }

  // The eval action and one update(step=2) (critic, actor and alpha updates,
  // soft update) on a filled replay batch with filled rsample() noise, in
  // float64, as tools/golden/adapters/drq.py runs the reference's.
  std::map<std::string, torch::Tensor> GoldenOutputs() override;

 private:
  struct Hooks {
    torch::Tensor eps_next, eps_next_aug, eps_actor;
    std::map<std::string, torch::Tensor>* record = nullptr;
  };

  torch::Tensor TrainStep() {
    torch::Tensor action;
    if (step_ < kNumSeedSteps) {
      action = torch::rand({kActionDim}) * 2 - 1;  // action_space.sample()
    } else {
      action = Act(/*sample=*/true);
    }
    torch::Tensor loss = torch::zeros({});
    if (step_ >= kNumSeedSteps) {
      loss = Update(buffer_.Sample(replay_batch_, device_, dtype_), step_, {});
    } else {
      StepHasNoBackward();
    }
    // MockEnv.step: the same observation, reward 0, not done; with
    // episode_step 0, done_no_max = done = 0.
    buffer_.Add(obs_, action, 0.0f, obs_, 1.0f, 1.0f);
    ++step_;
    return loss;
  }

  torch::Tensor EvalStep() { return Act(/*sample=*/false); }

  // DRQAgent.act: the observation as float on the device, the squashed
  // mean or a sample, clamped, back on the host (utils.to_np).
  torch::Tensor Act(bool sample) {
    torch::Tensor obs = obs_.to(torch::kFloat).to(device_, dtype_).unsqueeze(0);
    SquashedNormal dist = nets_->actor->forward(obs, /*detach_encoder=*/false);
    torch::Tensor action = sample ? dist.Sample() : dist.Mean();
    return action.clamp(-1.0, 1.0).cpu()[0];
  }

  // DRQAgent.update: update_critic, then update_actor_and_alpha and the
  // critic target's soft update on even steps. Returns the critic loss.
  torch::Tensor Update(const ReplayBatch& b, int64_t step, const Hooks& hooks) {
    torch::Tensor critic_loss = UpdateCritic(b, hooks);
    if (step % kActorUpdateFrequency == 0) UpdateActorAndAlpha(b.obs, hooks);
    if (step % kCriticTargetUpdateFrequency == 0) {
      rl::SoftUpdate(*nets_->critic_target, *nets_->critic, kCriticTau);
    }
    return critic_loss;
  }

  // One target: reward + not_done * discount * (min Q' - alpha * log_prob)
  // of a fresh action at `next_obs`.
  torch::Tensor TargetQ(const ReplayBatch& b, const torch::Tensor& next_obs,
                        const torch::Tensor& eps) {
    SquashedNormal dist = nets_->actor->forward(next_obs, false);
    SquashedNormal::Draw next_action = dist.RSample(eps);
    torch::Tensor log_prob = dist.LogProb(next_action).sum(-1, true);
    auto [q1, q2] =
        nets_->critic_target->forward(next_obs, next_action.action, false);
    torch::Tensor target_v =
        torch::min(q1, q2) - nets_->log_alpha.exp().detach() * log_prob;
    return b.reward + (b.not_done * kDiscount * target_v);
  }

  torch::Tensor UpdateCritic(const ReplayBatch& b, const Hooks& hooks) {
    torch::Tensor target_q;
    {
      torch::NoGradGuard no_grad;
      target_q = (TargetQ(b, b.next_obs, hooks.eps_next) +
                  TargetQ(b, b.next_obs_aug, hooks.eps_next_aug)) /
                 2;
    }
    auto [q1, q2] = nets_->critic->forward(b.obs, b.action, false);
    torch::Tensor critic_loss =
        F::mse_loss(q1, target_q) + F::mse_loss(q2, target_q);
    auto [q1_aug, q2_aug] = nets_->critic->forward(b.obs_aug, b.action, false);
    critic_loss = critic_loss + F::mse_loss(q1_aug, target_q) +
                  F::mse_loss(q2_aug, target_q);
    critic_optimizer_->ZeroGrad();
    Backward(critic_loss);
    if (hooks.record != nullptr) {
      (*hooks.record)["critic_loss"] = critic_loss.detach().clone();
      RecordGrads(
          {"critic.encoder.convs.0.weight", "critic.encoder.head.0.weight",
           "critic.Q1.0.weight", "critic.Q2.4.bias"},
          hooks.record);
    }
    critic_optimizer_->Step();
    return critic_loss.detach();
  }

  void UpdateActorAndAlpha(const torch::Tensor& obs, const Hooks& hooks) {
    SquashedNormal dist = nets_->actor->forward(obs, /*detach_encoder=*/true);
    SquashedNormal::Draw action = dist.RSample(hooks.eps_actor);
    torch::Tensor log_prob = dist.LogProb(action).sum(-1, true);
    auto [q1, q2] = nets_->critic->forward(obs, action.action, true);
    torch::Tensor alpha = nets_->log_alpha.exp();
    torch::Tensor actor_loss =
        (alpha.detach() * log_prob - torch::min(q1, q2)).mean();
    actor_optimizer_->ZeroGrad();
    Backward(actor_loss);
    if (hooks.record != nullptr) {
      (*hooks.record)["actor_loss"] = actor_loss.detach().clone();
      RecordGrads({"actor.encoder.head.0.weight", "actor.trunk.0.weight",
                   "actor.trunk.4.bias"},
                  hooks.record);
    }
    actor_optimizer_->Step();

    log_alpha_optimizer_->ZeroGrad();
    torch::Tensor alpha_loss =
        (alpha * (-log_prob - kTargetEntropy).detach()).mean();
    Backward(alpha_loss);
    if (hooks.record != nullptr) {
      (*hooks.record)["grad:log_alpha"] = nets_->log_alpha.grad().clone();
    }
    log_alpha_optimizer_->Step();
  }

  void RecordGrads(const std::vector<std::string>& names,
                   std::map<std::string, torch::Tensor>* record) {
    auto named = nets_->named_parameters();
    for (const std::string& name : names) {
      (*record)["grad:" + name] = named[name].grad().clone();
    }
  }

  Mode mode_;
  torch::Device device_;
  torch::ScalarType dtype_;
  int64_t replay_batch_;
  DrqNets nets_{nullptr};
  torch::Tensor obs_;  // the frame stack every reset and step returns
  ReplayBuffer buffer_;
  int64_t step_ = 0;
  std::unique_ptr<optim::Adam> actor_optimizer_;
  std::unique_ptr<optim::Adam> critic_optimizer_;
  std::unique_ptr<optim::Adam> log_alpha_optimizer_;
};

std::map<std::string, torch::Tensor> Drq::GoldenOutputs() {
  nets_->to(torch::kDouble);
  dtype_ = torch::kDouble;
  auto filled = [](const char* name, std::vector<int64_t> shape,
                   double offset = 0.0, double scale = 1.0) {
    return DeterministicTensor(name, shape, torch::kFloat, offset, scale)
        .to(torch::kDouble);
  };
  const int64_t b = kGoldenBatch;
  const std::vector<int64_t> image = {b, kObsChannels, kImageSize, kImageSize};
  ReplayBatch batch{
      filled("obs", image, 127.5, 127.5),
      filled("action", {b, kActionDim}),
      filled("reward", {b, 1}),
      filled("next_obs", image, 127.5, 127.5),
      DeterministicIntegers("not_done", {b, 1}, 0, 2).to(torch::kDouble),
      filled("obs_aug", image, 127.5, 127.5),
      filled("next_obs_aug", image, 127.5, 127.5)};
  std::map<std::string, torch::Tensor> out;
  {
    torch::NoGradGuard no_grad;
    torch::Tensor eval_obs = filled(
        "eval_obs", {1, kObsChannels, kImageSize, kImageSize}, 127.5, 127.5);
    out["eval_action"] =
        nets_->actor->forward(eval_obs, false).Mean().clamp(-1.0, 1.0);
  }
  Hooks hooks{filled("noise.next", {b, kActionDim}),
              filled("noise.next_aug", {b, kActionDim}),
              filled("noise.actor", {b, kActionDim}), &out};
  Update(batch, /*step=*/2, hooks);
  auto named = nets_->named_parameters();
  for (const char* name :
       {"actor.trunk.4.weight", "actor.encoder.head.1.weight",
        "critic.encoder.convs.0.weight", "critic.Q1.0.weight",
        "critic_target.encoder.convs.3.bias", "critic_target.Q2.4.weight",
        "log_alpha"}) {
    out[std::string("after_update:") + name] = named[name].detach().clone();
  }
  return out;
}

}  // namespace

// Counts: sum(p.numel() ...) over a Python root holding DRQAgent's actor,
// critic and critic_target from drq.py, obs (27, 84, 84), action (1,) (pinned
// torch): 3099576 + 4203448 + 4203448 - 35552 (the tied convs, yielded
// once) = 11470920, plus log_alpha 1.
TORCHBENCH_REGISTER_MODEL(
    ModelSpec(
        {.name = "drq",
         .domain = "rl",
         .task = "reinforcement learning (continuous control from pixels)",
         .reference = "TorchBench drq (DrQ SAC, mock cartpole_swingup frames)",
         .train_batch_size = 1,     // DEFAULT_TRAIN_BSIZE
         .eval_batch_size = 1,      // DEFAULT_EVAL_BSIZE
         .fixed_batch_size = true,  // ALLOW_CUSTOMIZE_BSIZE = False
         .reference_parameters = 11470921,
         .reference_buffers = 0,  // Conv, Linear and LayerNorm only.
         .checks = {.golden_file = "drq.golden", .test_batch_size = 1}}),
    MakeModel<Drq>());

}  // namespace drq_model
}  // namespace torchbench
