#include "program/trace_analysis.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_map>

namespace torchbench {
namespace {

constexpr std::string_view kStepPrefix = "ProfilerStep#";
constexpr std::string_view kOptimizerPrefix = "Optimizer.step#";

bool StartsWith(const std::string& s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

bool IsDeviceEvent(TraceEventKind k) {
  return k == TraceEventKind::kKernel || k == TraceEventKind::kMemcpy ||
         k == TraceEventKind::kMemset;
}

bool IsHostNestingEvent(TraceEventKind k) {
  return k == TraceEventKind::kAtenOp ||
         k == TraceEventKind::kBackwardFunction ||
         k == TraceEventKind::kUserScope;
}

enum class Phase { kForward, kBackward, kOptimizer };

// What a host event inherits from the events enclosing it on its thread.
struct HostInfo {
  int step = -1;
  bool in_aten = false;  // some enclosing event is an ATen op
  bool in_sync = false;  // some enclosing event is a would-sync op
  Phase phase = Phase::kForward;
  int64_t children_ns = 0;  // inclusive time of direct children
};

struct Steps {
  std::vector<std::pair<int64_t, int64_t>> spans;  // host [start, end]

  // The step whose scope holds t, or -1.
  int Holding(int64_t t) const {
    auto it =
        std::upper_bound(spans.begin(), spans.end(), t,
                         [](int64_t v, const std::pair<int64_t, int64_t>& s) {
                           return v < s.first;
                         });
    if (it == spans.begin()) return -1;
    --it;
    return t <= it->second ? static_cast<int>(it - spans.begin()) : -1;
  }

  // The last step started at or before t (device work of a step may run on
  // after its host scope ended), or -1.
  int StartedBefore(int64_t t) const {
    auto it =
        std::upper_bound(spans.begin(), spans.end(), t,
                         [](int64_t v, const std::pair<int64_t, int64_t>& s) {
                           return v < s.first;
                         });
    return static_cast<int>(it - spans.begin()) - 1;
  }
};

std::vector<OpStat> Sorted(std::map<std::string, OpStat> by_name) {
  std::vector<OpStat> rows;
  rows.reserve(by_name.size());
  for (auto& [name, stat] : by_name) rows.push_back(std::move(stat));
  std::stable_sort(
      rows.begin(), rows.end(),
      [](const OpStat& a, const OpStat& b) { return a.self_ns > b.self_ns; });
  return rows;
}

PhaseStat& PhaseOf(TraceSummary& s, Phase p) {
  switch (p) {
    case Phase::kBackward:
      return s.backward;
    case Phase::kOptimizer:
      return s.optimizer;
    case Phase::kForward:
      break;
  }
  return s.forward;
}

}  // namespace

int64_t UnionLength(std::vector<std::pair<int64_t, int64_t>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  int64_t total = 0;
  bool open = false;
  int64_t cur_start = 0;
  int64_t cur_end = 0;
  for (const auto& [start, end] : intervals) {
    if (end <= start) continue;
    if (open && start <= cur_end) {
      cur_end = std::max(cur_end, end);
      continue;
    }
    if (open) total += cur_end - cur_start;
    cur_start = start;
    cur_end = end;
    open = true;
  }
  if (open) total += cur_end - cur_start;
  return total;
}

bool IsWouldSyncOp(const std::string& name) {
  // Each copies a value or a data-dependent size to the host: item() and
  // bool() reach _local_scalar_dense; boolean indexing reaches nonzero.
  static const char* const kOps[] = {"aten::_local_scalar_dense",
                                     "aten::nonzero",
                                     "aten::masked_select",
                                     "aten::_unique2",
                                     "aten::unique_dim",
                                     "aten::unique_consecutive",
                                     "aten::equal",
                                     "aten::repeat_interleave"};
  for (const char* op : kOps) {
    if (name == op) return true;
  }
  return false;
}

bool IsBlockingRuntimeCall(const std::string& name) {
  static const char* const kCalls[] = {
      "cudaDeviceSynchronize", "cudaStreamSynchronize",
      "cudaEventSynchronize",  "cudaMemcpy",
      "cuCtxSynchronize",      "cuStreamSynchronize",
      "cuEventSynchronize",    "cuMemcpyDtoH_v2",
      "cuMemcpyHtoD_v2"};
  for (const char* call : kCalls) {
    if (name == call) return true;
  }
  return false;
}

TraceSummary AnalyzeTrace(const std::vector<TraceEvent>& events,
                          int max_steps) {
  TraceSummary s;
  Steps steps;
  for (const TraceEvent& e : events) {
    if (e.kind == TraceEventKind::kUserScope &&
        StartsWith(e.name, kStepPrefix)) {
      steps.spans.emplace_back(e.start_ns, e.end_ns);
    }
  }
  std::sort(steps.spans.begin(), steps.spans.end());
  const int n_steps =
      max_steps < 0
          ? static_cast<int>(steps.spans.size())
          : std::min<int>(max_steps, static_cast<int>(steps.spans.size()));
  s.steps = n_steps;
  if (n_steps == 0) return s;
  auto counted = [&](int step) { return step >= 0 && step < n_steps; };

  // Host nesting, per thread: sorted by start, outer (longer) first.
  std::vector<size_t> host;
  for (size_t i = 0; i < events.size(); ++i) {
    if (IsHostNestingEvent(events[i].kind)) host.push_back(i);
  }
  std::sort(host.begin(), host.end(), [&](size_t a, size_t b) {
    const TraceEvent& x = events[a];
    const TraceEvent& y = events[b];
    if (x.thread != y.thread) return x.thread < y.thread;
    if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
    return x.end_ns > y.end_ns;
  });
  std::unordered_map<size_t, HostInfo> info;
  info.reserve(host.size());
  std::vector<size_t> stack;
  uint64_t thread = 0;
  for (size_t i : host) {
    const TraceEvent& e = events[i];
    if (stack.empty() || e.thread != thread) {
      stack.clear();
      thread = e.thread;
    }
    while (!stack.empty() && events[stack.back()].end_ns <= e.start_ns) {
      stack.pop_back();
    }
    HostInfo h;
    if (!stack.empty()) {
      const TraceEvent& parent = events[stack.back()];
      HostInfo& p = info[stack.back()];
      p.children_ns += e.end_ns - e.start_ns;
      h.in_aten = p.in_aten || parent.kind == TraceEventKind::kAtenOp;
      h.in_sync = p.in_sync || (parent.kind == TraceEventKind::kAtenOp &&
                                IsWouldSyncOp(parent.name));
      h.phase = p.phase;
      if (parent.kind == TraceEventKind::kBackwardFunction &&
          h.phase == Phase::kForward) {
        h.phase = Phase::kBackward;
      }
      if (parent.kind == TraceEventKind::kUserScope &&
          StartsWith(parent.name, kOptimizerPrefix)) {
        h.phase = Phase::kOptimizer;
      }
    }
    h.step = steps.Holding(e.start_ns);
    info[i] = h;
    stack.push_back(i);
  }

  std::map<std::string, OpStat> by_host;
  std::unordered_map<uint64_t, size_t> op_by_correlation;
  for (size_t i : host) {
    const TraceEvent& e = events[i];
    if (e.kind != TraceEventKind::kAtenOp) continue;
    const HostInfo& h = info[i];
    if (e.correlation != 0) op_by_correlation[e.correlation] = i;
    if (!counted(h.step)) continue;
    const int64_t dur = e.end_ns - e.start_ns;
    OpStat& row = by_host[e.name];
    row.name = e.name;
    ++row.calls;
    row.self_ns += std::max<int64_t>(0, dur - h.children_ns);
    row.total_ns += dur;
    if (!h.in_sync && IsWouldSyncOp(e.name)) ++s.would_sync;
    if (!h.in_aten) {
      ++s.aten_ops;
      PhaseStat& phase = PhaseOf(s, h.phase);
      ++phase.ops;
      phase.host_ns += dur;
    }
  }
  s.ops_by_host = Sorted(std::move(by_host));

  // Device events, each given to the step of its launch.
  std::unordered_map<uint64_t, const TraceEvent*> launch;
  for (const TraceEvent& e : events) {
    if (e.kind != TraceEventKind::kRuntime) continue;
    if (e.correlation != 0) launch[e.correlation] = &e;
    if (counted(steps.Holding(e.start_ns)) && IsBlockingRuntimeCall(e.name)) {
      ++s.sync_count;
    }
  }
  std::vector<std::vector<const TraceEvent*>> per_step(n_steps);
  for (const TraceEvent& e : events) {
    if (!IsDeviceEvent(e.kind)) continue;
    auto it = launch.find(e.correlation);
    const int step = it != launch.end() ? steps.Holding(it->second->start_ns)
                                        : steps.StartedBefore(e.start_ns);
    if (counted(step)) per_step[step].push_back(&e);
  }

  std::map<std::string, OpStat> by_device;
  std::map<std::string, OpStat> kernels;
  std::vector<int64_t> kernel_durations;
  double host_wait = 0;
  double kernel_wait = 0;
  double other = 0;
  for (auto& step_events : per_step) {
    if (step_events.empty()) continue;
    s.has_device = true;
    int64_t first = step_events.front()->start_ns;
    int64_t last = step_events.front()->end_ns;
    std::vector<std::pair<int64_t, int64_t>> all, memcpy;
    std::map<int64_t, std::vector<const TraceEvent*>> by_stream;
    for (const TraceEvent* e : step_events) {
      first = std::min(first, e->start_ns);
      last = std::max(last, e->end_ns);
      all.emplace_back(e->start_ns, e->end_ns);
      const int64_t dur = e->end_ns - e->start_ns;
      if (e->kind == TraceEventKind::kMemcpy) {
        memcpy.emplace_back(e->start_ns, e->end_ns);
        ++s.memcpy_count;
      }
      if (e->kind == TraceEventKind::kKernel) {
        ++s.kernel_count;
        kernel_durations.push_back(dur);
        OpStat& k = kernels[e->name];
        k.name = e->name;
        ++k.calls;
        k.self_ns += dur;
      }
      auto op = op_by_correlation.find(e->linked_correlation);
      const std::string& op_name = op != op_by_correlation.end()
                                       ? events[op->second].name
                                       : std::string("(no host op)");
      OpStat& d = by_device[op_name];
      d.name = op_name;
      ++d.calls;
      d.self_ns += dur;
      if (op != op_by_correlation.end()) {
        PhaseOf(s, info[op->second].phase).device_ns += dur;
      }
      by_stream[e->stream].push_back(e);
    }
    const int64_t window = last - first;
    const int64_t busy = UnionLength(all);
    const int64_t idle = window - busy;
    s.window_ns += window;
    s.busy_ns += busy;
    s.memcpy_ns += UnionLength(memcpy);
    s.idle_ns += idle;

    double gaps_host = 0;
    double gaps_kernel = 0;
    double gaps_other = 0;
    for (auto& [stream, list] : by_stream) {
      std::sort(list.begin(), list.end(),
                [](const TraceEvent* a, const TraceEvent* b) {
                  return a->start_ns < b->start_ns;
                });
      int64_t prev_end = list.front()->end_ns;
      for (size_t i = 1; i < list.size(); ++i) {
        const TraceEvent* e = list[i];
        const int64_t gap = e->start_ns - prev_end;
        if (gap > 0) {
          auto l = launch.find(e->correlation);
          if (l != launch.end() && l->second->start_ns > prev_end) {
            gaps_host += static_cast<double>(gap);
          } else if (gap < kKernelWaitNs) {
            gaps_kernel += static_cast<double>(gap);
          } else {
            gaps_other += static_cast<double>(gap);
          }
        }
        prev_end = std::max(prev_end, e->end_ns);
      }
    }
    const double gaps = gaps_host + gaps_kernel + gaps_other;
    const double idle_d = static_cast<double>(idle);
    if (gaps > 0) {
      // The gaps' shares split the window's idle time; with one stream they
      // are that time exactly.
      const double explained = std::min(idle_d, gaps);
      host_wait += explained * gaps_host / gaps;
      kernel_wait += explained * gaps_kernel / gaps;
      other += explained * gaps_other / gaps + (idle_d - explained);
    } else {
      other += idle_d;
    }
  }
  s.idle_host_wait_ns = host_wait;
  s.idle_kernel_wait_ns = kernel_wait;
  s.idle_other_ns = other;
  s.ops_by_device = Sorted(std::move(by_device));
  s.kernels = Sorted(std::move(kernels));
  if (!kernel_durations.empty()) {
    const size_t mid = kernel_durations.size() / 2;
    std::nth_element(kernel_durations.begin(), kernel_durations.begin() + mid,
                     kernel_durations.end());
    s.kernel_median_ns = kernel_durations[mid];
  }
  return s;
}

}  // namespace torchbench
