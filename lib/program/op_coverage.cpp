#include "program/op_coverage.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/ParallelGuard.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "json.h"
#include "program/atomic_file.h"
#include "program/record_scopes.h"

namespace torchbench {
namespace {

std::atomic<OpCoverage*> active{nullptr};
std::atomic<uint64_t> generations{0};

// A thread's state under the active recorder: operators open (nesting), and
// engine nodes and optimizer steps open (phase).
struct ThreadState {
  uint64_t generation = 0;
  int depth = 0;
  int engine_nodes = 0;
  int optimizer_scopes = 0;
};
thread_local ThreadState state;

ThreadState& StateFor(uint64_t generation) {
  if (state.generation != generation) state = {generation, 0, 0, 0};
  return state;
}

void AddKeys(const c10::IValue& v, c10::DispatchKeySet* keys) {
  if (v.isTensor()) {
    if (v.toTensor().defined()) *keys = *keys | v.toTensor().key_set();
  } else if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorVector()) {
      if (t.defined()) *keys = *keys | t.key_set();
    }
  } else if (v.isList()) {  // Optional tensors (index's) too.
    for (const c10::IValue& e : v.toListRef()) AddKeys(e, keys);
  }
}

}  // namespace

const char* OpPhaseName(OpPhase phase) {
  switch (phase) {
    case OpPhase::kBackward:
      return "backward";
    case OpPhase::kOptimizer:
      return "optimizer";
    case OpPhase::kForward:
      break;
  }
  return "forward";
}

struct OpCoverageCallbacks {
  static std::unique_ptr<at::ObserverContext> Start(
      const at::RecordFunction& fn) {
    OpCoverage* c = active.load(std::memory_order_acquire);
    if (c == nullptr) return nullptr;
    ThreadState& s = StateFor(c->generation_);
    if (IsOptimizerStep(fn)) {
      ++s.optimizer_scopes;
      return nullptr;
    }
    if (IsAutogradEngineNode(fn)) {
      ++s.engine_nodes;
      return nullptr;
    }
    if (fn.scope() != at::RecordScope::FUNCTION) return nullptr;
    const std::optional<c10::OperatorName> name = fn.operator_name();
    if (!name.has_value()) return nullptr;  // not a dispatcher operator
    const OpPhase phase = s.engine_nodes > 0       ? OpPhase::kBackward
                          : s.optimizer_scopes > 0 ? OpPhase::kOptimizer
                                                   : OpPhase::kForward;
    // An intra-op worker runs inside an operator of another thread.
    const bool top_level = s.depth == 0 && !c10::ParallelGuard::is_enabled();
    ++s.depth;
    // The keys the dispatcher computes: the arguments' keys with this
    // thread's included keys added and its excluded ones removed.
    c10::DispatchKeySet keys;
    for (const c10::IValue& v : fn.inputs()) AddKeys(v, &keys);
    std::string dispatch = "BackendSelect";
    std::string backend;
    if (!keys.empty()) {
      const c10::impl::LocalDispatchKeySet local =
          c10::impl::tls_local_dispatch_key_set();
      keys = (keys | local.included_) - local.excluded_;
      if (!keys.empty()) {
        dispatch = c10::toString(keys.highestPriorityTypeId());
        const c10::DispatchKey b = c10::highestPriorityBackendTypeId(keys);
        if (b != c10::DispatchKey::Undefined) backend = c10::toString(b);
      }
    }
    c->Record({name->name, name->overload_name, phase, top_level}, dispatch,
              backend);
    return nullptr;
  }

  static void End(const at::RecordFunction& fn, at::ObserverContext*) {
    OpCoverage* c = active.load(std::memory_order_acquire);
    if (c == nullptr) return;
    ThreadState& s = StateFor(c->generation_);
    if (IsOptimizerStep(fn)) {
      if (s.optimizer_scopes > 0) --s.optimizer_scopes;
    } else if (IsAutogradEngineNode(fn)) {
      if (s.engine_nodes > 0) --s.engine_nodes;
    } else if (fn.scope() == at::RecordScope::FUNCTION &&
               fn.operator_name().has_value() && s.depth > 0) {
      --s.depth;
    }
  }
};

OpCoverage::OpCoverage() : generation_(++generations) {
  OpCoverage* expected = nullptr;
  TORCH_CHECK(active.compare_exchange_strong(expected, this),
              "OpCoverage: one recorder at a time");
  handle_ = at::addGlobalCallback(
      at::RecordFunctionCallback(&OpCoverageCallbacks::Start,
                                 &OpCoverageCallbacks::End)
          .needsInputs(true)
          .scopes({at::RecordScope::FUNCTION,
                   at::RecordScope::BACKWARD_FUNCTION,
                   at::RecordScope::USER_SCOPE}));
}

OpCoverage::~OpCoverage() {
  at::removeCallback(handle_);
  active.store(nullptr, std::memory_order_release);
}

void OpCoverage::Record(Key key, const std::string& dispatch,
                        const std::string& backend) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, inserted] = ops_.try_emplace(key);
  CoveredOp& op = it->second;
  if (inserted) {
    op.op = std::get<0>(key);
    op.overload = std::get<1>(key);
    op.phase = std::get<2>(key);
    op.top_level = std::get<3>(key);
  }
  ++op.calls;
  op.keys.insert(dispatch);
  if (!backend.empty()) op.keys.insert(backend);
}

std::vector<CoveredOp> OpCoverage::ops() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<CoveredOp> out;
  out.reserve(ops_.size());
  for (const auto& [key, op] : ops_) out.push_back(op);
  return out;
}

std::vector<std::string> RegisteredOperators() {
  std::vector<std::string> names;
  for (const c10::OperatorName& n :
       c10::Dispatcher::singleton().getAllOpNames()) {
    names.push_back(n.overload_name.empty()
                        ? n.name
                        : absl::StrCat(n.name, ".", n.overload_name));
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::map<std::string, double> CoverageCounters(
    const std::vector<CoveredOp>& ops) {
  std::set<std::string> names, overloads, top_level;
  std::map<OpPhase, std::set<std::string>> by_phase;
  double calls = 0;
  for (const CoveredOp& op : ops) {
    names.insert(op.op);
    overloads.insert(absl::StrCat(op.op, ".", op.overload));
    if (op.top_level) top_level.insert(op.op);
    by_phase[op.phase].insert(op.op);
    calls += static_cast<double>(op.calls);
  }
  auto size = [](const std::set<std::string>& s) {
    return static_cast<double>(s.size());
  };
  return {{"ops_distinct", size(names)},
          {"ops_distinct_overloads", size(overloads)},
          {"ops_distinct_top_level", size(top_level)},
          {"ops_distinct_forward", size(by_phase[OpPhase::kForward])},
          {"ops_distinct_backward", size(by_phase[OpPhase::kBackward])},
          {"ops_distinct_optimizer", size(by_phase[OpPhase::kOptimizer])},
          {"ops_calls", calls}};
}

std::string CoverageRegistryLine(const std::string& libtorch_version,
                                 const std::string& device,
                                 const std::vector<std::string>& ops) {
  std::string line = absl::StrCat(
      "{\"registry\": {\"libtorch_version\": ", json::Quote(libtorch_version),
      ", \"device\": ", json::Quote(device), ", \"ops\": [");
  for (size_t i = 0; i < ops.size(); ++i) {
    absl::StrAppend(&line, i ? ", " : "", json::Quote(ops[i]));
  }
  absl::StrAppend(&line, "]}}");
  return line;
}

std::string CoverageInstanceLine(const CoverageInstance& instance,
                                 const std::vector<CoveredOp>& ops) {
  std::string line = absl::StrCat(
      "{\"instance\": ", json::Quote(instance.instance),
      ", \"model\": ", json::Quote(instance.model),
      ", \"domain\": ", json::Quote(instance.domain),
      ", \"mode\": ", json::Quote(instance.mode),
      ", \"batch_size\": ", instance.batch_size,
      ", \"device\": ", json::Quote(instance.device),
      ", \"precision\": ", json::Quote(instance.precision), ", \"ops\": [");
  for (size_t i = 0; i < ops.size(); ++i) {
    const CoveredOp& op = ops[i];
    absl::StrAppend(&line, i ? ", " : "", "{\"op\": ", json::Quote(op.op),
                    ", \"overload\": ", json::Quote(op.overload),
                    ", \"phase\": ", json::Quote(OpPhaseName(op.phase)),
                    ", \"top_level\": ", op.top_level ? "true" : "false",
                    ", \"calls\": ", op.calls, ", \"keys\": [");
    bool first = true;
    for (const std::string& k : op.keys) {
      absl::StrAppend(&line, first ? "" : ", ", json::Quote(k));
      first = false;
    }
    absl::StrAppend(&line, "]}");
  }
  absl::StrAppend(&line, "]}");
  return line;
}

absl::Status AppendCoverageLine(const std::string& path,
                                const std::string& line, bool truncate) {
  const std::string flag = absl::StrCat("--torchbench_op_coverage=", path);
  if (truncate) {
    // The registry line starts the file: renamed into place, so a kill
    // leaves the previous file or this line, never a part of it.
    return WriteFileAtomically(path, line + "\n",
                               "the --torchbench_op_coverage file");
  }
  IgnoreFileSizeSignal();
  const int fd =
      ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": cannot open it: ", ErrnoText(errno)));
  }
  // Isolated children append one after another, and a child killed
  // mid-line leaves a torn tail: under the lock, it is cut off before this
  // line, which then starts a line of its own.
  auto locked = LockFile(fd, path, /*wait=*/true);
  absl::Status status = locked.status();
  if (status.ok()) {
    auto tail = CutTornTail(fd, path, [](const std::string& torn) {
      return json::Parse(torn).ok();
    });
    status = tail.status();
    if (tail.ok() && tail->bytes > 0) {
      std::cerr << "torchbench: note: " << flag << ": cut off its last "
                << tail->bytes
                << " bytes, a line cut short when the process writing it "
                   "died\n";
    }
  }
  if (status.ok()) {
    status = WriteWholeLine(fd, path, line + "\n", *locked, /*sync=*/false);
  }
  ::close(fd);
  if (status.ok()) return status;
  return absl::InternalError(absl::StrCat(flag, ": ", status.message()));
}

}  // namespace torchbench
