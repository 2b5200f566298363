// File: program/flop_counter.h
//
// Counts the floating-point operations of what the process dispatches while
// a FlopCounter is alive, per operator, with the formulas PyTorch's
// torch.utils.flop_counter.FlopCounterMode uses: matrix products (mm, addmm,
// bmm, baddbmm, _scaled_mm), convolutions and their backward, scaled
// dot-product attention and its backward; everything else counts 0 (as
// there: elementwise work, normalizations and optimizer updates are not
// FLOPs in this sense). A multiply-add is 2 FLOPs.
//
// Counted once: an operator with a formula counts only when no operator
// with a formula is open on its thread (aten::convolution counts, its
// _convolution and mkldnn_convolution inside do not; aten::linear has no
// formula, the addmm it calls does). Every thread counts (on a GPU the
// autograd engine runs backward on its device threads); an operator an
// intra-op parallel region dispatches is inside one of another thread and
// does not. Operators inside an autograd engine node count as backward,
// inside an "Optimizer.step#" scope as optimizer, the rest as forward.
//
// Three deliberate differences from FlopCounterMode (torch 2.14.1), each
// because its count is not what the kernel does:
//   - convolution_backward's weight gradient is divided by `groups`: there
//     it is computed as if every input channel met every output channel, so
//     a depthwise convolution's backward counts `groups` times its work.
//   - the CPU attention kernels (_scaled_dot_product_flash_attention_for_cpu
//     and its backward) count as the other SDPA kernels do; there they have
//     no formula and attention on a CPU counts 0.
//
// Each counted call also records the bytes of its tensor inputs and outputs:
// the least it moves, which with the machine's bandwidth puts a roofline
// under it (machine_peak.h).
//
// Installing the counter adds a RecordFunction callback that records every
// operator's inputs and outputs: a counted step is slower, so it is never a timed one
// (benchmark_runner.cpp counts in Prepare). FlopCounter::Active() says
// whether one is installed.
//
//   FlopCounter flops;
//   instance.Step();
//   FlopCount count = flops.count();  // count.total(), count.backward, ...
#ifndef TORCHBENCH_PROGRAM_FLOP_COUNTER_H_
#define TORCHBENCH_PROGRAM_FLOP_COUNTER_H_

#include <ATen/core/ivalue.h>
#include <c10/core/ScalarType.h>
#include <c10/util/ArrayRef.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace torchbench {

// One counted operator call: its FLOPs, the dtype it computed in, and the
// bytes of its tensor inputs and outputs (what it must move at least once).
struct ProductCall {
  c10::ScalarType dtype = c10::ScalarType::Float;
  int64_t flops = 0;
  int64_t bytes = 0;
};

// One step's FLOPs, by phase, by the dtype the operator computed in, and by
// operator ("aten::mm", ...); the counted calls and their bytes.
struct FlopCount {
  int64_t forward = 0;
  int64_t backward = 0;
  int64_t optimizer = 0;
  std::map<c10::ScalarType, int64_t> by_dtype;
  std::map<std::string, int64_t> by_operator;
  int64_t bytes = 0;
  std::vector<ProductCall> calls;
  // The first operator whose inputs a formula could not read ("" if none):
  // the count is incomplete.
  std::string error;

  int64_t total() const { return forward + backward + optimizer; }
};

class FlopCounter {
 public:
  FlopCounter();
  ~FlopCounter();
  FlopCounter(const FlopCounter&) = delete;
  FlopCounter& operator=(const FlopCounter&) = delete;

  FlopCount count() const;

  // Whether any FlopCounter is installed in the process.
  static bool Active();

 private:
  friend struct FlopCounterCallbacks;
  void Add(const char* op, const ProductCall& call, int phase);
  void Fail(const std::string& error);

  uint64_t handle_ = 0;
  uint64_t generation_ = 0;  // Tells each thread's nesting state apart.
  mutable std::mutex mu_;
  FlopCount count_;
};

// ---- The formulas (FlopCounterMode's, but for the two differences above) --

using Shape = std::vector<int64_t>;

// m x k times k x n: 2 m k n.
int64_t MatmulFlops(const Shape& a, const Shape& b);
// b x m x k times b x k x n: 2 b m k n.
int64_t BatchMatmulFlops(const Shape& a, const Shape& b);

// A convolution's parameters, as aten::convolution takes them.
struct ConvParams {
  Shape stride, padding, dilation, output_padding;
  bool transposed = false;
  int64_t groups = 1;
};

// The output's spatial sizes of a convolution of `input` with `weight`.
Shape ConvOutputSpatial(const Shape& input, const Shape& weight,
                        const ConvParams& p);

// Forward: 2 x batch x out_channels x in_channels/groups x kernel elements
// x output positions (input positions when transposed).
int64_t ConvFlops(const Shape& input, const Shape& weight, const ConvParams& p);

// Backward: the input gradient (output_mask[0]) costs as the forward does;
// the weight gradient (output_mask[1]) too: both are the same products.
int64_t ConvBackwardFlops(const Shape& grad_output, const Shape& input,
                          const Shape& weight, const ConvParams& p,
                          bool grad_input, bool grad_weight);

// Attention with q [b, h, s_q, d], k [b, h_kv, s_k, d], v [b, h_kv, s_k, d_v]:
// q k^T and (scores) v.
int64_t AttentionFlops(const Shape& q, const Shape& k, const Shape& v);
// Its backward: the scores again and four products of the same sizes.
int64_t AttentionBackwardFlops(const Shape& q, const Shape& k, const Shape& v);

// One direction of one recurrent layer over `input` ([..., input size]: all
// time steps of all sequences) with weight_ih [gates x hidden, input size]
// and weight_hh [gates x hidden, hidden]: both products per time step. Its
// backward is twice that (the input, hidden and both weight gradients).
int64_t RecurrentLayerFlops(const Shape& input, const Shape& weight_ih,
                            const Shape& weight_hh);

// The FLOPs of one call of operator `name` ("aten::mm") with `inputs`, and
// the dtype it computed in; nullopt for an operator without a formula.
struct OperatorFlops {
  int64_t flops = 0;
  c10::ScalarType dtype = c10::ScalarType::Float;
};
std::optional<OperatorFlops> FlopsOf(const std::string& name,
                                     c10::ArrayRef<c10::IValue> inputs);

// Whether operator `name` has a formula.
bool HasFlopFormula(const char* name);

}  // namespace torchbench

#endif  // TORCHBENCH_PROGRAM_FLOP_COUNTER_H_
