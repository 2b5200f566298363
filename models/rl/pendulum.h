// Host-side gym 0.25.2 `Pendulum-v1` as TorchBench's soft_actor_critic makes
// it (envs.py load_gym): gym.make's TimeLimit(200) around the env, then
// NormalizeContinuousActionSpace, seeded once with env.reset(seed=...).
//
// gym seeds the env with numpy's Generator(PCG64(SeedSequence(seed))), so
// this file carries both (numpy/random/bit_generator.pyx, _pcg64.pyx): the
// reset states are the ones the Python environment draws, bit for bit.
#ifndef TORCHBENCH_MODELS_RL_PENDULUM_H_
#define TORCHBENCH_MODELS_RL_PENDULUM_H_

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <numbers>

namespace torchbench::rl {

// numpy.random.PCG64 seeded from SeedSequence(seed), drawing doubles as
// Generator.random() does.
class NumpyPcg64 {
 public:
  explicit NumpyPcg64(uint32_t seed) {
    // SeedSequence(seed).generate_state(4, uint64): mix the entropy into a
    // 4-word pool, then hash 8 uint32 words out of it.
    constexpr uint32_t kInitA = 0x43b0d7e5, kMultA = 0x931e8875;
    constexpr uint32_t kInitB = 0x8b51f9dd, kMultB = 0x58f38ded;
    constexpr uint32_t kMixMultL = 0xca01f9dd, kMixMultR = 0x4973f715;
    constexpr int kXShift = 16;
    uint32_t hash_const = kInitA;
    auto hashmix = [&](uint32_t value) {
      value ^= hash_const;
      hash_const *= kMultA;
      value *= hash_const;
      return value ^ (value >> kXShift);
    };
    auto mix = [](uint32_t x, uint32_t y) {
      uint32_t result = kMixMultL * x - kMixMultR * y;
      return result ^ (result >> kXShift);
    };
    std::array<uint32_t, 4> pool{};
    for (int i = 0; i < 4; ++i) pool[i] = hashmix(i == 0 ? seed : 0u);
    for (int src = 0; src < 4; ++src) {
      for (int dst = 0; dst < 4; ++dst) {
        if (src != dst) pool[dst] = mix(pool[dst], hashmix(pool[src]));
      }
    }
    std::array<uint64_t, 4> words{};
    hash_const = kInitB;
    for (int i = 0; i < 8; ++i) {
      uint32_t value = pool[i % 4] ^ hash_const;
      hash_const *= kMultB;
      value *= hash_const;
      value ^= value >> kXShift;
      // generate_state's uint32 words viewed as little-endian uint64.
      words[i / 2] |= static_cast<uint64_t>(value) << (32 * (i % 2));
    }
    // pcg64_set_seed: state words[0:2], increment words[2:4] (high first).
    const Uint128 init_state = (Uint128{words[0]} << 64) | words[1];
    const Uint128 init_seq = (Uint128{words[2]} << 64) | words[3];
    inc_ = (init_seq << 1) | 1;
    state_ = 0;
    Advance();
    state_ += init_state;
    Advance();
  }

  // Generator.random(): 53 random bits in [0, 1).
  double NextDouble() {
    return static_cast<double>(NextUint64() >> 11) * (1.0 / 9007199254740992.0);
  }

 private:
  // GCC/Clang extension; __extension__ keeps -Wpedantic quiet.
  __extension__ typedef unsigned __int128 Uint128;

  void Advance() {
    constexpr Uint128 kMultiplier =
        (Uint128{0x2360ed051fc65da4ULL} << 64) | 0x4385df649fccf645ULL;
    state_ = state_ * kMultiplier + inc_;
  }

  // XSL-RR output of the advanced state.
  uint64_t NextUint64() {
    Advance();
    const auto value =
        static_cast<uint64_t>(state_ >> 64) ^ static_cast<uint64_t>(state_);
    const auto rot = static_cast<unsigned>(state_ >> 122);
    return (value >> rot) | (value << ((64 - rot) & 63));
  }

  Uint128 state_ = 0;
  Uint128 inc_ = 0;
};

// Python's float `%` (numpy.mod): the result takes the divisor's sign.
inline double FloorMod(double x, double m) {
  double r = std::fmod(x, m);
  if (r != 0.0 && ((r < 0.0) != (m < 0.0))) r += m;
  return r;
}

// gym.envs.classic_control.PendulumEnv (0.25.2) seen through TorchBench's
// wrappers. Arithmetic follows the numpy dtypes the Python code runs in: the
// state is float64, the action float32, the observation float32.
class Pendulum {
 public:
  using Observation = std::array<float, 3>;
  struct StepResult {
    Observation observation;
    double reward = 0.0;
    bool done = false;
  };

  // load_gym(env_id, seed) ends with env.reset(seed=seed), which draws the
  // first start state from the freshly seeded generator.
  explicit Pendulum(uint32_t seed) : rng_(seed) { Reset(); }

  // reset(): theta ~ U(-pi, pi), theta_dot ~ U(-1, 1) (DEFAULT_X/Y), drawn
  // in that order by np_random.uniform(low=-high, high=high).
  Observation Reset() {
    constexpr double kPi = std::numbers::pi;
    theta_ = -kPi + (kPi - -kPi) * rng_.NextDouble();
    theta_dot_ = -1.0 + (1.0 - -1.0) * rng_.NextDouble();
    elapsed_steps_ = 0;
    return Observe();
  }

  // `action` is the agent's action in [-1, 1].
  StepResult Step(float action) {
    // NormalizeContinuousActionSpace.action(), all float32 arrays:
    // (a - low) / (high - low) * (2 - (-2)) + (-2).
    float u = (action - -1.0f) / 2.0f * 4.0f + -2.0f;
    u = std::clamp(u, -kMaxTorque, kMaxTorque);
    const double normalized =
        FloorMod(theta_ + std::numbers::pi, 2.0 * std::numbers::pi) -
        std::numbers::pi;
    // u**2 is a float32 square; numpy 1.x then promotes 0.001 * it to
    // float64, as it does 3.0 * u below.
    const float u_squared = u * u;
    const double costs = normalized * normalized +
                         0.1 * (theta_dot_ * theta_dot_) +
                         0.001 * static_cast<double>(u_squared);
    double new_theta_dot =
        theta_dot_ + (3.0 * kG / (2.0 * kL) * std::sin(theta_) +
                      3.0 / (kM * kL * kL) * static_cast<double>(u)) *
                         kDt;
    new_theta_dot = std::clamp(new_theta_dot, -kMaxSpeed, kMaxSpeed);
    theta_ = theta_ + new_theta_dot * kDt;
    theta_dot_ = new_theta_dot;
    // Pendulum never terminates; gym.make's TimeLimit truncates at 200
    // steps, reported as done by the old (4-tuple) step API.
    ++elapsed_steps_;
    return {Observe(), -costs, elapsed_steps_ >= kMaxEpisodeSteps};
  }

 private:
  static constexpr double kG = 10.0;
  static constexpr double kM = 1.0;
  static constexpr double kL = 1.0;
  static constexpr double kDt = 0.05;
  static constexpr double kMaxSpeed = 8.0;
  static constexpr float kMaxTorque = 2.0f;
  static constexpr int kMaxEpisodeSteps = 200;  // Pendulum-v1 registration.

  Observation Observe() const {
    return {static_cast<float>(std::cos(theta_)),
            static_cast<float>(std::sin(theta_)),
            static_cast<float>(theta_dot_)};
  }

  NumpyPcg64 rng_;
  double theta_ = 0.0;
  double theta_dot_ = 0.0;
  int elapsed_steps_ = 0;
};

}  // namespace torchbench::rl

#endif  // TORCHBENCH_MODELS_RL_PENDULUM_H_
