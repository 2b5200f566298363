// File: program/op_coverage.h
//
// The API surface a step reaches (--torchbench_op_coverage=FILE): every
// operator it dispatches through the dispatcher, "namespace::name" with its
// overload, split by phase (forward, backward: dispatched by the autograd
// engine, optimizer: inside an "Optimizer.step#" scope) and by top-level
// (issued by the thread itself) against nested (inside another operator: a
// composite operator and what it decomposes into are both surface), with
// call counts and the dispatch keys the calls ran under. The paper counts
// the Python torch functions a model calls; LibTorch has no Python layer, so
// the faithful surface here is the operator registry, whose size
// (RegisteredOperators) is the denominator tools/coverage.py uses.
//
//   OpCoverage coverage;  // records every thread while alive
//   instance.Step();
//   for (const CoveredOp& op : coverage.ops()) ...
//
// The set depends on what the step does, never on timing: one step of a
// freshly built and warmed-up instance gives the same set on every run.
#ifndef TORCHBENCH_PROGRAM_OP_COVERAGE_H_
#define TORCHBENCH_PROGRAM_OP_COVERAGE_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"

namespace torchbench {

enum class OpPhase { kForward, kBackward, kOptimizer };

// Returns "forward", "backward" or "optimizer".
const char* OpPhaseName(OpPhase phase);

// One operator as a step dispatched it, per phase and nesting.
struct CoveredOp {
  std::string op;        // "aten::add"
  std::string overload;  // "Tensor"; "" for the default overload
  OpPhase phase = OpPhase::kForward;
  bool top_level = true;
  int64_t calls = 0;
  // The highest-priority key of each call's dispatch key set (the first
  // kernel it reaches: AutogradCPU, AutocastCUDA, ...) and its backend key
  // (CPU, CUDA, QuantizedCPU, SparseCPU, ...); "BackendSelect" for a call
  // without tensor arguments (a factory).
  std::set<std::string> keys;
};

class OpCoverage {
 public:
  OpCoverage();
  ~OpCoverage();
  OpCoverage(const OpCoverage&) = delete;
  OpCoverage& operator=(const OpCoverage&) = delete;

  // What was recorded so far, sorted by (op, overload, phase, top_level).
  std::vector<CoveredOp> ops() const;

 private:
  friend struct OpCoverageCallbacks;
  using Key = std::tuple<std::string, std::string, OpPhase, bool>;
  void Record(Key key, const std::string& dispatch, const std::string& backend);

  uint64_t handle_ = 0;
  uint64_t generation_ = 0;
  mutable std::mutex mutex_;
  std::map<Key, CoveredOp> ops_;
};

// Every operator registered with the dispatcher of this process,
// "namespace::name" or "namespace::name.overload", sorted.
std::vector<std::string> RegisteredOperators();

// Per-instance counters for the benchmark JSON: ops_distinct (operator
// names, overloads merged, every phase and nesting), ops_distinct_overloads,
// ops_distinct_top_level, ops_distinct_{forward,backward,optimizer}, and
// ops_calls (calls of every operator, nested included).
std::map<std::string, double> CoverageCounters(
    const std::vector<CoveredOp>& ops);

// What a coverage file's instance line says about the instance.
struct CoverageInstance {
  std::string instance;  // "<model>/<Mode>/batch_size:<N>"
  std::string model;
  std::string domain;
  std::string mode;
  int64_t batch_size = 0;
  std::string device;
  std::string precision;
};

// The coverage file is JSON lines: a registry line first,
//   {"registry": {"libtorch_version": ..., "device": ..., "ops": [...]}}
// then one line per instance,
//   {"instance": ..., "model": ..., ..., "ops": [{"op": "aten::add",
//    "overload": "Tensor", "phase": "forward", "top_level": true,
//    "calls": 3, "keys": ["AutogradCPU", "CPU"]}, ...]}
std::string CoverageRegistryLine(const std::string& libtorch_version,
                                 const std::string& device,
                                 const std::vector<std::string>& ops);
std::string CoverageInstanceLine(const CoverageInstance& instance,
                                 const std::vector<CoveredOp>& ops);

// Appends `line` and a newline to `path` in one write (O_APPEND: isolated
// children append to their parent's file one after another); `truncate`
// empties the file first.
absl::Status AppendCoverageLine(const std::string& path,
                                const std::string& line, bool truncate);

}  // namespace torchbench

#endif  // TORCHBENCH_PROGRAM_OP_COVERAGE_H_
