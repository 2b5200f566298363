// File: torchbench/golden.h
//
// What a model's golden check records (checks.h: GoldenCheck), by the rules
// tools/golden/reference.py records the reference's side with. The golden
// files themselves are read and compared by the tests
// (tests/support/golden_file.h).
#ifndef TORCHBENCH_GOLDEN_H_
#define TORCHBENCH_GOLDEN_H_

#include <torch/nn/module.h>
#include <torch/types.h>

#include <map>
#include <string>

namespace torchbench {

// What golden files record of a module's parameters, by the same rule as
// tools/golden/reference.py: its first and last parameters in registration
// order (named_parameters()), as "<prefix><name>". With `gradients`, their
// .grad (which must be defined) instead of their values.
void RecordEdgeParameters(const torch::nn::Module& module,
                          const std::string& prefix, bool gradients,
                          std::map<std::string, torch::Tensor>* out);

// Puts every dropout layer of `module` in eval mode: dropout masks come from
// the random stream, which C++ and Python cannot share, so golden checks run
// with dropout off on both sides (tools/golden/reference.py's
// turn_off_dropout).
void TurnOffDropout(torch::nn::Module& module);

}  // namespace torchbench

#endif  // TORCHBENCH_GOLDEN_H_
