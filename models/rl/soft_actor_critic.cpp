// TorchBench's soft_actor_critic (torchbenchmark/models/soft_actor_critic at
// 43ca0857: __init__.py, sac.py, nets.py, replay.py, config.py): a SAC agent
// with a tanh-squashed Normal actor and two critics (1024-wide MLPs) on gym
// Pendulum-v1.
//
// One Train call is the reference's train() with niter = 1: reset the env,
// sample one action, take one env step, push it into the replay buffer, run
// learn_standard once (critic, actor and alpha updates) and soft-update the
// target critics. The loop counter is 0 on every call, so actor_delay (1)
// and target_delay (2) both fire every time. The buffer starts empty
// (nothing fills it in __init__), so call n samples 256 indices out of n
// stored transitions.
//
// One Eval call is the reference's eval(): a 10-step (max_episode_steps)
// episode on the test env with the deterministic action tanh(mu) of a
// single state, returning the last action as a host tensor of shape [1]. The
// batch size plays no part in it.
//
// Both steps sync with the host where the reference does: the env runs on
// the host, so every action goes back to it with .cpu() (sac.py
// process_act), and torch.distributions' default argument validation
// (validate_args = __debug__, on in the reference) checks each Normal's loc
// and scale and each log_prob's value with a bool(tensor.all()). The replay
// buffer lives in host memory as the reference's does: a push writes only
// host memory, and each sampled batch is gathered on the host and copied to
// the device as five tensors, one blocking copy each.
#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "rl/pendulum.h"
#include "rl/sac_blocks.h"
#include "torchbench/amp.h"
#include "torchbench/checks.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/golden.h"
#include "torchbench/model.h"
#include "torchbench/optim.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace soft_actor_critic_model {
namespace {

// SACConfig (config.py) and SACAgent defaults.
constexpr int64_t kObsDim = 3;         // Pendulum-v1 observation.
constexpr int64_t kActDim = 1;         // Pendulum-v1 action.
constexpr int64_t kHiddenSize = 1024;  // SACAgent hidden_size.
constexpr double kLogStdLow = -10.0;
constexpr double kLogStdHigh = 2.0;
constexpr double kGamma = 0.99;
constexpr double kTau = 0.005;
constexpr double kInitAlpha = 0.1;
constexpr double kLearningRate = 1e-4;  // actor_lr, critic_lr, alpha_lr.
constexpr int64_t kBufferSize = 1'000'000;
constexpr int kMaxEpisodeSteps = 10;
constexpr uint32_t kEnvSeed = 123;
// -action_space.shape[0]; a Python int in the reference.
constexpr int64_t kTargetEntropy = -kActDim;

using rl::SquashedNormal;

// nets.py weight_init: orthogonal weight (gain 1), zero bias.
void OrthogonalInit(torch::nn::Linear& linear) {
  rl::OrthogonalInit(linear->weight, linear->bias);
}

// nets.py StochasticActor with dist_impl "pyd".
class StochasticActorImpl : public torch::nn::Module {
 public:
  StochasticActorImpl(int64_t state_size, int64_t action_size,
                      int64_t hidden_size)
      : fc1_(
            register_module("fc1", torch::nn::Linear(state_size, hidden_size))),
        fc2_(register_module("fc2",
                             torch::nn::Linear(hidden_size, hidden_size))),
        fc3_(register_module("fc3",
                             torch::nn::Linear(hidden_size, 2 * action_size))) {
    // self.apply(weight_init) runs after every layer's default init.
    OrthogonalInit(fc1_);
    OrthogonalInit(fc2_);
    OrthogonalInit(fc3_);
  }

  SquashedNormal forward(const torch::Tensor& state) {
    torch::Tensor x = torch::relu(fc1_->forward(state));
    x = torch::relu(fc2_->forward(x));
    std::vector<torch::Tensor> halves = fc3_->forward(x).chunk(2, /*dim=*/1);
    // tanh squashes log_std into [log_std_low, log_std_high].
    torch::Tensor log_std = torch::tanh(halves[1]);
    log_std = kLogStdLow + 0.5 * (kLogStdHigh - kLogStdLow) * (log_std + 1);
    return SquashedNormal(halves[0], log_std.exp());
  }

 private:
  torch::nn::Linear fc1_, fc2_, fc3_;
};
TORCH_MODULE(StochasticActor);

// nets.py BigCritic: Q(s, a) from the concatenated state and action.
class BigCriticImpl : public torch::nn::Module {
 public:
  BigCriticImpl(int64_t state_size, int64_t action_size, int64_t hidden_size)
      : fc1_(register_module(
            "fc1", torch::nn::Linear(state_size + action_size, hidden_size))),
        fc2_(register_module("fc2",
                             torch::nn::Linear(hidden_size, hidden_size))),
        fc3_(register_module("fc3", torch::nn::Linear(hidden_size, 1))) {
    OrthogonalInit(fc1_);
    OrthogonalInit(fc2_);
    OrthogonalInit(fc3_);
  }

  torch::Tensor forward(const torch::Tensor& state,
                        const torch::Tensor& action) {
    torch::Tensor x =
        torch::relu(fc1_->forward(torch::cat({state, action}, /*dim=*/1)));
    x = torch::relu(fc2_->forward(x));
    return fc3_->forward(x);
  }

 private:
  torch::nn::Linear fc1_, fc2_, fc3_;
};
TORCH_MODULE(BigCritic);

// sac.py SACAgent: not an nn.Module in Python, but the holder of the three
// networks whose state_dicts it saves as actor / critic1 / critic2.
class SacAgentImpl : public torch::nn::Module {
 public:
  SacAgentImpl()
      : actor(register_module("actor",
                              StochasticActor(kObsDim, kActDim, kHiddenSize))),
        critic1(register_module("critic1",
                                BigCritic(kObsDim, kActDim, kHiddenSize))),
        critic2(register_module("critic2",
                                BigCritic(kObsDim, kActDim, kHiddenSize))) {}

  StochasticActor actor;
  BigCritic critic1;
  BigCritic critic2;
};
TORCH_MODULE(SacAgent);

// Everything the reference Model holds: agent, target_agent (a deepcopy of
// the agent, actor included, though only its critics are ever used) and
// log_alpha (a bare leaf tensor in Python, a parameter here).
class SacModulesImpl : public torch::nn::Module {
 public:
  SacModulesImpl() {
    agent = register_module("agent", SacAgent());
    // copy.deepcopy(agent) draws no random numbers; building the copy here
    // would, so the CPU generator is rewound to keep the stream Python's.
    auto generator = at::detail::getDefaultCPUGenerator();
    torch::Tensor rng_state;
    {
      std::lock_guard<std::mutex> lock(generator.mutex());
      rng_state = generator.get_state();
    }
    target_agent = register_module("target_agent", SacAgent());
    {
      std::lock_guard<std::mutex> lock(generator.mutex());
      generator.set_state(rng_state);
    }
    {
      torch::NoGradGuard no_grad;
      std::vector<torch::Tensor> source = agent->parameters();
      std::vector<torch::Tensor> target = target_agent->parameters();
      for (size_t i = 0; i < source.size(); ++i) target[i].copy_(source[i]);
    }
    log_alpha =
        register_parameter("log_alpha", torch::full({1}, std::log(kInitAlpha)));
  }

  SacAgent agent{nullptr};
  SacAgent target_agent{nullptr};
  torch::Tensor log_alpha;
};
TORCH_MODULE(SacModules);

// replay.py ReplayBuffer / ReplayBufferStorage for float states, in host
// memory as the reference keeps it: fp32 state, action, reward and next-state
// columns and an int32 done column.
class ReplayBuffer {
 public:
  explicit ReplayBuffer(int64_t size) : size_(size) {
    s_stack_ = torch::zeros({size, kObsDim}, torch::kFloat);
    action_stack_ = torch::zeros({size, kActDim}, torch::kFloat);
    reward_stack_ = torch::zeros({size, 1}, torch::kFloat);
    s1_stack_ = torch::zeros({size, kObsDim}, torch::kFloat);
    done_stack_ = torch::zeros({size, 1}, torch::kInt);
  }

  // ReplayBufferStorage.add for one transition: host writes only, as in the
  // reference (the env's transition never touches the device).
  void Push(const rl::Pendulum::Observation& state, float action, double reward,
            const rl::Pendulum::Observation& next_state, bool done) {
    std::copy(state.begin(), state.end(),
              s_stack_.data_ptr<float>() + next_idx_ * kObsDim);
    action_stack_.data_ptr<float>()[next_idx_] = action;
    // torch.Tensor([r]).float(): the Python float rounded to fp32.
    reward_stack_.data_ptr<float>()[next_idx_] = static_cast<float>(reward);
    std::copy(next_state.begin(), next_state.end(),
              s1_stack_.data_ptr<float>() + next_idx_ * kObsDim);
    done_stack_.data_ptr<int32_t>()[next_idx_] = done ? 1 : 0;
    max_filled_ = std::min(std::max(next_idx_ + 1, max_filled_), size_);
    next_idx_ = (next_idx_ + 1) % size_;
  }

  struct Batch {
    torch::Tensor state, action, reward, next_state, done;
  };

  // ReplayBuffer.sample and learn_standard's transfer: indices from
  // torch.randint on the CPU generator, the five columns gathered on the
  // host, then each copied to `device` on its own in learn_standard's order,
  // a blocking copy each as the reference's .to() is. Floating columns land
  // in `dtype` (the precision's; fp32 for fp32, where the copy is the
  // reference's exactly) in that same copy; done stays int32.
  Batch Sample(int64_t batch_size, const torch::Device& device,
               torch::ScalarType dtype) const {
    torch::Tensor idx = torch::randint(max_filled_, {batch_size}, torch::kLong);
    Batch host{s_stack_.index({idx}), action_stack_.index({idx}),
               reward_stack_.index({idx}), s1_stack_.index({idx}),
               done_stack_.index({idx})};
    Batch batch;
    batch.state = host.state.to(device, dtype);
    batch.next_state = host.next_state.to(device, dtype);
    batch.action = host.action.to(device, dtype);
    batch.reward = host.reward.to(device, dtype);
    batch.done = host.done.to(device);
    return batch;
  }

 private:
  int64_t size_;
  int64_t next_idx_ = 0;
  int64_t max_filled_ = 0;
  torch::Tensor s_stack_, action_stack_, reward_stack_, s1_stack_, done_stack_;
};

// utils.py soft_update: target <- (1 - tau) * target + tau * source.
void SoftUpdate(torch::nn::Module& target, torch::nn::Module& source) {
  rl::SoftUpdate(target, source, kTau);
}

class SoftActorCritic final : public Model, public GoldenCheck {
 public:
  explicit SoftActorCritic(const ModelConfig& config)
      : mode_(config.mode),
        device_(config.device),
        dtype_(config.dtype()),
        batch_size_(config.batch_size),
        train_env_(kEnvSeed),
        test_env_(kEnvSeed) {
    // Built on the host and then moved, as the reference does, so the
    // initial weights come from the CPU generator.
    nets_->to(device_);
    if (mode_ == Mode::kTrain) {
      SacAgent& agent = nets_->agent;
      std::vector<torch::Tensor> critic_params = agent->critic1->parameters();
      for (const auto& p : agent->critic2->parameters()) {
        critic_params.push_back(p);
      }
      const OptimizerPath path = config.optimizer;
      critic_optimizer_ = std::make_unique<optim::Adam>(
          critic_params, optim::AdamOptions{.lr = kLearningRate}, path);
      actor_optimizer_ = std::make_unique<optim::Adam>(
          agent->actor->parameters(), optim::AdamOptions{.lr = kLearningRate},
          path);
      log_alpha_optimizer_ = std::make_unique<optim::Adam>(
          std::vector<torch::Tensor>{nets_->log_alpha},
          optim::AdamOptions{.lr = kLearningRate, .beta1 = 0.5}, path);
      // The reference allocates the storage on its first push (inside the
      // first train() call); here it is made up front.
      buffer_ = std::make_unique<ReplayBuffer>(kBufferSize);
    }
  }

  torch::Tensor Step() override {
    return mode_ == Mode::kTrain ? TrainStep() : EvalStep();
  }

  torch::nn::Module& module() override { return *nets_; }

  // One learn_standard() and the critics' soft update on a filled replay
  // batch with filled rsample() noise, as
  // tools/golden/adapters/soft_actor_critic.py runs the reference's.
  std::map<std::string, torch::Tensor> GoldenOutputs() override {
    SacAgent& agent = nets_->agent;
    SacAgent& target = nets_->target_agent;
    const int64_t b = batch_size_;
    auto on_device = [&](torch::Tensor t) { return t.to(device_); };
    ReplayBuffer::Batch batch{
        on_device(DeterministicTensor("state", {b, kObsDim})),
        on_device(DeterministicTensor("action", {b, kActDim})),
        on_device(
            DeterministicTensor("reward", {b, 1}, torch::kFloat, -8.0, 8.0)),
        on_device(DeterministicTensor("next_state", {b, kObsDim})),
        on_device(DeterministicIntegers("done", {b, 1}, 0, 2).to(torch::kInt))};
    std::map<std::string, torch::Tensor> out;
    {
      torch::NoGradGuard no_grad;
      out["eval_action"] =
          agent->actor->forward(batch.state).Mean().clamp(-1.0, 1.0);
    }
    GoldenHooks golden{on_device(DeterministicTensor("noise.next", {b, 1})),
                       on_device(DeterministicTensor("noise.actor", {b, 1})),
                       &out};
    LearnStandard(batch, &golden);
    SoftUpdate(*target->critic1, *agent->critic1);
    SoftUpdate(*target->critic2, *agent->critic2);
    RecordEdgeParameters(*agent, "after_learn:", /*gradients=*/false, &out);
    out["after_learn:log_alpha"] = nets_->log_alpha.detach().clone();
    RecordEdgeParameters(*target->critic1, "after_soft_update:critic1.",
                         /*gradients=*/false, &out);
    return out;
  }

 private:
  // Model.train() with niter = 1.
  torch::Tensor TrainStep() {
    SacAgent& agent = nets_->agent;
    SacAgent& target = nets_->target_agent;
    target->train();
    // `done = True` on entry: every call starts a new episode, so neither
    // max_episode_steps nor the TimeLimit is ever reached.
    rl::Pendulum::Observation state = train_env_.Reset();
    const float action = Act(state, /*deterministic=*/false);
    rl::Pendulum::StepResult next = train_env_.Step(action);
    buffer_->Push(state, action, next.reward, next.observation, next.done);
    torch::Tensor critic_loss =
        LearnStandard(buffer_->Sample(batch_size_, device_, dtype_));
    // step % target_delay == 0 for step 0.
    SoftUpdate(*target->critic1, *agent->critic1);
    SoftUpdate(*target->critic2, *agent->critic2);
    return critic_loss;
  }

  // The golden check's fixed randomness: the two rsample() noises, and
  // where each optimizer's edge gradients go before its step.
  struct GoldenHooks {
    torch::Tensor eps_next;
    torch::Tensor eps_actor;
    std::map<std::string, torch::Tensor>* record = nullptr;
  };

  // learn_standard() with update_policy true (step % actor_delay == 0) and
  // no gradient clipping (critic_clip = actor_clip = 0) on a sampled
  // `batch`. Returns the critic loss; the reference returns nothing.
  torch::Tensor LearnStandard(const ReplayBuffer::Batch& batch,
                              const GoldenHooks* golden = nullptr) {
    static const GoldenHooks kNone;
    const GoldenHooks& hooks = golden != nullptr ? *golden : kNone;
    SacAgent& agent = nets_->agent;
    SacAgent& target = nets_->target_agent;
    agent->train();

    torch::Tensor alpha = torch::exp(nets_->log_alpha);
    torch::Tensor td_target;
    {
      torch::NoGradGuard no_grad;
      SquashedNormal dist_s1 = agent->actor->forward(batch.next_state);
      SquashedNormal::Draw a1 = dist_s1.RSample(hooks.eps_next);
      torch::Tensor logp_a1 = dist_s1.LogProb(a1).sum(-1, /*keepdim=*/true);
      torch::Tensor target_value =
          torch::min(target->critic1->forward(batch.next_state, a1.action),
                     target->critic2->forward(batch.next_state, a1.action));
      td_target = batch.reward + kGamma * (1.0 - batch.done) *
                                     (target_value - (alpha * logp_a1));
    }

    torch::Tensor td_error1 =
        td_target - agent->critic1->forward(batch.state, batch.action);
    torch::Tensor td_error2 =
        td_target - agent->critic2->forward(batch.state, batch.action);
    torch::Tensor critic_loss =
        (0.5 * (td_error1.pow(2) + td_error2.pow(2))).mean();
    critic_optimizer_->ZeroGrad();
    Backward(critic_loss);
    if (hooks.record != nullptr) {
      RecordEdgeParameters(*agent->critic1, "grad:critic1.",
                           /*gradients=*/true, hooks.record);
    }
    critic_optimizer_->Step();

    // Actor update. The critics see the actor's actions with grad, so this
    // backward also fills (unused) critic gradients, as in the reference.
    SquashedNormal dist = agent->actor->forward(batch.state);
    SquashedNormal::Draw a = dist.RSample(hooks.eps_actor);
    torch::Tensor logp_a = dist.LogProb(a).sum(-1, /*keepdim=*/true);
    torch::Tensor actor_loss =
        -(torch::min(agent->critic1->forward(batch.state, a.action),
                     agent->critic2->forward(batch.state, a.action)) -
          (alpha.detach() * logp_a))
             .mean();
    actor_optimizer_->ZeroGrad();
    Backward(actor_loss);
    if (hooks.record != nullptr) {
      RecordEdgeParameters(*agent->actor, "grad:actor.", /*gradients=*/true,
                           hooks.record);
    }
    actor_optimizer_->Step();

    // Alpha update.
    torch::Tensor alpha_loss =
        (-alpha * (logp_a + kTargetEntropy).detach()).mean();
    log_alpha_optimizer_->ZeroGrad();
    Backward(alpha_loss);
    if (hooks.record != nullptr) {
      (*hooks.record)["grad:log_alpha"] = nets_->log_alpha.grad().clone();
    }
    log_alpha_optimizer_->Step();
    return critic_loss.detach();
  }

  // Model.eval(): one episode of at most max_episode_steps on the test env
  // with the deterministic policy; returns torch.tensor(last action).
  torch::Tensor EvalStep() {
    torch::NoGradGuard no_grad;
    rl::Pendulum::Observation state = test_env_.Reset();
    bool done = false;
    float action = 0.0f;
    // The reference sums the (undiscounted) return and then drops it.
    double episode_return = 0.0;
    for (int step = 0; step < kMaxEpisodeSteps && !done; ++step) {
      action = Act(state, /*deterministic=*/true);
      rl::Pendulum::StepResult result = test_env_.Step(action);
      state = result.observation;
      done = result.done;
      episode_return += result.reward;
    }
    (void)episode_return;
    return torch::tensor({action}, torch::kFloat);
  }

  // SACAgent.forward (deterministic: the squashed mean) or
  // SACAgent.sample_action for one host state: process_state copies it to
  // the device, process_act clamps the action and brings it back with
  // .cpu(), the host sync every env step of the reference has.
  float Act(const rl::Pendulum::Observation& state, bool deterministic) {
    torch::NoGradGuard no_grad;
    torch::Tensor s = torch::from_blob(const_cast<float*>(state.data()),
                                       {1, kObsDim}, torch::kFloat)
                          .to(device_, dtype_, /*non_blocking=*/false,
                              /*copy=*/true);
    SquashedNormal dist = nets_->agent->actor->forward(s);
    torch::Tensor act = deterministic ? dist.Mean() : dist.Sample();
    return act.clamp(-1.0, 1.0).cpu().item<float>();
  }

  Mode mode_;
  torch::Device device_;
  torch::ScalarType dtype_;
  int64_t batch_size_;
  SacModules nets_;
  rl::Pendulum train_env_;
  rl::Pendulum test_env_;
  std::unique_ptr<ReplayBuffer> buffer_;
  std::unique_ptr<optim::Adam> critic_optimizer_;
  std::unique_ptr<optim::Adam> actor_optimizer_;
  std::unique_ptr<optim::Adam> log_alpha_optimizer_;
};

}  // namespace

// Counts: every network the reference Model holds, from nets.py/sac.py
// (pinned torch): agent and its deepcopy target_agent, each an actor of
// 1055746 and two critics of 1055745, plus log_alpha 1 = 6334473; no
// buffers (Linear only). TorchBench's get_module() is agent.actor alone.
TORCHBENCH_REGISTER_MODEL(
    ModelSpec({.name = "soft_actor_critic",
               .domain = "rl",
               .task = "reinforcement learning (continuous control)",
               .reference = "TorchBench soft_actor_critic (SAC, Pendulum-v1)",
               .train_batch_size = 256,  // DEFAULT_TRAIN_BSIZE
               .eval_batch_size = 256,  // DEFAULT_EVAL_BSIZE (unused by eval())
               .fixed_batch_size = true,  // ALLOW_CUSTOMIZE_BSIZE = False
               .reference_parameters = 6334473,
               .reference_buffers = 0,
               .checks = {.golden_file = "soft_actor_critic.golden",
                          .test_batch_size = 256}}),
    MakeModel<SoftActorCritic>());

}  // namespace soft_actor_critic_model
}  // namespace torchbench
