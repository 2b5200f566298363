#include "program/flop_counter.h"

#include <ATen/record_function.h>
#include <c10/util/ParallelGuard.h>
#include <c10/util/StringUtil.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "program/record_scopes.h"

namespace torchbench {
namespace {

int64_t Product(const Shape& s, size_t from = 0) {
  int64_t p = 1;
  for (size_t i = from; i < s.size(); ++i) p *= s[i];
  return p;
}

void Expect(bool ok, const char* what, const Shape& a, const Shape& b) {
  if (!ok) {
    throw std::invalid_argument(absl::StrCat("flop counter: ", what, " [",
                                             c10::Join(",", a), "] [",
                                             c10::Join(",", b), "]"));
  }
}

// A parameter list such as stride, broadcast to the spatial rank as
// aten::convolution expands a single value.
int64_t At(const Shape& values, size_t i, int64_t fallback) {
  if (values.empty()) return fallback;
  return values.size() == 1 ? values[0] : values.at(i);
}

}  // namespace

// ---- Formulas --------------------------------------------------------------

int64_t MatmulFlops(const Shape& a, const Shape& b) {
  Expect(a.size() == 2 && b.size() == 2 && a[1] == b[0], "mm shapes", a, b);
  return 2 * a[0] * a[1] * b[1];
}

int64_t BatchMatmulFlops(const Shape& a, const Shape& b) {
  Expect(a.size() == 3 && b.size() == 3 && a[0] == b[0] && a[2] == b[1],
         "bmm shapes", a, b);
  return 2 * a[0] * a[1] * a[2] * b[2];
}

Shape ConvOutputSpatial(const Shape& input, const Shape& weight,
                        const ConvParams& p) {
  Expect(input.size() >= 3 && weight.size() == input.size(),
         "convolution shapes", input, weight);
  Shape out;
  for (size_t i = 2; i < input.size(); ++i) {
    const size_t d = i - 2;
    const int64_t stride = At(p.stride, d, 1);
    const int64_t padding = At(p.padding, d, 0);
    const int64_t dilation = At(p.dilation, d, 1);
    const int64_t kernel = weight[i];
    if (p.transposed) {
      out.push_back((input[i] - 1) * stride - 2 * padding +
                    dilation * (kernel - 1) + At(p.output_padding, d, 0) + 1);
    } else {
      out.push_back(
          (input[i] + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1);
    }
  }
  return out;
}

int64_t ConvFlops(const Shape& input, const Shape& weight,
                  const ConvParams& p) {
  // Each output position (each input position of a transposed convolution,
  // which scatters) meets every kernel element of every channel pair of its
  // group: the weight's dims 0 and 1 are that pair's counts either way.
  const Shape spatial = p.transposed ? Shape(input.begin() + 2, input.end())
                                     : ConvOutputSpatial(input, weight, p);
  return 2 * input[0] * weight[0] * weight[1] * Product(weight, 2) *
         Product(spatial);
}

int64_t ConvBackwardFlops(const Shape& grad_output, const Shape& input,
                          const Shape& weight, const ConvParams& p,
                          bool grad_input, bool grad_weight) {
  (void)grad_output;  // The forward's shapes determine both products.
  const int64_t forward = ConvFlops(input, weight, p);
  return (grad_input ? forward : 0) + (grad_weight ? forward : 0);
}

int64_t AttentionFlops(const Shape& q, const Shape& k, const Shape& v) {
  Expect(q.size() == 4 && k.size() == 4 && v.size() == 4 && q[0] == k[0] &&
             q[3] == k[3] && k[2] == v[2] && k[1] == v[1] && k[1] > 0 &&
             q[1] % k[1] == 0,
         "attention shapes (q, k)", q, k);
  const int64_t bh = q[0] * q[1];
  // The kernels broadcast grouped-query heads: every query head computes.
  return BatchMatmulFlops({bh, q[2], q[3]}, {bh, q[3], k[2]}) +
         BatchMatmulFlops({bh, q[2], k[2]}, {bh, k[2], v[3]});
}

int64_t AttentionBackwardFlops(const Shape& q, const Shape& k, const Shape& v) {
  (void)AttentionFlops(q, k, v);  // Checks the shapes.
  const int64_t bh = q[0] * q[1], sq = q[2], sk = k[2], d = q[3], dv = v[3];
  return BatchMatmulFlops({bh, sq, d}, {bh, d, sk}) +    // scores again
         BatchMatmulFlops({bh, sq, dv}, {bh, dv, sk}) +  // grad scores
         BatchMatmulFlops({bh, sk, sq}, {bh, sq, dv}) +  // grad v
         BatchMatmulFlops({bh, sq, sk}, {bh, sk, d}) +   // grad q
         BatchMatmulFlops({bh, d, sq}, {bh, sq, sk});    // grad k
}

int64_t RecurrentLayerFlops(const Shape& input, const Shape& weight_ih,
                            const Shape& weight_hh) {
  Expect(weight_ih.size() == 2 && weight_hh.size() == 2 && !input.empty() &&
             input.back() == weight_ih[1] && weight_ih[0] == weight_hh[0],
         "recurrent layer shapes (input, weight_ih)", input, weight_ih);
  // Every time step of every sequence: its input and the previous hidden
  // state through all gates' weights.
  const int64_t steps = Product(input) / input.back();
  return 2 * steps * (Product(weight_ih) + Product(weight_hh));
}

// ---- Operators -------------------------------------------------------------

namespace {

enum class Formula {
  kMm,            // (self, mat2)
  kAddmm,         // (self, mat1, mat2)
  kBmm,           // (self, mat2)
  kBaddbmm,       // (self, batch1, batch2)
  kConv,          // (input, weight, bias, stride, padding, dilation,
                  //  transposed, output_padding, groups, ...)
  kConvBackward,  // (grad_output, input, weight, bias_sizes, stride, padding,
                  //  dilation, transposed, output_padding, groups, mask)
  kAttention,     // (query, key, value, ...)
  kAttentionBackward,       // (grad_out, query, key, value, ...)
  kRecurrentLayer,          // (input, weight_ih, weight_hh, ...)
  kRecurrentLayerBackward,  // the same first three
};

struct Registered {
  const char* name;
  Formula formula;
};

// FlopCounterMode's registry (torch 2.14.1), as RecordFunction names them,
// the CPU attention kernels and oneDNN's recurrent layer. Left out, as they run only inside an
// operator here that counts (and take other arguments):
// cudnn_convolution and _slow_conv2d_forward (inside aten::convolution),
// _flash_attention_forward and _efficient_attention_forward and their
// backwards (inside the _scaled_dot_product_* operators).
constexpr Registered kFormulas[] = {
    {"aten::mm", Formula::kMm},
    {"aten::addmm", Formula::kAddmm},
    {"aten::bmm", Formula::kBmm},
    {"aten::baddbmm", Formula::kBaddbmm},
    {"aten::_scaled_mm", Formula::kMm},
    {"aten::convolution", Formula::kConv},
    {"aten::_convolution", Formula::kConv},
    {"aten::convolution_overrideable", Formula::kConv},
    {"aten::convolution_backward", Formula::kConvBackward},
    {"aten::_scaled_dot_product_efficient_attention", Formula::kAttention},
    {"aten::_scaled_dot_product_flash_attention", Formula::kAttention},
    {"aten::_scaled_dot_product_cudnn_attention", Formula::kAttention},
    {"aten::_scaled_dot_product_flash_attention_for_cpu", Formula::kAttention},
    {"aten::_scaled_dot_product_efficient_attention_backward",
     Formula::kAttentionBackward},
    {"aten::_scaled_dot_product_flash_attention_backward",
     Formula::kAttentionBackward},
    {"aten::_scaled_dot_product_cudnn_attention_backward",
     Formula::kAttentionBackward},
    {"aten::_scaled_dot_product_flash_attention_for_cpu_backward",
     Formula::kAttentionBackward},
    {"aten::mkldnn_rnn_layer", Formula::kRecurrentLayer},
    {"aten::mkldnn_rnn_layer_backward", Formula::kRecurrentLayerBackward},
};

const Registered* Find(const char* name) {
  if (std::strncmp(name, "aten::", 6) != 0) return nullptr;
  for (const Registered& r : kFormulas) {
    if (std::strcmp(r.name, name) == 0) return &r;
  }
  return nullptr;
}

const at::Tensor& TensorAt(c10::ArrayRef<c10::IValue> inputs, size_t i) {
  if (i >= inputs.size() || !inputs[i].isTensor()) {
    throw std::invalid_argument(
        absl::StrCat("flop counter: input ", i, " is not a tensor"));
  }
  return inputs[i].toTensor();
}

Shape ShapeAt(c10::ArrayRef<c10::IValue> inputs, size_t i) {
  return TensorAt(inputs, i).sizes().vec();
}

Shape IntsAt(c10::ArrayRef<c10::IValue> inputs, size_t i) {
  if (i >= inputs.size() || inputs[i].isNone()) return {};
  if (inputs[i].isInt()) return {inputs[i].toInt()};
  return inputs[i].toIntVector();
}

ConvParams ConvParamsAt(c10::ArrayRef<c10::IValue> in, size_t stride_at) {
  ConvParams p;
  p.stride = IntsAt(in, stride_at);
  p.padding = IntsAt(in, stride_at + 1);
  p.dilation = IntsAt(in, stride_at + 2);
  p.transposed = in.at(stride_at + 3).toBool();
  p.output_padding = IntsAt(in, stride_at + 4);
  p.groups = in.at(stride_at + 5).toInt();
  return p;
}

OperatorFlops Evaluate(Formula formula, c10::ArrayRef<c10::IValue> in) {
  switch (formula) {
    case Formula::kMm:
      return {MatmulFlops(ShapeAt(in, 0), ShapeAt(in, 1)),
              TensorAt(in, 0).scalar_type()};
    case Formula::kAddmm:
      return {MatmulFlops(ShapeAt(in, 1), ShapeAt(in, 2)),
              TensorAt(in, 1).scalar_type()};
    case Formula::kBmm:
      return {BatchMatmulFlops(ShapeAt(in, 0), ShapeAt(in, 1)),
              TensorAt(in, 0).scalar_type()};
    case Formula::kBaddbmm:
      return {BatchMatmulFlops(ShapeAt(in, 1), ShapeAt(in, 2)),
              TensorAt(in, 1).scalar_type()};
    case Formula::kConv:
      return {ConvFlops(ShapeAt(in, 0), ShapeAt(in, 1), ConvParamsAt(in, 3)),
              TensorAt(in, 0).scalar_type()};
    case Formula::kConvBackward: {
      const std::vector<bool> mask = in.at(10).toBoolList().vec();
      return {ConvBackwardFlops(ShapeAt(in, 0), ShapeAt(in, 1), ShapeAt(in, 2),
                                ConvParamsAt(in, 4), mask.at(0), mask.at(1)),
              TensorAt(in, 0).scalar_type()};
    }
    case Formula::kAttention:
      return {AttentionFlops(ShapeAt(in, 0), ShapeAt(in, 1), ShapeAt(in, 2)),
              TensorAt(in, 0).scalar_type()};
    case Formula::kRecurrentLayer:
      return {
          RecurrentLayerFlops(ShapeAt(in, 0), ShapeAt(in, 1), ShapeAt(in, 2)),
          TensorAt(in, 0).scalar_type()};
    case Formula::kRecurrentLayerBackward:
      return {2 * RecurrentLayerFlops(ShapeAt(in, 0), ShapeAt(in, 1),
                                      ShapeAt(in, 2)),
              TensorAt(in, 0).scalar_type()};
    case Formula::kAttentionBackward:
      return {AttentionBackwardFlops(ShapeAt(in, 1), ShapeAt(in, 2),
                                     ShapeAt(in, 3)),
              TensorAt(in, 1).scalar_type()};
  }
  return {};
}

std::atomic<FlopCounter*> active_counter{nullptr};
std::atomic<uint64_t> generations{0};

enum Phase { kForward = 0, kBackward = 1, kOptimizer = 2 };

// A thread's nesting under the active counter: operators with a formula,
// autograd engine nodes and "Optimizer.step#" scopes open on this thread.
// The counted operator open on a thread: recorded when it ends, with the
// bytes of its outputs.
struct OpenProduct {
  const char* op = nullptr;  // nullptr: none
  ProductCall call;
  int phase = 0;
};

struct ThreadNesting {
  uint64_t generation = 0;
  int counted_depth = 0;
  int backward_nodes = 0;
  int optimizer_scopes = 0;
  OpenProduct open;
};
thread_local ThreadNesting nesting;

ThreadNesting& NestingFor(uint64_t generation) {
  if (nesting.generation != generation) nesting = {generation, 0, 0, 0, {}};
  return nesting;
}

// The bytes of the tensors in `values` (a tensor list's too).
int64_t TensorBytes(c10::ArrayRef<c10::IValue> values) {
  int64_t bytes = 0;
  for (const c10::IValue& v : values) {
    if (v.isTensor()) {
      const at::Tensor& t = v.toTensor();
      if (t.defined()) bytes += static_cast<int64_t>(t.nbytes());
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorVector()) {
        if (t.defined()) bytes += static_cast<int64_t>(t.nbytes());
      }
    }
  }
  return bytes;
}

}  // namespace

bool HasFlopFormula(const char* name) { return Find(name) != nullptr; }

std::optional<OperatorFlops> FlopsOf(const std::string& name,
                                     c10::ArrayRef<c10::IValue> inputs) {
  const Registered* r = Find(name.c_str());
  if (r == nullptr) return std::nullopt;
  return Evaluate(r->formula, inputs);
}

struct FlopCounterCallbacks {
  static std::unique_ptr<at::ObserverContext> Start(
      const at::RecordFunction& fn) {
    FlopCounter* c = active_counter.load(std::memory_order_acquire);
    if (c == nullptr) return nullptr;
    ThreadNesting& n = NestingFor(c->generation_);
    if (IsOptimizerStep(fn)) {
      ++n.optimizer_scopes;
    } else if (IsAutogradEngineNode(fn)) {
      ++n.backward_nodes;
    } else if (fn.scope() == at::RecordScope::FUNCTION) {
      const Registered* r = Find(fn.name());
      if (r == nullptr) return nullptr;
      // An intra-op worker runs inside an operator of another thread.
      if (n.counted_depth == 0 && !c10::ParallelGuard::is_enabled()) {
        // Thrown through the dispatcher, it would fail the operator.
        try {
          const OperatorFlops f = Evaluate(r->formula, fn.inputs());
          n.open = {r->name,
                    {f.dtype, f.flops, TensorBytes(fn.inputs())},
                    n.optimizer_scopes > 0 ? kOptimizer
                    : n.backward_nodes > 0 ? kBackward
                                           : kForward};
        } catch (const std::exception& e) {
          c->Fail(absl::StrCat(r->name, ": ", e.what()));
        }
      }
      ++n.counted_depth;
    }
    return nullptr;
  }

  static void End(const at::RecordFunction& fn, at::ObserverContext*) {
    FlopCounter* c = active_counter.load(std::memory_order_acquire);
    if (c == nullptr) return;
    ThreadNesting& n = NestingFor(c->generation_);
    if (IsOptimizerStep(fn)) {
      if (n.optimizer_scopes > 0) --n.optimizer_scopes;
    } else if (IsAutogradEngineNode(fn)) {
      if (n.backward_nodes > 0) --n.backward_nodes;
    } else if (fn.scope() == at::RecordScope::FUNCTION &&
               Find(fn.name()) != nullptr && n.counted_depth > 0) {
      if (--n.counted_depth == 0 && n.open.op != nullptr) {
        n.open.call.bytes += TensorBytes(fn.outputs());
        c->Add(n.open.op, n.open.call, n.open.phase);
        n.open = {};
      }
    }
  }
};

FlopCounter::FlopCounter() : generation_(++generations) {
  FlopCounter* expected = nullptr;
  if (!active_counter.compare_exchange_strong(expected, this)) {
    throw std::logic_error("a FlopCounter is already counting");
  }
  handle_ = at::addGlobalCallback(
      at::RecordFunctionCallback(&FlopCounterCallbacks::Start,
                                 &FlopCounterCallbacks::End)
          .needsInputs(true)
          .needsOutputs(true)
          .scopes({at::RecordScope::FUNCTION,
                   at::RecordScope::BACKWARD_FUNCTION,
                   at::RecordScope::USER_SCOPE}));
}

FlopCounter::~FlopCounter() {
  at::removeCallback(handle_);
  active_counter.store(nullptr, std::memory_order_release);
}

bool FlopCounter::Active() {
  return active_counter.load(std::memory_order_acquire) != nullptr;
}

FlopCount FlopCounter::count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return count_;
}

void FlopCounter::Fail(const std::string& error) {
  std::lock_guard<std::mutex> lock(mu_);
  if (count_.error.empty()) count_.error = error;
}

void FlopCounter::Add(const char* op, const ProductCall& call, int phase) {
  std::lock_guard<std::mutex> lock(mu_);
  (phase == kOptimizer  ? count_.optimizer
   : phase == kBackward ? count_.backward
                        : count_.forward) += call.flops;
  count_.by_dtype[call.dtype] += call.flops;
  count_.by_operator[op] += call.flops;
  count_.bytes += call.bytes;
  count_.calls.push_back(call);
}

}  // namespace torchbench
