// File: models/cpu_ci_limits.h
//
// What the CPU model tests leave out on this project's CI machine (2 cores,
// 24 GB, no GPU, CPUs without fp16 matrix units), per model, each with the
// measurement or the reason behind it. They are limits of that machine and
// of what the tests compare, not facts about a model, so they live with the
// tests that apply them instead of in the installed ModelSpec; a key that
// names no registered model fails CpuCiLimitsTest.
#ifndef TORCHBENCH_TESTS_MODELS_CPU_CI_LIMITS_H_
#define TORCHBENCH_TESTS_MODELS_CPU_CI_LIMITS_H_

#include <map>
#include <string>
#include <vector>

#include "torchbench/model.h"

namespace torchbench::testing {

struct CpuCiLimits {
  // Why the smoke and precision tests skip the model; "" runs it.
  std::string skip_smoke_test;
  // Modes whose fp16 and amp_fp16 steps the precision test leaves out, and
  // why. The program still runs them; bf16 and amp_bf16 are tested for
  // every model.
  std::vector<Mode> skip_fp16_modes;
  std::string skip_fp16_reason;
};

// The limits of `model` (none for most models).
const CpuCiLimits& CpuCiLimitsOf(const std::string& model);

// Every entry, by model name.
const std::map<std::string, CpuCiLimits>& AllCpuCiLimits();

}  // namespace torchbench::testing

#endif  // TORCHBENCH_TESTS_MODELS_CPU_CI_LIMITS_H_
