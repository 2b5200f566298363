// File: program/shard.h
//
// Splitting one run across machines: --torchbench_shard=I/N runs a
// deterministic 1/N of the selected instances. Every shard computes the same
// plan from the same inputs, so N machines need no coordination. The unit is
// the model (all its modes and batch sizes go to one shard, which pays its
// setup once); models are assigned greedily, most expensive first, to the
// least loaded shard (PyTorch's test sharding, tools/testing/
// test_selections.py, does the same with test times).
#ifndef TORCHBENCH_PROGRAM_SHARD_H_
#define TORCHBENCH_PROGRAM_SHARD_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace torchbench {

struct Shard {
  int index = 0;  // 0-based.
  int count = 1;
  bool operator==(const Shard&) const = default;
};

// Parses "I/N" (0 <= I < N). InvalidArgument names the problem.
absl::StatusOr<Shard> ParseShard(const std::string& text);

// The shard a batch scheduler assigned, when the flag is absent: a Slurm
// array task (SLURM_ARRAY_TASK_ID minus SLURM_ARRAY_TASK_MIN, of
// SLURM_ARRAY_TASK_COUNT) or a Kubernetes Indexed Job pod
// (JOB_COMPLETION_INDEX, of TORCHBENCH_SHARD_COUNT, since Kubernetes does not
// tell a pod the completion count). `getenv` is injectable for tests.
// nullopt when none is set; InvalidArgument when a set one is malformed.
using GetEnv = const char* (*)(const char*);
absl::StatusOr<std::optional<Shard>> ShardFromEnvironment(GetEnv getenv);

// One model of the plan: its name, its selected instances, and its cost
// (any unit, the same for every model).
struct ShardUnit {
  std::string model;
  std::vector<std::string> instances;
  double cost = 0;
};

struct ShardPlan {
  // assignment[i]: the models of shard i, in name order.
  std::vector<std::vector<std::string>> assignment;
  std::vector<double> load;
  // 16 hex digits naming the plan: the same on every shard of one run, and
  // different when the selection, the assignment or the shard count differ.
  std::string hash;
};

// Greedy longest-processing-time assignment of `units` to `count` shards:
// units by cost, highest first (ties by name), each to the shard with the
// least load so far (ties: lowest index).
ShardPlan PlanShards(std::vector<ShardUnit> units, int count);

// Seconds each model took in a Google Benchmark JSON results file (the sum
// of real_time x iterations over its iteration rows, plus a second per
// instance for setup), keyed by model name (the first path component of the
// benchmark name). InvalidArgument for an unreadable or malformed file.
absl::StatusOr<std::map<std::string, double>> ReadModelCosts(
    const std::string& path);

}  // namespace torchbench

#endif  // TORCHBENCH_PROGRAM_SHARD_H_
