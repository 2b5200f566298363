#include "program/shard.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "json.h"

namespace torchbench {
namespace {

// FNV-1a, 64 bits: a stable hash across builds and machines (std::hash is
// neither).
uint64_t Fnv1a(const std::string& text) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

double TimeUnitSeconds(const std::string& unit) {
  if (unit == "ns") return 1e-9;
  if (unit == "us") return 1e-6;
  if (unit == "ms") return 1e-3;
  return 1.0;
}

}  // namespace

absl::StatusOr<Shard> ParseShard(const std::string& text) {
  const auto slash = text.find('/');
  Shard shard;
  if (slash == std::string::npos ||
      !absl::SimpleAtoi(text.substr(0, slash), &shard.index) ||
      !absl::SimpleAtoi(text.substr(slash + 1), &shard.count) ||
      shard.count < 1 || shard.index < 0 || shard.index >= shard.count) {
    return absl::InvalidArgumentError("expected I/N with 0 <= I < N, e.g. 0/4");
  }
  return shard;
}

absl::StatusOr<std::optional<Shard>> ShardFromEnvironment(GetEnv getenv) {
  auto number = [&](const char* name, int* out) -> absl::Status {
    const char* value = getenv(name);
    if (value == nullptr || !absl::SimpleAtoi(value, out)) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, "='", value == nullptr ? "" : value, "' is not an integer"));
    }
    return absl::OkStatus();
  };
  auto check = [](Shard shard, const char* source) -> absl::StatusOr<Shard> {
    if (shard.count < 1 || shard.index < 0 || shard.index >= shard.count) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, " gives shard ", shard.index, "/", shard.count,
                       ", outside 0 <= I < N"));
    }
    return shard;
  };
  if (getenv("SLURM_ARRAY_TASK_ID") != nullptr) {
    Shard shard;
    int min = 0;
    if (auto s = number("SLURM_ARRAY_TASK_ID", &shard.index); !s.ok()) return s;
    if (auto s = number("SLURM_ARRAY_TASK_COUNT", &shard.count); !s.ok()) {
      return s;
    }
    if (getenv("SLURM_ARRAY_TASK_MIN") != nullptr) {
      if (auto s = number("SLURM_ARRAY_TASK_MIN", &min); !s.ok()) return s;
    }
    shard.index -= min;
    auto checked = check(shard, "the Slurm array (SLURM_ARRAY_TASK_*)");
    if (!checked.ok()) return checked.status();
    return std::optional<Shard>(*checked);
  }
  if (getenv("JOB_COMPLETION_INDEX") != nullptr) {
    Shard shard;
    if (auto s = number("JOB_COMPLETION_INDEX", &shard.index); !s.ok()) {
      return s;
    }
    if (getenv("TORCHBENCH_SHARD_COUNT") == nullptr) {
      return absl::InvalidArgumentError(
          "JOB_COMPLETION_INDEX is set but TORCHBENCH_SHARD_COUNT is not: "
          "Kubernetes does not tell a pod the job's completions, so set "
          "TORCHBENCH_SHARD_COUNT to them");
    }
    if (auto s = number("TORCHBENCH_SHARD_COUNT", &shard.count); !s.ok()) {
      return s;
    }
    auto checked = check(shard, "the Kubernetes Indexed Job");
    if (!checked.ok()) return checked.status();
    return std::optional<Shard>(*checked);
  }
  return std::optional<Shard>();
}

ShardPlan PlanShards(std::vector<ShardUnit> units, int count) {
  std::sort(units.begin(), units.end(), [](const auto& a, const auto& b) {
    return a.cost != b.cost ? a.cost > b.cost : a.model < b.model;
  });
  ShardPlan plan;
  plan.assignment.resize(static_cast<size_t>(count));
  plan.load.assign(static_cast<size_t>(count), 0.0);
  std::ostringstream canonical;
  canonical << count;
  for (const ShardUnit& unit : units) {
    const auto least = static_cast<size_t>(
        std::min_element(plan.load.begin(), plan.load.end()) -
        plan.load.begin());
    plan.assignment[least].push_back(unit.model);
    plan.load[least] += unit.cost;
    canonical << "|" << least << ":" << unit.model;
    for (const auto& instance : unit.instances) canonical << "," << instance;
  }
  for (auto& models : plan.assignment) std::sort(models.begin(), models.end());
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx",
                static_cast<unsigned long long>(Fnv1a(canonical.str())));
  plan.hash = hex;
  return plan;
}

absl::StatusOr<std::map<std::string, double>> ReadModelCosts(
    const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read the costs file '", path, "'"));
  }
  std::ostringstream text;
  text << file.rdbuf();
  // json::Parse: Google Benchmark writes NaN and infinite counters as the
  // bare tokens NaN and Infinity, which it reads.
  auto doc = json::Parse(text.str());
  const bool has_rows = doc.ok() && doc->contains("benchmarks") &&
                        (*doc)["benchmarks"].is_array();
  if (!has_rows) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the costs file '", path,
        "' is not Google Benchmark JSON (--benchmark_out_format=json)",
        doc.ok() ? ": no \"benchmarks\" array" : ": ",
        doc.ok() ? "" : doc.status().message()));
  }
  using json::NumberOr;
  using json::StringOr;
  std::map<std::string, double> costs;
  for (const nlohmann::ordered_json& row : (*doc)["benchmarks"]) {
    if (!row.is_object() ||
        StringOr(row, "run_type", "iteration") != "iteration") {
      continue;
    }
    const std::string name =
        StringOr(row, "run_name", StringOr(row, "name", ""));
    const std::string model = name.substr(0, name.find('/'));
    if (model.empty()) continue;
    double& cost = costs[model];
    if (NumberOr(row, "repetition_index", 0) == 0) cost += 1.0;  // Setup.
    cost += NumberOr(row, "real_time", 0) * NumberOr(row, "iterations", 0) *
            TimeUnitSeconds(StringOr(row, "time_unit", "ns"));
  }
  return costs;
}

}  // namespace torchbench
