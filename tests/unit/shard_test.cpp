#include "program/shard.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>

namespace torchbench {
namespace {

TEST(ShardTest, ParsesIndexOfCount) {
  auto shard = ParseShard("2/5");
  ASSERT_TRUE(shard.ok());
  EXPECT_EQ(*shard, (Shard{2, 5}));
  for (const char* bad : {"5/5", "-1/3", "1", "a/b", "1/0", ""}) {
    EXPECT_FALSE(ParseShard(bad).ok()) << bad;
  }
}

std::map<std::string, std::string>* fake_env = nullptr;
const char* FakeGetEnv(const char* name) {
  auto it = fake_env->find(name);
  return it == fake_env->end() ? nullptr : it->second.c_str();
}

absl::StatusOr<std::optional<Shard>> FromEnv(
    std::map<std::string, std::string> env) {
  fake_env = &env;
  auto shard = ShardFromEnvironment(&FakeGetEnv);
  fake_env = nullptr;
  return shard;
}

TEST(ShardTest, ReadsSlurmAndKubernetesVariables) {
  auto none = FromEnv({});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  // --array=4-6: task ids 4..6 are shards 0..2.
  auto slurm = FromEnv({{"SLURM_ARRAY_TASK_ID", "5"},
                        {"SLURM_ARRAY_TASK_MIN", "4"},
                        {"SLURM_ARRAY_TASK_COUNT", "3"}});
  ASSERT_TRUE(slurm.ok());
  EXPECT_EQ(**slurm, (Shard{1, 3}));
  auto k8s =
      FromEnv({{"JOB_COMPLETION_INDEX", "3"}, {"TORCHBENCH_SHARD_COUNT", "4"}});
  ASSERT_TRUE(k8s.ok());
  EXPECT_EQ(**k8s, (Shard{3, 4}));
  EXPECT_FALSE(FromEnv({{"JOB_COMPLETION_INDEX", "3"}}).ok());
  EXPECT_FALSE(
      FromEnv({{"SLURM_ARRAY_TASK_ID", "x"}, {"SLURM_ARRAY_TASK_COUNT", "3"}})
          .ok());
  EXPECT_FALSE(
      FromEnv({{"SLURM_ARRAY_TASK_ID", "3"}, {"SLURM_ARRAY_TASK_COUNT", "3"}})
          .ok());
}

TEST(ShardTest, GreedyPlanBalancesAndIsDeterministic) {
  std::vector<ShardUnit> units = {{"a", {"a/Eval/batch_size:1"}, 10},
                                  {"b", {"b/Eval/batch_size:1"}, 7},
                                  {"c", {"c/Eval/batch_size:1"}, 6},
                                  {"d", {"d/Eval/batch_size:1"}, 5},
                                  {"e", {"e/Eval/batch_size:1"}, 2}};
  const ShardPlan plan = PlanShards(units, 2);
  // LPT: a->0, b->1, c->1 (7 < 10), d->0, e->1 (13 < 15)... loads 15 / 15.
  EXPECT_EQ(plan.assignment[0], (std::vector<std::string>{"a", "d"}));
  EXPECT_EQ(plan.assignment[1], (std::vector<std::string>{"b", "c", "e"}));
  EXPECT_DOUBLE_EQ(plan.load[0], 15);
  EXPECT_DOUBLE_EQ(plan.load[1], 15);
  // The order of the input does not matter; the plan's inputs do.
  std::vector<ShardUnit> reversed(units.rbegin(), units.rend());
  EXPECT_EQ(PlanShards(reversed, 2).hash, plan.hash);
  EXPECT_NE(PlanShards(units, 3).hash, plan.hash);
  units[4].cost = 20;  // e now goes first, to shard 0.
  EXPECT_NE(PlanShards(units, 2).hash, plan.hash);
  EXPECT_EQ(plan.hash.size(), 16u);
}

TEST(ShardTest, ReadsModelCostsFromResults) {
  const std::string path = ::testing::TempDir() + "/costs.json";
  std::ofstream(path) << R"({"context": {}, "benchmarks": [
    {"name": "m/Eval/batch_size:1", "run_name": "m/Eval/batch_size:1",
     "run_type": "iteration", "repetition_index": 0, "iterations": 100,
     "real_time": 2.0, "time_unit": "ms"},
    {"name": "m/Eval/batch_size:1_mean", "run_name": "m/Eval/batch_size:1",
     "run_type": "aggregate", "iterations": 100, "real_time": 2.0,
     "time_unit": "ms"},
    {"name": "n/Train/batch_size:4", "run_name": "n/Train/batch_size:4",
     "run_type": "iteration", "error_occurred": true, "error_message": "x",
     "iterations": 0, "real_time": 0, "time_unit": "ms"}]})";
  auto costs = ReadModelCosts(path);
  ASSERT_TRUE(costs.ok()) << costs.status();
  EXPECT_DOUBLE_EQ(costs->at("m"), 1.0 + 0.2);  // Setup + 100 x 2 ms.
  EXPECT_DOUBLE_EQ(costs->at("n"), 1.0);
  // Google Benchmark writes a NaN or infinite counter (a cv of 0/0) as a
  // bare NaN or Infinity, which JSON lacks.
  std::ofstream(path) << R"({"context": {}, "benchmarks": [
    {"name": "m/Eval/batch_size:1", "run_name": "m/Eval/batch_size:1",
     "run_type": "iteration", "repetition_index": 0, "iterations": 100,
     "real_time": 2.0, "time_unit": "ms", "tflops": NaN, "x": -Infinity},
    {"name": "m/Eval/batch_size:1_cv", "run_name": "m/Eval/batch_size:1",
     "run_type": "aggregate", "real_time": Infinity, "time_unit": "ms"}]})";
  costs = ReadModelCosts(path);
  ASSERT_TRUE(costs.ok()) << costs.status();
  EXPECT_DOUBLE_EQ(costs->at("m"), 1.0 + 0.2);
  std::ofstream(path) << "{not json";
  EXPECT_FALSE(ReadModelCosts(path).ok());
  EXPECT_FALSE(ReadModelCosts(path + ".missing").ok());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace torchbench
