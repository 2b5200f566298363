#include "program/flags.h"

#include <unistd.h>

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "program/machine_peak.h"
#include "program/slow_op.h"

namespace torchbench {
namespace {

constexpr absl::string_view kPrefix = "--torchbench_";
using Value = std::optional<std::string>;

absl::Status Invalid(const char* flag, const Value& value,
                     absl::string_view expected) {
  return absl::InvalidArgumentError(absl::StrCat(
      "--torchbench_", flag, "=", value.value_or(""), ": ", expected));
}

// The value of a flag that needs one, or InvalidArgument.
absl::StatusOr<std::string> Need(const char* flag, const Value& value) {
  if (!value || value->empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--torchbench_", flag, " needs a value (--torchbench_", flag, "=...)"));
  }
  return *value;
}

absl::StatusOr<bool> Bool(const char* flag, const Value& value) {
  if (!value || *value == "true" || *value == "1") return true;
  if (*value == "false" || *value == "0") return false;
  return Invalid(flag, value, "expected true or false");
}

// The table's parsers, one per kind of value.
#define TB_STRING(flag, field)                          \
  [](const Value& v, HarnessFlags* f) -> absl::Status { \
    auto s = Need(flag, v);                             \
    if (s.ok()) f->field = *s;                          \
    return s.status();                                  \
  }
#define TB_SWITCH(flag, field)                          \
  [](const Value& v, HarnessFlags* f) -> absl::Status { \
    auto b = Bool(flag, v);                             \
    if (b.ok()) f->field = *b;                          \
    return b.status();                                  \
  }

absl::Status ParseBatchSizes(const Value& v, HarnessFlags* f) {
  auto text = Need("batch_sizes", v);
  if (!text.ok()) return text.status();
  f->batch_sizes.clear();
  for (const auto& piece : absl::StrSplit(*text, ',')) {
    int64_t size = 0;
    if (!absl::SimpleAtoi(piece, &size) || size <= 0) {
      return Invalid(
          "batch_sizes", v,
          absl::StrCat("'", piece, "' is not a positive integer batch size"));
    }
    f->batch_sizes.push_back(size);
  }
  return absl::OkStatus();
}

absl::Status ParsePrecisionFlag(const Value& v, HarnessFlags* f) {
  auto text = Need("precision", v);
  if (!text.ok()) return text.status();
  const auto precision = ParsePrecision(*text);
  if (!precision) {
    return Invalid("precision", v,
                   "expected fp32, tf32, fp16, bf16, amp_fp16, amp_bf16 or "
                   "default");
  }
  f->precision = *precision;
  return absl::OkStatus();
}

absl::Status ParseOptimizer(const Value& v, HarnessFlags* f) {
  auto text = Need("optimizer", v);
  if (!text.ok()) return text.status();
  if (*text == "default") {
    f->optimizer = OptimizerPath::kDefault;
  } else if (*text == "foreach") {
    f->optimizer = OptimizerPath::kForeach;
  } else if (*text == "single") {
    f->optimizer = OptimizerPath::kSingle;
  } else {
    return Invalid("optimizer", v, "expected default, foreach or single");
  }
  return absl::OkStatus();
}

absl::Status ParseProfileSteps(const Value& v, HarnessFlags* f) {
  auto text = Need("profile_steps", v);
  if (!text.ok()) return text.status();
  if (!absl::SimpleAtoi(*text, &f->profile_steps) || f->profile_steps <= 0) {
    return Invalid("profile_steps", v, "expected a positive number of steps");
  }
  f->profile = true;
  return absl::OkStatus();
}

absl::Status ParseTraceDir(const Value& v, HarnessFlags* f) {
  auto text = Need("trace_dir", v);
  if (!text.ok()) return text.status();
  f->trace_dir = *text;
  f->profile = true;
  return absl::OkStatus();
}

absl::Status ParseProfileShapes(const Value& v, HarnessFlags* f) {
  auto b = Bool("profile_shapes", v);
  if (!b.ok()) return b.status();
  f->profile_shapes = *b;
  f->profile = f->profile || *b;
  return absl::OkStatus();
}

absl::Status ParseSlowOpFlag(const Value& v, HarnessFlags* f) {
  auto text = Need("testonly_slow_op", v);
  if (!text.ok()) return text.status();
  if (auto spec = ParseSlowOp(*text); !spec.ok()) return spec.status();
  f->testonly_slow_op = *text;
  return absl::OkStatus();
}

absl::Status ParseWeights(const Value& v, HarnessFlags* f) {
  auto text = Need("weights", v);
  if (!text.ok()) return text.status();
  if (access(text->c_str(), R_OK) != 0) {
    return Invalid("weights", v, "no readable file there");
  }
  f->weights = *text;
  return absl::OkStatus();
}

absl::Status ParseBackendFlag(const Value& v, HarnessFlags* f) {
  auto text = Need("backend", v);
  if (!text.ok()) return text.status();
  const std::optional<Backend> backend = ParseBackend(*text);
  if (!backend)
    return Invalid("backend", v, "expected eager, aoti or torchscript");
  f->backend = *backend;
  return absl::OkStatus();
}

absl::Status ParseCompiled(const Value& v, HarnessFlags* f) {
  auto text = Need("compiled", v);
  if (!text.ok()) return text.status();
  if (access(text->c_str(), R_OK | X_OK) != 0) {
    return Invalid("compiled", v, "no readable directory there");
  }
  f->compiled = *text;
  return absl::OkStatus();
}

// The flags that only go together.
absl::Status CheckCombinations(const HarnessFlags& f) {
  if (f.backend != Backend::kEager && f.compiled.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--torchbench_backend=", BackendName(f.backend),
        " needs --torchbench_compiled=DIR, the packages tools/tb compile "
        "made"));
  }
  if (f.backend == Backend::kEager && !f.compiled.empty()) {
    return absl::InvalidArgumentError(
        "--torchbench_compiled needs --torchbench_backend=aoti or "
        "torchscript (eager runs the ports)");
  }
  if (f.backend != Backend::kEager && !f.weights.empty()) {
    return absl::InvalidArgumentError(
        "--torchbench_weights loads weights into the eager ports; a compiled "
        "package carries its own");
  }
  if (f.backend != Backend::kEager && f.precision != Precision::kFp32 &&
      f.precision != Precision::kDefault) {
    return absl::InvalidArgumentError(
        absl::StrCat("--torchbench_backend=", BackendName(f.backend),
                     " runs fp32 packages; --torchbench_precision=",
                     PrecisionName(f.precision), " has none"));
  }
  return absl::OkStatus();
}

absl::Status ParseWarmupSteps(const Value& v, HarnessFlags* f) {
  auto text = Need("warmup_steps", v);
  if (!text.ok()) return text.status();
  if (!absl::SimpleAtoi(*text, &f->warmup_steps) || f->warmup_steps < 0) {
    return Invalid("warmup_steps", v, "expected a non-negative integer");
  }
  return absl::OkStatus();
}

absl::Status ParseSeed(const Value& v, HarnessFlags* f) {
  auto text = Need("seed", v);
  if (!text.ok()) return text.status();
  if (!absl::SimpleAtoi(*text, &f->seed)) {
    return Invalid("seed", v, "expected a non-negative integer");
  }
  return absl::OkStatus();
}

absl::Status ParseHostMallocFlag(const Value& v, HarnessFlags* f) {
  auto text = Need("host_malloc", v);
  if (!text.ok()) return text.status();
  auto policy = ParseHostMalloc(*text);
  if (!policy.ok()) return policy.status();
  f->host_malloc = *policy;
  return absl::OkStatus();
}

absl::Status ParseListModels(const Value& v, HarnessFlags* f) {
  const std::string format = v.value_or("table");
  if (format != "table" && format != "json") {
    return Invalid("list_models", v, "expected table or json");
  }
  f->list_models = format;
  return absl::OkStatus();
}

absl::Status ParseIsolate(const Value& v, HarnessFlags* f) {
  auto text = Need("isolate", v);
  if (!text.ok()) return text.status();
  if (*text != "process" && *text != "none") {
    return Invalid("isolate", v, "expected process or none");
  }
  f->isolate = *text == "process";
  return absl::OkStatus();
}

absl::Status ParseInstanceTimeout(const Value& v, HarnessFlags* f) {
  auto text = Need("instance_timeout", v);
  if (!text.ok()) return text.status();
  if (!absl::SimpleAtod(*text, &f->instance_timeout) ||
      !(f->instance_timeout >= 0)) {
    return Invalid("instance_timeout", v,
                   "expected seconds >= 0 (0: no limit)");
  }
  return absl::OkStatus();
}

absl::Status ParseShardFlag(const Value& v, HarnessFlags* f) {
  auto text = Need("shard", v);
  if (!text.ok()) return text.status();
  auto shard = ParseShard(*text);
  if (!shard.ok()) return Invalid("shard", v, shard.status().message());
  f->shard = *shard;
  return absl::OkStatus();
}

absl::Status ParsePeaksFlag(const Value& v, HarnessFlags* f) {
  auto text = Need("peaks", v);
  if (!text.ok()) return text.status();
  if (const auto parsed = ParsePeaks(*text); !parsed.ok()) {
    return Invalid("peaks", v, parsed.status().message());
  }
  f->peaks = *text;
  f->count_flops = true;
  return absl::OkStatus();
}

absl::Status ParseHelp(const Value& v, HarnessFlags* f) {
  const std::string format = v.value_or("text");
  if (format != "text" && format != "markdown") {
    return Invalid("help", v, "expected text or markdown");
  }
  f->help = format;
  return absl::OkStatus();
}

constexpr FlagSpec kFlags[] = {
    {"device", "cpu|cuda[:i]", "cuda when usable, else cpu",
     "The device to run on; cuda without a usable GPU is one line and exit "
     "status 2.",
     TB_STRING("device", device)},
    {"batch_sizes", "1,8,32", "each model's own",
     "Batch sizes instead of each model's defaults. Fixed-batch models keep "
     "theirs, and a size below a model's smallest valid batch runs at that "
     "batch, each with a note.",
     ParseBatchSizes},
    {"precision", "fp32|tf32|fp16|bf16|amp_fp16|amp_bf16|default", "fp32",
     "fp32: PyTorch's own math flags, as TorchBench's fp32 (on CUDA cuDNN may "
     "use TF32, matmuls do not). tf32: both may. fp16, bf16: module and "
     "inputs converted. amp_fp16, amp_bf16: autocast (fp16 Train scales the "
     "loss where the model's TorchBench code does). default: each model's "
     "TorchBench default on the device (fp16 Eval for the torchvision and "
     "timm classifiers on CUDA, ...; fp32 on the CPU). A precision a model "
     "cannot run is skipped with a note.",
     ParsePrecisionFlag},
    {"optimizer", "default|foreach|single", "default",
     "The optimizers' multi-tensor (_foreach_) or per-parameter path; "
     "default picks as PyTorch does (foreach on CUDA, single elsewhere).",
     ParseOptimizer},
    {"count_ops", "", "off",
     "One extra untimed step per instance counts the ATen operators it "
     "issues (counters aten_ops, optimizer_ops).",
     TB_SWITCH("count_ops", count_ops)},
    {"flops", "", "off",
     "One extra untimed step per instance counts its FLOPs (matrix products, "
     "convolutions, attention, forward and backward, with "
     "torch.utils.flop_counter's formulas; counters flops_per_step, "
     "flops_forward, flops_backward, flops_optimizer), and the run measures "
     "the machine's GEMM peak per dtype and its copy bandwidth at start-up "
     "(in the context): each instance adds flop_rate (achieved FLOP/s) and "
     "peak_share (the step at the measured peak over the step measured). "
     "Never counted inside a timed step.",
     TB_SWITCH("flops", count_flops)},
    {"peaks", "float32=F,bfloat16=F,copy=B,threads=N", "measured",
     "The machine's peaks --torchbench_flops divides by, instead of "
     "measuring them (the context's machine_peaks of an earlier run gives "
     "two runs one yardstick); implies --torchbench_flops.",
     ParsePeaksFlag},
    {"profile", "", "off",
     "After each instance's measured repetitions, one discarded and K more "
     "steps under the Kineto profiler add per-step counters "
     "(aten_ops_per_step, would_sync_per_step, matmul_conv_share: the "
     "step's share in matrix products, convolutions and attention; on a GPU "
     "busy, active, memcpy and idle shares, kernels_per_step, syncs_per_step, "
     "memcpy_per_step). Several instances run each in a process of its own "
     "(as --torchbench_isolate=process), so no timed loop follows a "
     "profiler session.",
     TB_SWITCH("profile", profile)},
    {"profile_steps", "K", "5",
     "Steps in the profiling pass; implies --torchbench_profile.",
     ParseProfileSteps},
    {"trace_dir", "DIR", "",
     "Also save each instance's Chrome trace (Perfetto, Holistic Trace "
     "Analysis) and top-k operator tables in DIR; implies "
     "--torchbench_profile. The trace holds K+2 steps (the profiler's "
     "discarded start-up step, the K, and one more that HTA drops); the "
     "tables are per step over the K.",
     ParseTraceDir},
    {"profile_shapes", "", "off",
     "The profiler also records each operator's input shapes, dtypes and "
     "scalars (in the trace; tools/tb abtest's micro-benchmarks use them); "
     "implies --torchbench_profile.",
     ParseProfileShapes},
    {"op_coverage", "FILE", "",
     "The operators each instance dispatches in one untimed step after "
     "warm-up (by phase, top level or nested, with call counts and dispatch "
     "keys), appended to FILE as JSON lines after the registry of every "
     "operator, and ops_distinct* counters in its results; tools/tb coverage "
     "reads FILE.",
     TB_STRING("op_coverage", op_coverage)},
    {"channels_last", "", "off",
     "Channels-last memory format for the vision models.",
     TB_SWITCH("channels_last", channels_last)},
    {"weights", "FILE", "",
     "Every selected instance loads its parameters and buffers from this "
     "safetensors file (the reference's state_dict names, non-persistent "
     "buffers too) before warm-up; a file that does not fit fails that "
     "instance with the keys that differ.",
     ParseWeights},
    {"backend", "eager|aoti|torchscript", "eager",
     "How the Eval instances run: the C++ ports (eager), or the packages "
     "tools/tb compile made of TorchBench's own Python models, an "
     "AOTInductor .pt2 (aoti) or a TorchScript module (torchscript), loaded "
     "from --torchbench_compiled. Names stay <model>/Eval/batch_size:N and "
     "the label says backend:, so compare.py compares an eager run with a "
     "compiled one. Train instances are skipped (packages are forward-only). "
     "A package's first outputs are checked against Python eager's and, "
     "where the port takes the same inputs, against the port's; a package "
     "missing, for another batch, torch, CPU or thread count fails that "
     "instance with one line.",
     ParseBackendFlag},
    {"compiled", "DIR", "",
     "The packages' directory for --torchbench_backend=aoti|torchscript "
     "(tools/tb compile -o DIR).",
     ParseCompiled},
    {"warmup_steps", "N", "3",
     "Untimed steps after building each instance (3, as TorchBench's "
     "run.py).",
     ParseWarmupSteps},
    {"seed", "N", "1337", "Seed for weights and inputs (TorchBench's).",
     ParseSeed},
    {"fail_on_error", "true|false", "true",
     "false: exit 0 even when an instance errored.",
     TB_SWITCH("fail_on_error", fail_on_error)},
    {"cpu_memory_counter", "true|false", "true",
     "false: leave LibTorch's CPU allocator alone (no peak_mem on the CPU).",
     TB_SWITCH("cpu_memory_counter", cpu_memory_counter)},
    {"host_malloc", "retain|glibc", "retain",
     "retain: memory a step frees stays in the process for the next step, "
     "as the caching allocator keeps it on a GPU, so no step re-faults pages "
     "that glibc's trimming gave back. glibc: malloc as glibc and its "
     "MALLOC_* tunables set it.",
     ParseHostMallocFlag},
    {"list_models", "table|json", "table",
     "Every model's metadata and parameter and buffer element counts (the "
     "table of models/README.md), then exit.",
     ParseListModels},
    {"isolate", "process|none", "none",
     "process: each instance in a child process, so a crash, exit, hang or "
     "out-of-memory kill is that instance's error and the run goes on.",
     ParseIsolate},
    {"instance_timeout", "S", "3600",
     "Kill an isolated instance still running after S seconds and report it "
     "(0: no limit).",
     ParseInstanceTimeout},
    {"journal", "FILE", "",
     "Append each finished instance to FILE (JSON lines), so an interrupted "
     "run loses nothing.",
     TB_STRING("journal", journal)},
    {"resume", "FILE", "",
     "Report the instances FILE holds as if they had just run, run the "
     "others and append them to it.",
     TB_STRING("resume", resume)},
    {"shard", "I/N", "from Slurm or Kubernetes",
     "Run shard I (0-based) of N, balanced by cost (default: "
     "SLURM_ARRAY_TASK_ID and _COUNT, or JOB_COMPLETION_INDEX with "
     "TORCHBENCH_SHARD_COUNT).",
     ParseShardFlag},
    {"shard_costs", "F.json", "parameter counts",
     "Balance shards by a previous run's times.",
     TB_STRING("shard_costs", shard_costs)},
    {"testonly_slow_op", "aten::mm:0.2", "",
     "Test only: every call of that operator takes 1.2 times its time "
     "(checks tools/tb abtest).",
     ParseSlowOpFlag},
    {"help", "text|markdown", "text",
     "This list (markdown: the table of tools/README.md).", ParseHelp},
    {"child_result", "FILE", "",
     "Internal: an isolated child journals its one instance to FILE.",
     TB_STRING("child_result", child_result), /*internal=*/true},
};

#undef TB_STRING
#undef TB_SWITCH

const FlagSpec* FindFlag(absl::string_view name) {
  for (const FlagSpec& flag : kFlags) {
    if (name == flag.name) return &flag;
  }
  return nullptr;
}

std::string Usage(const FlagSpec& flag) {
  return *flag.value == '\0'
             ? absl::StrCat(kPrefix, flag.name)
             : absl::StrCat(kPrefix, flag.name, "=", flag.value);
}

// Appends `text` wrapped at `width` columns, each line after the first
// indented by `indent`.
void AppendWrapped(std::string* out, absl::string_view text, size_t indent,
                   size_t column, size_t width) {
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (column + 1 + word.size() > width && column > indent) {
      absl::StrAppend(out, "\n", std::string(indent, ' '));
      column = indent;
    } else if (column > indent) {
      out->push_back(' ');
      ++column;
    }
    absl::StrAppend(out, word);
    column += word.size();
  }
}

}  // namespace

std::span<const FlagSpec> FlagTable() { return kFlags; }

absl::StatusOr<HarnessFlags> ParseHarnessFlags(int* argc, char** argv) {
  HarnessFlags flags;
  int kept = 1;
  for (int i = 1; i < *argc; ++i) {
    const absl::string_view arg = argv[i];
    if (!absl::StartsWith(arg, kPrefix)) {
      argv[kept++] = argv[i];
      continue;
    }
    const size_t eq = arg.find('=');
    const absl::string_view name = arg.substr(
        kPrefix.size(), eq == absl::string_view::npos ? absl::string_view::npos
                                                      : eq - kPrefix.size());
    const FlagSpec* flag = FindFlag(name);
    if (flag == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag --torchbench_", name,
                       " (--torchbench_help lists the flags)"));
    }
    Value value;
    if (eq != absl::string_view::npos) value = std::string(arg.substr(eq + 1));
    if (absl::Status s = flag->parse(value, &flags); !s.ok()) return s;
  }
  if (absl::Status s = CheckCombinations(flags); !s.ok()) return s;
  *argc = kept;
  argv[kept] = nullptr;
  return flags;
}

std::string HarnessFlagsHelp() {
  constexpr size_t kColumn = 37;
  constexpr size_t kWidth = 100;
  std::string out =
      "torchbench flags (every --benchmark_* flag of Google Benchmark works "
      "too):\n";
  for (const FlagSpec& flag : kFlags) {
    if (flag.internal) continue;
    const std::string usage = absl::StrCat("  ", Usage(flag));
    if (usage.size() + 1 >= kColumn) {
      absl::StrAppend(&out, usage, "\n", std::string(kColumn, ' '));
    } else {
      absl::StrAppend(&out, usage, std::string(kColumn - usage.size(), ' '));
    }
    std::string help(flag.help);
    if (*flag.default_value != '\0') {
      absl::StrAppend(&help, " (default: ", flag.default_value, ")");
    }
    AppendWrapped(&out, help, kColumn, kColumn, kWidth);
    out += "\n";
  }
  out +=
      "Benchmarks are named <model>/<Train|Eval>/batch_size:<N>, e.g.\n"
      "  --benchmark_filter='BERT.*Train'  --benchmark_out=run.json\n"
      "Ctrl-C ends the current instance and still writes --benchmark_out "
      "with what\nfinished (exit status 130).\n";
  return out;
}

std::string HarnessFlagsMarkdown() {
  std::string out =
      "| flag | default | what it does |\n"
      "|---|---|---|\n";
  for (const FlagSpec& flag : kFlags) {
    if (flag.internal) continue;
    absl::StrAppend(&out, "| `",
                    absl::StrReplaceAll(Usage(flag), {{"|", "\\|"}}), "` | ",
                    flag.default_value, " | ", flag.help, " |\n");
  }
  return out;
}

}  // namespace torchbench
