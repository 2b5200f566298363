// File: program/flags.h
//
// The harness's own command-line flags, all spelled --torchbench_*. They are
// taken out of argv before Google Benchmark reads the rest, so every
// --benchmark_* flag keeps working.
//
// Every flag is one row of one table (FlagTable(), flags.cpp): its name,
// value, default, help and parser. The parser, --torchbench_help and the
// flag table of tools/README.md (--torchbench_help=markdown, checked in CI)
// are all made from it, so a flag is described in that one place.
#ifndef TORCHBENCH_PROGRAM_FLAGS_H_
#define TORCHBENCH_PROGRAM_FLAGS_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "program/compiled_model.h"
#include "program/host_malloc.h"
#include "program/shard.h"
#include "torchbench/model.h"

namespace torchbench {

// The parsed flags; each field is described by its row of FlagTable().
struct HarnessFlags {
  std::vector<int64_t> batch_sizes;  // Empty: each model's defaults.
  std::string device;                // Empty: cuda when usable, else cpu.
  Precision precision = Precision::kFp32;
  OptimizerPath optimizer = OptimizerPath::kDefault;
  bool count_ops = false;
  bool count_flops = false;
  std::string peaks;  // Empty: measured.
  bool profile = false;
  int profile_steps = 5;
  std::string trace_dir;
  bool profile_shapes = false;
  std::string testonly_slow_op;
  std::string op_coverage;
  bool channels_last = false;
  std::string weights;
  Backend backend = Backend::kEager;
  std::string compiled;  // The packages' directory (tools/tb compile -o).
  int warmup_steps = 3;
  uint64_t seed = 1337;
  bool fail_on_error = true;
  std::optional<std::string> list_models;  // "table" or "json".
  bool cpu_memory_counter = true;
  HostMalloc host_malloc = HostMalloc::kRetain;
  // "" (no help), "text" or "markdown".
  std::string help;

  // Runs that survive and scale (the torchbench program only).
  bool isolate = false;
  double instance_timeout = 3600;
  std::string journal;
  std::string resume;
  std::optional<Shard> shard;  // Absent: from Slurm or Kubernetes variables.
  std::string shard_costs;
  // Set by an isolating parent for its child, which runs one instance and
  // journals it to this file.
  std::string child_result;
};

// One flag: --torchbench_<name>[=<value>].
struct FlagSpec {
  const char* name;           // Without "--torchbench_".
  const char* value;          // How its value reads ("" for a switch).
  const char* default_value;  // As the docs show it ("" for none).
  const char* help;           // One paragraph, Markdown-free.
  // Sets the flag from its value (nullopt: given bare, --torchbench_<name>).
  absl::Status (*parse)(const std::optional<std::string>& value,
                        HarnessFlags* flags);
  bool internal = false;  // Set by the program for itself; not listed.
};

// Every flag, in the order --torchbench_help lists them.
std::span<const FlagSpec> FlagTable();

// Parses and removes every --torchbench_* argument from argv, leaving the
// rest (program name first) for Google Benchmark. Returns InvalidArgument
// naming the flag for an unknown --torchbench_* flag, a bad value (a batch
// size that is not a positive integer, an unknown precision, ...) or flags
// that do not go together (--torchbench_backend=aoti without
// --torchbench_compiled).
absl::StatusOr<HarnessFlags> ParseHarnessFlags(int* argc, char** argv);

// The flag table as --torchbench_help prints it (text) and as tools/README.md
// holds it (a Markdown table, --torchbench_help=markdown).
std::string HarnessFlagsHelp();
std::string HarnessFlagsMarkdown();

}  // namespace torchbench

#endif  // TORCHBENCH_PROGRAM_FLAGS_H_
