// Every model's cuDNN flags (ModelSpec::train_cudnn / eval_cudnn) are the
// ones TorchBench recorded for it in metadata.yaml, as
// tools/golden/cudnn_flags.py copied them into tests/golden/cudnn_flags.txt.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "test_paths.h"
#include "torchbench/torchbench.h"

namespace torchbench {
namespace {

// model -> {train_benchmark, eval_benchmark, train_deterministic,
// eval_deterministic}, each "true", "false" or "-" (not recorded).
std::map<std::string, std::vector<std::string>> ReadTable() {
  const char* source = std::getenv("TORCHBENCH_SOURCE_DIR");
  const std::filesystem::path path =
      std::filesystem::path(source != nullptr ? source : kDefaultSourceDir) /
      "tests" / "golden" / "cudnn_flags.txt";
  std::ifstream in(path);
  std::map<std::string, std::vector<std::string>> table;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name;
    fields >> name;
    std::vector<std::string> values(4);
    for (auto& v : values) fields >> v;
    table[name] = values;
  }
  return table;
}

void ExpectFlag(const std::string& recorded, bool actual,
                const std::string& what) {
  if (recorded == "-") return;
  EXPECT_EQ(actual ? "true" : "false", recorded) << what;
}

TEST(CudnnFlagsTest, EveryModelHasTorchBenchsFlags) {
  const auto table = ReadTable();
  ASSERT_FALSE(table.empty()) << "tests/golden/cudnn_flags.txt not found";
  for (const RegisteredModel* entry : Registry::Global().List()) {
    const ModelSpec& spec = entry->spec;
    const auto it = table.find(spec.name);
    ASSERT_NE(it, table.end()) << spec.name << " is not in cudnn_flags.txt";
    const std::vector<std::string>& v = it->second;
    if (spec.Supports(Mode::kTrain)) {
      ExpectFlag(v[0], spec.train_cudnn.benchmark,
                 spec.name + " train_cudnn.benchmark");
      ExpectFlag(v[2], spec.train_cudnn.deterministic,
                 spec.name + " train_cudnn.deterministic");
    }
    if (spec.Supports(Mode::kEval)) {
      ExpectFlag(v[1], spec.eval_cudnn.benchmark,
                 spec.name + " eval_cudnn.benchmark");
      ExpectFlag(v[3], spec.eval_cudnn.deterministic,
                 spec.name + " eval_cudnn.deterministic");
    }
  }
}

}  // namespace
}  // namespace torchbench
