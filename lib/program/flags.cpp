#include "program/flags.h"

#include <unistd.h>

#include <string>
#include <string_view>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "program/slow_op.h"

namespace torchbench {
namespace {

constexpr char kPrefix[] = "--torchbench_";

absl::StatusOr<bool> ParseBool(const std::string& flag,
                               const std::optional<std::string>& value) {
  if (!value || *value == "true" || *value == "1") return true;
  if (*value == "false" || *value == "0") return false;
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, "=", *value, ": expected true or false"));
}

absl::StatusOr<std::vector<int64_t>> ParseBatchSizes(const std::string& text) {
  std::vector<int64_t> sizes;
  for (const auto& piece : absl::StrSplit(text, ',')) {
    const std::string item(piece.data(), piece.size());
    int64_t size = 0;
    if (!absl::SimpleAtoi(item, &size) || size <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--torchbench_batch_sizes=", text, ": '", item,
                       "' is not a positive integer batch size"));
    }
    sizes.push_back(size);
  }
  return sizes;
}

}  // namespace

absl::StatusOr<HarnessFlags> ParseHarnessFlags(int* argc, char** argv) {
  HarnessFlags flags;
  int kept = 1;
  for (int i = 1; i < *argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind(kPrefix, 0) != 0) {
      argv[kept++] = argv[i];
      continue;
    }
    const auto eq = arg.find('=');
    const std::string name =
        arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    std::optional<std::string> value;
    if (eq != std::string::npos) value = arg.substr(eq + 1);
    auto need_value = [&]() -> absl::Status {
      if (!value || value->empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", name, " needs a value (--", name, "=...)"));
      }
      return absl::OkStatus();
    };

    if (name == "torchbench_batch_sizes") {
      if (auto s = need_value(); !s.ok()) return s;
      auto sizes = ParseBatchSizes(*value);
      if (!sizes.ok()) return sizes.status();
      flags.batch_sizes = *std::move(sizes);
    } else if (name == "torchbench_device") {
      if (auto s = need_value(); !s.ok()) return s;
      flags.device = *value;
    } else if (name == "torchbench_precision") {
      if (auto s = need_value(); !s.ok()) return s;
      const auto precision = ParsePrecision(*value);
      if (!precision) {
        return absl::InvalidArgumentError(
            absl::StrCat("--torchbench_precision=", *value,
                         ": expected fp32, tf32, fp16, bf16, amp_fp16, "
                         "amp_bf16 or default"));
      }
      flags.precision = *precision;
    } else if (name == "torchbench_optimizer") {
      if (auto s = need_value(); !s.ok()) return s;
      if (*value == "default") {
        flags.optimizer = OptimizerPath::kDefault;
      } else if (*value == "foreach") {
        flags.optimizer = OptimizerPath::kForeach;
      } else if (*value == "single") {
        flags.optimizer = OptimizerPath::kSingle;
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("--torchbench_optimizer=", *value,
                         ": expected default, foreach or single"));
      }
    } else if (name == "torchbench_count_ops") {
      auto b = ParseBool(name, value);
      if (!b.ok()) return b.status();
      flags.count_ops = *b;
    } else if (name == "torchbench_profile") {
      auto b = ParseBool(name, value);
      if (!b.ok()) return b.status();
      flags.profile = *b;
    } else if (name == "torchbench_profile_steps") {
      if (auto s = need_value(); !s.ok()) return s;
      int steps = 0;
      if (!absl::SimpleAtoi(*value, &steps) || steps <= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("--torchbench_profile_steps=", *value,
                         ": expected a positive number of steps"));
      }
      flags.profile_steps = steps;
      flags.profile = true;
    } else if (name == "torchbench_trace_dir") {
      if (auto s = need_value(); !s.ok()) return s;
      flags.trace_dir = *value;
      flags.profile = true;
    } else if (name == "torchbench_profile_shapes") {
      auto b = ParseBool(name, value);
      if (!b.ok()) return b.status();
      flags.profile_shapes = *b;
      flags.profile = flags.profile || *b;
    } else if (name == "torchbench_testonly_slow_op") {
      if (auto s = need_value(); !s.ok()) return s;
      if (auto spec = ParseSlowOp(*value); !spec.ok()) return spec.status();
      flags.testonly_slow_op = *value;
    } else if (name == "torchbench_op_coverage") {
      if (auto s = need_value(); !s.ok()) return s;
      flags.op_coverage = *value;
    } else if (name == "torchbench_weights") {
      if (auto s = need_value(); !s.ok()) return s;
      if (value->empty() || access(std::string(*value).c_str(), R_OK) != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--torchbench_weights=", *value, ": no readable file there"));
      }
      flags.weights = *value;
    } else if (name == "torchbench_channels_last") {
      auto b = ParseBool(name, value);
      if (!b.ok()) return b.status();
      flags.channels_last = *b;
    } else if (name == "torchbench_warmup_steps") {
      if (auto s = need_value(); !s.ok()) return s;
      if (!absl::SimpleAtoi(*value, &flags.warmup_steps) ||
          flags.warmup_steps < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("--torchbench_warmup_steps=", *value,
                         ": expected a non-negative integer"));
      }
    } else if (name == "torchbench_seed") {
      if (auto s = need_value(); !s.ok()) return s;
      if (!absl::SimpleAtoi(*value, &flags.seed)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--torchbench_seed=", *value, ": expected a non-negative integer"));
      }
    } else if (name == "torchbench_fail_on_error") {
      auto b = ParseBool(name, value);
      if (!b.ok()) return b.status();
      flags.fail_on_error = *b;
    } else if (name == "torchbench_host_malloc") {
      if (auto s = need_value(); !s.ok()) return s;
      auto policy = ParseHostMalloc(*value);
      if (!policy.ok()) return policy.status();
      flags.host_malloc = *policy;
    } else if (name == "torchbench_cpu_memory_counter") {
      auto b = ParseBool(name, value);
      if (!b.ok()) return b.status();
      flags.cpu_memory_counter = *b;
    } else if (name == "torchbench_list_models") {
      const std::string format = value.value_or("table");
      if (format != "table" && format != "json") {
        return absl::InvalidArgumentError(absl::StrCat(
            "--torchbench_list_models=", format, ": expected table or json"));
      }
      flags.list_models = format;
    } else if (name == "torchbench_isolate") {
      if (auto s = need_value(); !s.ok()) return s;
      if (*value != "process" && *value != "none") {
        return absl::InvalidArgumentError(absl::StrCat(
            "--torchbench_isolate=", *value, ": expected process or none"));
      }
      flags.isolate = *value == "process";
    } else if (name == "torchbench_instance_timeout") {
      if (auto s = need_value(); !s.ok()) return s;
      if (!absl::SimpleAtod(*value, &flags.instance_timeout) ||
          !(flags.instance_timeout >= 0)) {
        return absl::InvalidArgumentError(
            absl::StrCat("--torchbench_instance_timeout=", *value,
                         ": expected seconds >= 0 (0: no limit)"));
      }
    } else if (name == "torchbench_journal") {
      if (auto s = need_value(); !s.ok()) return s;
      flags.journal = *value;
    } else if (name == "torchbench_resume") {
      if (auto s = need_value(); !s.ok()) return s;
      flags.resume = *value;
    } else if (name == "torchbench_shard") {
      if (auto s = need_value(); !s.ok()) return s;
      auto shard = ParseShard(*value);
      if (!shard.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--torchbench_shard=", *value, ": ", shard.status().message()));
      }
      flags.shard = *shard;
    } else if (name == "torchbench_shard_costs") {
      if (auto s = need_value(); !s.ok()) return s;
      flags.shard_costs = *value;
    } else if (name == "torchbench_child_result") {
      if (auto s = need_value(); !s.ok()) return s;
      flags.child_result = *value;
    } else if (name == "torchbench_help") {
      flags.help = true;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown flag --", name, " (--torchbench_help lists the flags)"));
    }
  }
  *argc = kept;
  argv[kept] = nullptr;
  return flags;
}

std::string HarnessFlagsHelp() {
  return R"(torchbench flags (every --benchmark_* flag of Google Benchmark works too):
  --torchbench_device=cpu|cuda[:i]   device to run on (default: cuda when usable, else cpu)
  --torchbench_batch_sizes=1,8,32    batch sizes instead of each model's defaults
                                     (models with a fixed batch size keep theirs)
  --torchbench_precision=P          fp32 (default; PyTorch's math flags: cuDNN
                                     may use TF32, matmuls not), tf32 (both may),
                                     fp16 / bf16 (module and inputs converted),
                                     amp_fp16 / amp_bf16 (autocast; fp16 Train
                                     scales the loss where the model's TorchBench
                                     code does), or default (each model's
                                     TorchBench default: fp16 Eval for torchvision
                                     and timm on CUDA, ...; fp32 on the CPU)
  --torchbench_optimizer=default|foreach|single
                                     optimizer path: multi-tensor _foreach_ ops or
                                     a per-parameter loop (default: foreach on
                                     CUDA, single elsewhere, as PyTorch picks)
  --torchbench_count_ops             count ATen ops in one extra untimed step
                                     (counters aten_ops, optimizer_ops)
  --torchbench_profile               after each instance's timed loop, profile more
                                     steps with Kineto: aten_ops_per_step,
                                     would_sync_per_step and, on a GPU, busy, active,
                                     memcpy and idle shares (idle split host-wait /
                                     kernel-wait / other), kernels_per_step,
                                     syncs_per_step, memcpy_per_step
  --torchbench_profile_steps=K       steps in that pass (default 5; implies
                                     --torchbench_profile)
  --torchbench_trace_dir=DIR         also save each instance's Chrome trace (Perfetto,
                                     Holistic Trace Analysis) and top-k op tables
                                     in DIR (implies --torchbench_profile); the
                                     trace holds K+2 steps (the profiler's discarded
                                     start-up step, ProfilerStep#0..K-1 and #K,
                                     which HTA drops), the tables are per step over
                                     the K
  --torchbench_profile_shapes        the profiler also records each op's input
                                     shapes, dtypes and scalars (in the trace;
                                     implies --torchbench_profile)
  --torchbench_testonly_slow_op=aten::mm:0.2
                                     test-only: every call of that operator takes
                                     1.2x its time (checks tools/tb abtest)
  --torchbench_op_coverage=FILE      the operators each instance dispatches in one
                                     untimed step (after warm-up), by phase, to FILE
                                     (JSON lines; tools/tb coverage reads it), and
                                     ops_distinct* counters to its results
  --torchbench_channels_last         channels-last memory format for vision models
  --torchbench_weights=FILE          load every parameter and buffer of each selected
                                     instance from this safetensors file (the
                                     reference's state_dict names) once it is built
  --torchbench_warmup_steps=N        untimed steps before timing each instance (default 3)
  --torchbench_seed=N                seed for weights and inputs (default 1337)
  --torchbench_fail_on_error=false   exit 0 even when an instance errored
  --torchbench_cpu_memory_counter=false  do not count CPU tensor memory
  --torchbench_host_malloc=retain|glibc  retain (default): freed host memory stays in
                                     the process, so no step re-faults pages that
                                     glibc's trimming gave back; glibc: malloc as
                                     glibc and its MALLOC_* tunables set it
  --torchbench_list_models[=json]    list models with metadata and element counts, then exit
  --torchbench_isolate=process       run each instance in a child process: a crash,
                                     exit, hang or out-of-memory kill becomes that
                                     instance's error and the run goes on
  --torchbench_instance_timeout=S    kill an isolated instance after S seconds
                                     (default 3600; 0: no limit)
  --torchbench_journal=FILE          append each finished instance to FILE (JSON lines)
  --torchbench_resume=FILE           skip the instances FILE holds (reporting them from
                                     it) and append the others to it
  --torchbench_shard=I/N             run shard I (0-based) of N, balanced by cost
                                     (default: SLURM_ARRAY_TASK_ID/_COUNT, or
                                     JOB_COMPLETION_INDEX with TORCHBENCH_SHARD_COUNT)
  --torchbench_shard_costs=F.json    balance shards by a previous run's times
                                     (default: by parameter counts)
  --torchbench_help                  this text
Benchmarks are named <model>/<Train|Eval>/batch_size:<N>, e.g.
  --benchmark_filter='BERT.*Train'  --benchmark_out=run.json
Ctrl-C ends the current instance and still writes --benchmark_out with what
finished (exit status 130).
)";
}

}  // namespace torchbench
