#include "program/op_coverage.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <set>
#include <string>
#include <thread>
#include <vector>

#include "json.h"
#include "torchbench/optim.h"

namespace torchbench {
namespace {

// "phase top|nested op.overload" for each covered op.
std::set<std::string> Describe(const std::vector<CoveredOp>& ops) {
  std::set<std::string> out;
  for (const CoveredOp& op : ops) {
    out.insert(std::string(OpPhaseName(op.phase)) +
               (op.top_level ? " top " : " nested ") + op.op + "." +
               op.overload);
  }
  return out;
}

// One train step of a one-parameter model: x * w summed, backward, SGD.
std::vector<CoveredOp> TinyTrainStep() {
  torch::Tensor w = torch::ones({3}).requires_grad_();
  const torch::Tensor x = torch::full({3}, 2.0);
  optim::Sgd sgd({w}, {.lr = 0.1}, OptimizerPath::kSingle);
  OpCoverage coverage;
  torch::Tensor loss = (x * w).sum();
  loss.backward();
  sgd.Step();
  return coverage.ops();
}

// LibTorch 2.14's operators for it, composite parts included: backward()
// seeds the gradient with ones_like on the caller's thread before the engine
// starts (so in the forward phase), AccumulateGrad detaches, SGD adds.
TEST(OpCoverageTest, ATinyTrainStepCoversExactlyItsOperators) {
  const std::vector<CoveredOp> ops = TinyTrainStep();
  EXPECT_EQ(Describe(ops), (std::set<std::string>{
                               "forward top aten::mul.Tensor",
                               "forward top aten::sum.",
                               "forward nested aten::sum.dim_IntList",
                               "forward nested aten::as_strided.",
                               "forward top aten::ones_like.",
                               "forward nested aten::empty_like.",
                               "forward nested aten::empty.memory_format",
                               "forward nested aten::fill_.Scalar",
                               "backward top aten::expand.",
                               "backward nested aten::as_strided.",
                               "backward top aten::mul.Tensor",
                               "backward top aten::detach.",
                               "optimizer top aten::add_.Tensor",
                           }));
  for (const CoveredOp& op : ops) {
    EXPECT_GE(op.calls, 1) << op.op;
    EXPECT_FALSE(op.keys.empty()) << op.op;
  }
  const auto counters = CoverageCounters(ops);
  EXPECT_EQ(counters.at("ops_distinct"), 10);
  EXPECT_EQ(counters.at("ops_distinct_forward"), 7);
  EXPECT_EQ(counters.at("ops_distinct_backward"), 4);
  EXPECT_EQ(counters.at("ops_distinct_optimizer"), 1);
  EXPECT_EQ(counters.at("ops_distinct_top_level"), 6);
}

TEST(OpCoverageTest, TwoRunsGiveTheSameCoverage) {
  const std::vector<CoveredOp> a = TinyTrainStep();
  const std::vector<CoveredOp> b = TinyTrainStep();
  EXPECT_EQ(CoverageInstanceLine({.instance = "t"}, a),
            CoverageInstanceLine({.instance = "t"}, b));
}

TEST(OpCoverageTest, RecordsDispatchKeys) {
  const torch::Tensor a = torch::ones({2}).requires_grad_();
  std::vector<CoveredOp> ops;
  {
    OpCoverage coverage;
    (a * 2).sum();
    torch::zeros({2});
    ops = coverage.ops();
  }
  for (const CoveredOp& op : ops) {
    if (op.op == "aten::mul" && op.top_level) {
      EXPECT_EQ(op.keys, (std::set<std::string>{"AutogradCPU", "CPU"}));
    }
    if (op.op == "aten::zeros" && op.top_level) {
      EXPECT_TRUE(op.keys.count("BackendSelect")) << op.op;
    }
  }
}

// Backward on another thread (the autograd engine's, on a GPU) is seen.
TEST(OpCoverageTest, SeesOtherThreads) {
  OpCoverage coverage;
  std::thread([] { torch::ones({2}).neg(); }).join();
  bool saw = false;
  for (const CoveredOp& op : coverage.ops()) saw |= op.op == "aten::neg";
  EXPECT_TRUE(saw);
}

// The denominator: every registered operator, aten's among them.
TEST(OpCoverageTest, RegistryAndLinesAreJson) {
  const std::vector<std::string> registered = RegisteredOperators();
  int aten = 0;
  for (const std::string& n : registered) aten += n.rfind("aten::", 0) == 0;
  EXPECT_GT(aten, 1000);
  EXPECT_TRUE(std::is_sorted(registered.begin(), registered.end()));
  auto registry =
      json::Parse(CoverageRegistryLine("2.14.1", "cpu", registered));
  ASSERT_TRUE(registry.ok()) << registry.status().message();
  EXPECT_EQ(registry->at("registry").at("ops").size(), registered.size());
  auto line =
      json::Parse(CoverageInstanceLine({.instance = "m/Train/batch_size:1",
                                        .model = "m",
                                        .mode = "Train",
                                        .batch_size = 1},
                                       TinyTrainStep()));
  ASSERT_TRUE(line.ok()) << line.status().message();
  EXPECT_EQ(json::StringOr(*line, "model", ""), "m");
  EXPECT_FALSE(line->at("ops").empty());
}

}  // namespace
}  // namespace torchbench
