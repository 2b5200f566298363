#include "program/trace_analysis.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_map>

#include "program/flop_counter.h"

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
  bool in_aten = false;     // some enclosing event is an ATen op
  bool in_sync = false;     // some enclosing event is a would-sync op
  bool in_product = false;  // some enclosing event is a product op
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

bool IsProductOp(const std::string& name) {
  // The FLOP counter's operators, and the products it has no formula for
  // (a composite such as aten::linear or aten::matmul is not one: its time
  // holds copies and views besides the product it calls).
  static const char* const kMore[] = {"aten::addmv",
                                      "aten::mv",
                                      "aten::dot",
                                      "aten::addbmm",
                                      "aten::_addmm_activation",
                                      "aten::mkldnn_convolution",
                                      "aten::cudnn_convolution",
                                      "aten::cudnn_convolution_transpose",
                                      "aten::_slow_conv2d_forward",
                                      "aten::_slow_conv2d_backward",
                                      "aten::slow_conv_transpose2d",
                                      "aten::_conv_depthwise2d",
                                      "aten::slow_conv_dilated2d",
                                      "aten::_flash_attention_forward",
                                      "aten::_flash_attention_backward",
                                      "aten::_efficient_attention_forward",
                                      "aten::_efficient_attention_backward",
                                      "aten::mkldnn_rnn_layer",
                                      "aten::mkldnn_rnn_layer_backward"};
  if (HasFlopFormula(name.c_str())) return true;
  for (const char* more : kMore) {
    if (name == more) return true;
  }
  return false;
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

namespace {

// The analysis in phases: the profiler's step scopes; the host events'
// nesting (which step, phase and enclosing op each has); the host ATen ops;
// each device event given to the step that launched it; and per step, the
// device window and what its idle time waited on.

// The ProfilerStep# scopes, in time order.
Steps FindSteps(const std::vector<TraceEvent>& events) {
  Steps steps;
  for (const TraceEvent& e : events) {
    if (e.kind == TraceEventKind::kUserScope &&
        StartsWith(e.name, kStepPrefix)) {
      steps.spans.emplace_back(e.start_ns, e.end_ns);
    }
  }
  std::sort(steps.spans.begin(), steps.spans.end());
  return steps;
}

struct HostNesting {
  // The host events' indices, per thread by start, outer (longer) first.
  std::vector<size_t> order;
  std::unordered_map<size_t, HostInfo> info;
};

// What each host event inherits from its parent on the same thread.
HostInfo Inherit(const TraceEvent& parent, HostInfo& p, int64_t child_ns) {
  HostInfo h;
  p.children_ns += child_ns;
  h.in_aten = p.in_aten || parent.kind == TraceEventKind::kAtenOp;
  h.in_sync = p.in_sync || (parent.kind == TraceEventKind::kAtenOp &&
                            IsWouldSyncOp(parent.name));
  h.in_product = p.in_product || (parent.kind == TraceEventKind::kAtenOp &&
                                  IsProductOp(parent.name));
  h.phase = p.phase;
  if (parent.kind == TraceEventKind::kBackwardFunction &&
      h.phase == Phase::kForward) {
    h.phase = Phase::kBackward;
  }
  if (parent.kind == TraceEventKind::kUserScope &&
      StartsWith(parent.name, kOptimizerPrefix)) {
    h.phase = Phase::kOptimizer;
  }
  return h;
}

HostNesting NestHostEvents(const std::vector<TraceEvent>& events,
                           const Steps& steps) {
  HostNesting n;
  for (size_t i = 0; i < events.size(); ++i) {
    if (IsHostNestingEvent(events[i].kind)) n.order.push_back(i);
  }
  std::sort(n.order.begin(), n.order.end(), [&](size_t a, size_t b) {
    const TraceEvent& x = events[a];
    const TraceEvent& y = events[b];
    if (x.thread != y.thread) return x.thread < y.thread;
    if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
    return x.end_ns > y.end_ns;
  });
  n.info.reserve(n.order.size());
  std::vector<size_t> stack;
  uint64_t thread = 0;
  for (size_t i : n.order) {
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
      h = Inherit(events[stack.back()], n.info[stack.back()],
                  e.end_ns - e.start_ns);
    }
    h.step = steps.Holding(e.start_ns);
    n.info[i] = h;
    stack.push_back(i);
  }
  return n;
}

// The host ATen ops of the counted steps: per-op rows, top-level counts per
// phase, would-sync ops; returns each op by its correlation id (for the
// device events it launched).
std::unordered_map<uint64_t, size_t> CountHostOps(
    const std::vector<TraceEvent>& events, HostNesting& nesting, int n_steps,
    TraceSummary* s) {
  std::map<std::string, OpStat> by_host;
  std::unordered_map<uint64_t, size_t> op_by_correlation;
  for (size_t i : nesting.order) {
    const TraceEvent& e = events[i];
    if (e.kind != TraceEventKind::kAtenOp) continue;
    const HostInfo& h = nesting.info[i];
    if (e.correlation != 0) op_by_correlation[e.correlation] = i;
    if (h.step < 0 || h.step >= n_steps) continue;
    const int64_t dur = e.end_ns - e.start_ns;
    OpStat& row = by_host[e.name];
    row.name = e.name;
    ++row.calls;
    row.self_ns += std::max<int64_t>(0, dur - h.children_ns);
    row.total_ns += dur;
    if (!h.in_sync && IsWouldSyncOp(e.name)) ++s->would_sync;
    if (!h.in_product && IsProductOp(e.name)) s->product_host_ns += dur;
    if (!h.in_aten) {
      ++s->aten_ops;
      PhaseStat& phase = PhaseOf(*s, h.phase);
      ++phase.ops;
      phase.host_ns += dur;
    }
  }
  s->ops_by_host = Sorted(std::move(by_host));
  return op_by_correlation;
}

struct DeviceSteps {
  std::unordered_map<uint64_t, const TraceEvent*> launch;  // By correlation.
  std::vector<std::vector<const TraceEvent*>> per_step;
};

// Each device event, given to the step of its launch (or, without one, the
// last step started before it); counts blocking runtime calls.
DeviceSteps AssignDeviceEvents(const std::vector<TraceEvent>& events,
                               const Steps& steps, int n_steps,
                               TraceSummary* s) {
  auto counted = [&](int step) { return step >= 0 && step < n_steps; };
  DeviceSteps d;
  for (const TraceEvent& e : events) {
    if (e.kind != TraceEventKind::kRuntime) continue;
    if (e.correlation != 0) d.launch[e.correlation] = &e;
    if (counted(steps.Holding(e.start_ns)) && IsBlockingRuntimeCall(e.name)) {
      ++s->sync_count;
    }
  }
  d.per_step.resize(static_cast<size_t>(n_steps));
  for (const TraceEvent& e : events) {
    if (!IsDeviceEvent(e.kind)) continue;
    auto it = d.launch.find(e.correlation);
    const int step = it != d.launch.end() ? steps.Holding(it->second->start_ns)
                                          : steps.StartedBefore(e.start_ns);
    if (counted(step)) d.per_step[static_cast<size_t>(step)].push_back(&e);
  }
  return d;
}

// A step's device idle time, split by what the gaps on each stream waited
// on: the host launching (host_wait), short kernel-to-kernel gaps
// (kernel_wait), or neither (other).
struct IdleSplit {
  double host_wait = 0;
  double kernel_wait = 0;
  double other = 0;
};

void SplitIdle(std::map<int64_t, std::vector<const TraceEvent*>>& by_stream,
               const std::unordered_map<uint64_t, const TraceEvent*>& launch,
               double idle, IdleSplit* split) {
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
  if (gaps > 0) {
    // The gaps' shares split the window's idle time; with one stream they
    // are that time exactly.
    const double explained = std::min(idle, gaps);
    split->host_wait += explained * gaps_host / gaps;
    split->kernel_wait += explained * gaps_kernel / gaps;
    split->other += explained * gaps_other / gaps + (idle - explained);
  } else {
    split->other += idle;
  }
}

// What the device events of the counted steps add up to.
struct DeviceTotals {
  std::map<std::string, OpStat> by_op;
  std::map<std::string, OpStat> kernels;
  std::vector<int64_t> kernel_durations;
  IdleSplit idle;
};

// One step's device events: its window, busy, memcpy and idle time, its
// kernels and the host op each event came from.
void AnalyzeStepWindow(
    const std::vector<const TraceEvent*>& step_events,
    const std::vector<TraceEvent>& events, const HostNesting& nesting,
    const std::unordered_map<uint64_t, size_t>& op_by_correlation,
    const DeviceSteps& device, TraceSummary* s, DeviceTotals* totals) {
  s->has_device = true;
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
      ++s->memcpy_count;
    }
    if (e->kind == TraceEventKind::kKernel) {
      ++s->kernel_count;
      totals->kernel_durations.push_back(dur);
      OpStat& k = totals->kernels[e->name];
      k.name = e->name;
      ++k.calls;
      k.self_ns += dur;
    }
    auto op = op_by_correlation.find(e->linked_correlation);
    const std::string& op_name = op != op_by_correlation.end()
                                     ? events[op->second].name
                                     : std::string("(no host op)");
    OpStat& d = totals->by_op[op_name];
    d.name = op_name;
    ++d.calls;
    d.self_ns += dur;
    if (op != op_by_correlation.end()) {
      PhaseOf(*s, nesting.info.at(op->second).phase).device_ns += dur;
    }
    by_stream[e->stream].push_back(e);
  }
  const int64_t window = last - first;
  const int64_t busy = UnionLength(all);
  const int64_t idle = window - busy;
  s->window_ns += window;
  s->busy_ns += busy;
  s->memcpy_ns += UnionLength(memcpy);
  s->idle_ns += idle;
  SplitIdle(by_stream, device.launch, static_cast<double>(idle), &totals->idle);
}

}  // namespace

TraceSummary AnalyzeTrace(const std::vector<TraceEvent>& events,
                          int max_steps) {
  TraceSummary s;
  const Steps steps = FindSteps(events);
  const int n_steps =
      max_steps < 0
          ? static_cast<int>(steps.spans.size())
          : std::min<int>(max_steps, static_cast<int>(steps.spans.size()));
  s.steps = n_steps;
  if (n_steps == 0) return s;
  for (int i = 0; i < n_steps; ++i) {
    s.step_host_ns += steps.spans[i].second - steps.spans[i].first;
  }
  HostNesting nesting = NestHostEvents(events, steps);
  const auto op_by_correlation = CountHostOps(events, nesting, n_steps, &s);
  const DeviceSteps device = AssignDeviceEvents(events, steps, n_steps, &s);
  DeviceTotals totals;
  for (const auto& step_events : device.per_step) {
    if (step_events.empty()) continue;
    AnalyzeStepWindow(step_events, events, nesting, op_by_correlation, device,
                      &s, &totals);
  }
  s.idle_host_wait_ns = totals.idle.host_wait;
  s.idle_kernel_wait_ns = totals.idle.kernel_wait;
  s.idle_other_ns = totals.idle.other;
  s.ops_by_device = Sorted(std::move(totals.by_op));
  s.kernels = Sorted(std::move(totals.kernels));
  std::vector<int64_t>& durations = totals.kernel_durations;
  if (!durations.empty()) {
    const size_t mid = durations.size() / 2;
    std::nth_element(durations.begin(), durations.begin() + mid,
                     durations.end());
    s.kernel_median_ns = durations[mid];
  }
  return s;
}

}  // namespace torchbench
