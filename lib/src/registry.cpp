#include "torchbench/registry.h"

#include <torch/utils.h>

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"

namespace torchbench {

std::unique_ptr<Model> RegisteredModel::Create(
    const ModelConfig& config) const {
  torch::manual_seed(config.seed);
  return factory(config);
}

Registry& Registry::Global() {
  static Registry* registry =
      new Registry();  // Never destroyed: static-init safe.
  return *registry;
}

absl::Status Registry::Add(ModelSpec spec, ModelFactory factory,
                           std::string file, int line) {
  if (spec.name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model registered at ", file, ":", line, " has an empty name"));
  }
  if (spec.modes.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model '", spec.name, "' (", file, ":", line, ") supports no mode"));
  }
  for (Mode mode : spec.modes) {
    if (spec.DefaultBatchSize(mode) <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "model '", spec.name, "' (", file, ":", line, ") supports ",
          ModeName(mode), " but has no default batch size for it"));
    }
    if (spec.DefaultBatchSize(mode) < spec.MinBatchSize(mode)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "model '", spec.name, "' (", file, ":", line, ") has a default ",
          ModeName(mode), " batch size below its smallest valid one"));
    }
    if (spec.MinBatchSize(mode) > 1 && spec.min_batch_size_reason.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "model '", spec.name, "' (", file, ":", line,
          ") sets a smallest batch size without min_batch_size_reason"));
    }
  }
  for (const auto& limit : spec.unsupported_precisions) {
    if (limit.reason.empty() || limit.precision == Precision::kDefault) {
      return absl::InvalidArgumentError(absl::StrCat(
          "model '", spec.name, "' (", file, ":", line,
          ") lists an unsupported precision without a reason (or 'default')"));
    }
  }
  if (!factory) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model '", spec.name, "' (", file, ":", line, ") has no factory"));
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = models_.find(spec.name);
  if (it != models_.end()) {
    return absl::AlreadyExistsError(absl::StrCat(
        "model '", spec.name, "' is registered twice: at ", it->second->file,
        ":", it->second->line, " and at ", file, ":", line));
  }
  std::string name = spec.name;
  auto entry = std::make_unique<RegisteredModel>();
  entry->spec = std::move(spec);
  entry->factory = std::move(factory);
  entry->file = std::move(file);
  entry->line = line;
  models_.emplace(std::move(name), std::move(entry));
  return absl::OkStatus();
}

const RegisteredModel* Registry::Find(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = models_.find(name);
  return it == models_.end() ? nullptr : it->second.get();
}

std::vector<const RegisteredModel*> Registry::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<const RegisteredModel*> out;
  out.reserve(models_.size());
  for (const auto& [name, entry] : models_) out.push_back(entry.get());
  return out;  // std::map keeps them sorted by name.
}

size_t Registry::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return models_.size();
}

namespace internal {

Registrar::Registrar(ModelSpec spec, ModelFactory factory, const char* file,
                     int line) {
  absl::Status status =
      Registry::Global().Add(std::move(spec), std::move(factory), file, line);
  if (!status.ok()) {
    std::fprintf(stderr, "torchbench: %s\n",
                 std::string(status.message()).c_str());
    std::exit(EXIT_FAILURE);
  }
}

}  // namespace internal
}  // namespace torchbench
