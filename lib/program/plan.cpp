#include "program/plan.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "program/filters.h"
#include "torchbench/instance.h"

namespace torchbench {

RunOptions RunOptionsFrom(const HarnessFlags& flags, c10::Device device,
                          std::string filter) {
  return {.device = device,
          .precision = flags.precision,
          .optimizer = flags.optimizer,
          .count_ops = flags.count_ops,
          .count_flops = flags.count_flops,
          .profile_steps = flags.profile ? flags.profile_steps : 0,
          .trace_dir = flags.trace_dir,
          .profile_shapes = flags.profile_shapes,
          .op_coverage_file = flags.op_coverage,
          .weights_file = flags.weights,
          .backend = flags.backend,
          .compiled_dir = flags.compiled,
          .channels_last = flags.channels_last,
          .warmup_steps = flags.warmup_steps,
          .seed = flags.seed,
          .batch_sizes = flags.batch_sizes,
          .filter = std::move(filter)};
}

std::vector<int64_t> ResolveBatchSizes(const ModelSpec& spec, Mode mode,
                                       const std::vector<int64_t>& requested,
                                       std::vector<RegistrationNote>* notes) {
  const int64_t default_size = spec.DefaultBatchSize(mode);
  auto note = [&](int64_t runs, std::string text) {
    if (notes != nullptr) {
      notes->push_back({InstanceName(spec.name, mode, runs), std::move(text)});
    }
  };
  if (requested.empty()) return {default_size};
  if (spec.fixed_batch_size) {
    note(default_size,
         absl::StrCat(spec.name, " ", ModeName(mode),
                      " has a fixed batch size; running batch_size:",
                      default_size, " only"));
    return {default_size};
  }
  const int64_t smallest = spec.MinBatchSize(mode);
  std::vector<int64_t> sizes;
  for (int64_t size : requested) {
    if (size < smallest) {
      note(smallest, absl::StrCat(spec.name, " ", ModeName(mode),
                                  " needs batch_size >= ", smallest, " (",
                                  spec.min_batch_size_reason,
                                  "); running batch_size:", smallest,
                                  " instead of ", size));
      size = smallest;
    }
    if (std::find(sizes.begin(), sizes.end(), size) == sizes.end()) {
      sizes.push_back(size);
    }
  }
  return sizes;
}

namespace {

// The configuration `entry` runs `name` with, or nullopt (and a note) when
// the model cannot run the resolved precision.
std::optional<ModelConfig> ConfigFor(const RegisteredModel& entry,
                                     const std::string& name, Mode mode,
                                     int64_t batch_size,
                                     const RunOptions& options,
                                     std::vector<RegistrationNote>* notes) {
  ModelConfig config;
  config.mode = mode;
  config.batch_size = batch_size;
  config.device = options.device;
  config.precision =
      entry.spec.ResolvePrecision(options.precision, mode, options.device);
  if (const std::string* why =
          entry.spec.UnsupportedReason(config.precision, mode, config.device)) {
    if (notes != nullptr) {
      notes->push_back(
          {name,
           absl::StrCat(name, " skipped: ", entry.spec.name, " does not run ",
                        PrecisionName(config.precision), " (", *why, ")")});
    }
    return std::nullopt;
  }
  if (options.backend != Backend::kEager) {
    // Said once per instance, as a precision a model lacks is: a filter
    // naming one Train instance learns why nothing ran.
    std::string why;
    if (mode == Mode::kTrain) {
      why = "compiled packages are forward-only (Eval)";
    } else if (config.precision != Precision::kFp32) {
      why = absl::StrCat("its ", PrecisionName(config.precision),
                         " default has no package (packages are fp32)");
    }
    if (!why.empty()) {
      if (notes != nullptr) {
        notes->push_back(
            {name, absl::StrCat(name, " skipped under backend ",
                                BackendName(options.backend), ": ", why)});
      }
      return std::nullopt;
    }
  }
  config.optimizer = options.optimizer;
  config.channels_last =
      options.channels_last && entry.spec.supports_channels_last;
  config.seed = options.seed;
  return config;
}

}  // namespace

std::vector<PlannedInstance> PlanInstances(
    const Registry& registry, const RunOptions& options,
    std::vector<RegistrationNote>* notes) {
  std::vector<PlannedInstance> planned;
  for (const RegisteredModel* entry : registry.List()) {
    for (Mode mode : {Mode::kTrain, Mode::kEval}) {
      if (!entry->spec.Supports(mode)) continue;
      for (int64_t batch_size :
           ResolveBatchSizes(entry->spec, mode, options.batch_sizes, notes)) {
        std::string name = InstanceName(entry->spec.name, mode, batch_size);
        if (!FilterSelects(options.filter, name)) continue;
        if (auto config =
                ConfigFor(*entry, name, mode, batch_size, options, notes)) {
          planned.push_back({std::move(name), entry, *config});
        }
      }
    }
  }
  return planned;
}

std::set<c10::ScalarType> GemmDtypes(
    const std::vector<PlannedInstance>& planned) {
  std::set<c10::ScalarType> dtypes = {c10::ScalarType::Float};
  for (const PlannedInstance& p : planned) {
    switch (p.config.precision) {
      case Precision::kBf16:
      case Precision::kAmpBf16:
        dtypes.insert(c10::ScalarType::BFloat16);
        break;
      case Precision::kFp16:
      case Precision::kAmpFp16:
        dtypes.insert(c10::ScalarType::Half);
        break;
      default:
        break;
    }
  }
  return dtypes;
}

std::vector<std::string> InstanceNames(
    const std::vector<PlannedInstance>& planned) {
  std::vector<std::string> names;
  names.reserve(planned.size());
  for (const auto& p : planned) names.push_back(p.name);
  return names;
}

std::string ModelDomains(const std::vector<PlannedInstance>& planned) {
  std::map<std::string, std::string> domains;
  for (const auto& p : planned) {
    domains[p.entry->spec.name] = p.entry->spec.domain;
  }
  std::vector<std::string> pairs;
  for (const auto& [model, domain] : domains) {
    pairs.push_back(absl::StrCat(model, ":", domain));
  }
  return absl::StrJoin(pairs, ",");
}

namespace {

// The sharding units: one per model, costed by `costs_path`'s times or, by
// default, parameter counts (a model with none, like pyhpc, still costs a
// setup). Sets `basis` to what the costs are.
absl::StatusOr<std::vector<ShardUnit>> ShardUnits(
    const std::vector<PlannedInstance>& planned, const std::string& costs_path,
    std::string* basis) {
  std::map<std::string, ShardUnit> units;
  for (const auto& p : planned) {
    ShardUnit& unit = units[p.entry->spec.name];
    unit.model = p.entry->spec.name;
    unit.instances.push_back(p.name);
    const double params = static_cast<double>(
        std::max<int64_t>(p.entry->spec.reference_parameters, 0));
    unit.cost += params + 1e6;
  }
  *basis = "parameter counts";
  if (!costs_path.empty()) {
    auto costs = ReadModelCosts(costs_path);
    if (!costs.ok()) return costs.status();
    std::vector<double> known;
    for (const auto& [model, cost] : *costs) known.push_back(cost);
    std::sort(known.begin(), known.end());
    const double median = known.empty() ? 1.0 : known[known.size() / 2];
    for (auto& [model, unit] : units) {
      auto it = costs->find(model);
      unit.cost = it != costs->end() ? it->second : median;
    }
    *basis = absl::StrCat(
        "times in ", std::filesystem::path(costs_path).filename().string());
  }
  std::vector<ShardUnit> list;
  for (auto& [model, unit] : units) list.push_back(std::move(unit));
  return list;
}

}  // namespace

absl::StatusOr<std::vector<PlannedInstance>> SelectShard(
    const std::vector<PlannedInstance>& planned, const Shard& shard,
    const std::string& costs_path, ContextPairs* context) {
  std::string basis;
  auto units = ShardUnits(planned, costs_path, &basis);
  if (!units.ok()) return units.status();
  const ShardPlan plan = PlanShards(*std::move(units), shard.count);
  const auto& mine = plan.assignment[static_cast<size_t>(shard.index)];
  const std::set<std::string> models(mine.begin(), mine.end());
  std::vector<PlannedInstance> selected;
  for (const auto& p : planned) {
    if (models.count(p.entry->spec.name) > 0) selected.push_back(p);
  }
  const std::vector<std::string> names = InstanceNames(selected);
  context->emplace_back("torchbench_shard",
                        absl::StrCat(shard.index, "/", shard.count));
  context->emplace_back("torchbench_shard_plan", plan.hash);
  context->emplace_back("torchbench_shard_basis", basis);
  context->emplace_back("torchbench_shard_instances",
                        absl::StrJoin(names, ","));
  size_t total_models = 0;
  for (const auto& models_of_shard : plan.assignment) {
    total_models += models_of_shard.size();
  }
  std::cerr << "torchbench: shard " << shard.index << "/" << shard.count << ": "
            << models.size() << " of " << total_models << " models, "
            << names.size() << " instances (plan " << plan.hash
            << ", balanced by " << basis << ")\n";
  return selected;
}

ResumeSplit SplitResumed(const std::vector<PlannedInstance>& planned,
                         std::vector<InstanceRecord> journaled) {
  std::map<std::string, InstanceRecord*> held;
  for (auto& record : journaled) held[record.instance] = &record;
  ResumeSplit split;
  for (const auto& p : planned) {
    if (auto it = held.find(p.name); it != held.end()) {
      split.replay.push_back(std::move(*it->second));
    } else {
      split.todo.push_back(p);
    }
  }
  return split;
}

}  // namespace torchbench
