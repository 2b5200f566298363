#include "program/list_models.h"

#include <algorithm>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "json.h"

namespace torchbench {
namespace {

using json::Quote;

}  // namespace

bool ListModels(const Registry& registry, const std::string& format,
                std::ostream& out) {
  bool ok = true;
  const bool json = format == "json";
  if (json) {
    out << "[";
  }
  // The name column fits the longest name (detectron2's run past 26
  // characters), so a name never runs into its domain.
  int name_width = 26;
  for (const RegisteredModel* entry : registry.List()) {
    name_width =
        std::max(name_width, static_cast<int>(entry->spec.name.size()) + 2);
  }
  if (!json) {
    out << absl::StrCat(
        "name", std::string(name_width - 4, ' '), "domain",
        std::string(10, ' '),
        "modes         batch(T/E)    parameters     buffers  reference\n");
  }
  bool first = true;
  for (const RegisteredModel* entry : registry.List()) {
    const ModelSpec& spec = entry->spec;
    // The reference's figures, which the built port equals (CountsTest):
    // listing builds nothing, so it answers at once (building all 84 took
    // 52 s on one core).
    ElementCounts counts;
    counts.parameters = spec.reference_parameters;
    counts.buffers = spec.reference_buffers;
    std::string error;
    if (counts.parameters < 0 || counts.buffers < 0) {
      error = "the spec records no reference element counts";
      ok = false;
    }
    std::vector<std::string> modes;
    for (Mode m : spec.modes) modes.push_back(ModeName(m));
    if (json) {
      std::vector<std::string> quoted;
      for (const auto& m : modes) quoted.push_back(Quote(m));
      out << (first ? "\n" : ",\n") << "  {\"name\": " << Quote(spec.name)
          << ", \"domain\": " << Quote(spec.domain)
          << ", \"task\": " << Quote(spec.task)
          << ", \"reference\": " << Quote(spec.reference) << ", \"modes\": ["
          << absl::StrJoin(quoted, ", ") << "]"
          << ", \"train_batch_size\": " << spec.train_batch_size
          << ", \"eval_batch_size\": " << spec.eval_batch_size
          << ", \"fixed_batch_size\": "
          << (spec.fixed_batch_size ? "true" : "false")
          << ", \"min_train_batch_size\": " << spec.MinBatchSize(Mode::kTrain)
          << ", \"min_eval_batch_size\": " << spec.MinBatchSize(Mode::kEval)
          << ", \"parameters\": " << counts.parameters
          << ", \"buffers\": " << counts.buffers;
      if (!error.empty()) out << ", \"error\": " << Quote(error);
      out << "}";
    } else {
      char line[512];
      std::snprintf(
          line, sizeof(line), "%-*s%-16s%-12s%6lld/%-9lld%12lld%12lld  %s\n",
          name_width, spec.name.c_str(), spec.domain.c_str(),
          absl::StrJoin(modes, ",").c_str(),
          static_cast<long long>(spec.train_batch_size),
          static_cast<long long>(spec.eval_batch_size),
          static_cast<long long>(counts.parameters),
          static_cast<long long>(counts.buffers), spec.reference.c_str());
      out << line;
      if (!error.empty()) out << "  error: " << error << "\n";
    }
    first = false;
  }
  out << (json ? "\n]\n" : "");
  return ok;
}

}  // namespace torchbench
