// TorchBench's `pyhpc_equation_of_state`: gsw_dHdT, the temperature
// derivative of dynamic enthalpy from the 48-term TEOS-10 density expression
// (IOC et al., 2010), as ported to PyTorch in dionhaefner/pyhpc-benchmarks
// (eos_pytorch.py). Element-wise float64 arithmetic on a 3-D ocean grid;
// eval only.
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/pyhpc.h"
#include "torchbench/checks.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/model.h"
#include "torchbench/registry.h"

namespace torchbench {
namespace pyhpc_equation_of_state_model {
namespace {

// Coefficients v01..v48 of the 48-term specific-volume expression, digit for
// digit as in eos_pytorch.py.
constexpr double kV01 = 9.998420897506056e2;
constexpr double kV02 = 2.839940833161907e0;
constexpr double kV03 = -3.147759265588511e-2;
constexpr double kV04 = 1.181805545074306e-3;
constexpr double kV05 = -6.698001071123802e0;
constexpr double kV06 = -2.986498947203215e-2;
constexpr double kV07 = 2.327859407479162e-4;
constexpr double kV08 = -3.988822378968490e-2;
constexpr double kV09 = 5.095422573880500e-4;
constexpr double kV10 = -1.426984671633621e-5;
constexpr double kV11 = 1.645039373682922e-7;
constexpr double kV12 = -2.233269627352527e-2;
constexpr double kV13 = -3.436090079851880e-4;
constexpr double kV14 = 3.726050720345733e-6;
constexpr double kV15 = -1.806789763745328e-4;
constexpr double kV16 = 6.876837219536232e-7;
constexpr double kV17 = -3.087032500374211e-7;
constexpr double kV18 = -1.988366587925593e-8;
constexpr double kV19 = -1.061519070296458e-11;
constexpr double kV20 = 1.550932729220080e-10;
constexpr double kV21 = 1.0e0;
constexpr double kV22 = 2.775927747785646e-3;
constexpr double kV23 = -2.349607444135925e-5;
constexpr double kV24 = 1.119513357486743e-6;
constexpr double kV25 = 6.743689325042773e-10;
constexpr double kV26 = -7.521448093615448e-3;
constexpr double kV27 = -2.764306979894411e-5;
constexpr double kV28 = 1.262937315098546e-7;
constexpr double kV29 = 9.527875081696435e-10;
constexpr double kV30 = -1.811147201949891e-11;
constexpr double kV31 = -3.303308871386421e-5;
constexpr double kV32 = 3.801564588876298e-7;
constexpr double kV33 = -7.672876869259043e-9;
constexpr double kV34 = -4.634182341116144e-11;
constexpr double kV35 = 2.681097235569143e-12;
constexpr double kV36 = 5.419326551148740e-6;
constexpr double kV37 = -2.742185394906099e-5;
constexpr double kV38 = -3.212746477974189e-7;
constexpr double kV39 = 3.191413910561627e-9;
constexpr double kV40 = -1.931012931541776e-12;
constexpr double kV41 = -1.105097577149576e-7;
constexpr double kV42 = 6.211426728363857e-10;
constexpr double kV43 = -1.119011592875110e-10;
constexpr double kV44 = -1.941660213148725e-11;
constexpr double kV45 = -1.864826425365600e-14;
constexpr double kV46 = 1.119522344879478e-14;
constexpr double kV47 = -1.200507748551599e-15;
constexpr double kV48 = 6.057902487546866e-17;

// Python evaluates `scalar / tensor` as `tensor.reciprocal() * scalar`;
// doing the same keeps the kernels and the rounding of the reference.
torch::Tensor ScalarOver(double numerator, const torch::Tensor& t) {
  return t.reciprocal() * numerator;
}

// gsw_dHdT(sa, ct, p): sa Absolute Salinity [g/kg], ct Conservative
// Temperature [deg C], p sea pressure [dbar] (broadcast over the grid). The
// tN names and the order and grouping of every operation follow the
// reference, so the float64 results match it bit for bit on the CPU.
torch::Tensor GswDhdt(const torch::Tensor& sa, const torch::Tensor& ct,
                      const torch::Tensor& p) {
  const torch::Tensor t1 = kV45 * ct;
  const torch::Tensor t2 = 0.2e1 * t1;
  const torch::Tensor t3 = kV46 * sa;
  const double t4 = 0.5 * kV12;
  const torch::Tensor t5 = kV14 * ct;
  const torch::Tensor t7 = ct * (kV13 + t5);
  const torch::Tensor t8 = 0.5 * t7;
  const torch::Tensor t11 = sa * (kV15 + kV16 * ct);
  const torch::Tensor t12 = 0.5 * t11;
  const torch::Tensor t13 = t4 + t8 + t12;
  const torch::Tensor t15 = kV19 * ct;
  const torch::Tensor t19 = kV17 + ct * (kV18 + t15) + kV20 * sa;
  const torch::Tensor t20 = ScalarOver(1.0, t19);
  const torch::Tensor t24 = kV47 + kV48 * ct;
  const double t25 = 0.5 * kV13;
  const torch::Tensor t26 = 1.0 * t5;
  const torch::Tensor t27 = sa * kV16;
  const torch::Tensor t28 = 0.5 * t27;
  const torch::Tensor t29 = t25 + t26 + t28;
  const torch::Tensor t33 = t24 * t13;
  const torch::Tensor t34 = t19.pow(2);
  const torch::Tensor t35 = ScalarOver(1.0, t34);
  const torch::Tensor t37 = kV18 + 2.0 * t15;
  const torch::Tensor t38 = t35 * t37;
  const torch::Tensor t48 = ct * (kV44 + t1 + t3);
  const torch::Tensor t57 = kV40 * ct;
  const torch::Tensor t59 = ct * (kV39 + t57);
  const torch::Tensor t64 = t13.pow(2);
  const torch::Tensor t68 = t20 * t29;
  const torch::Tensor t71 = t24 * t64;
  const torch::Tensor t74 = kV04 * ct;
  const torch::Tensor t76 = ct * (kV03 + t74);
  const torch::Tensor t79 = kV07 * ct;
  const torch::Tensor t82 = torch::sqrt(sa);
  const torch::Tensor t83 = kV11 * ct;
  const torch::Tensor t85 = ct * (kV10 + t83);
  const torch::Tensor t92 =
      (kV01 + ct * (kV02 + t76) +
       sa * (kV05 + ct * (kV06 + t79) + t82 * (kV08 + ct * (kV09 + t85))));
  const torch::Tensor t93 = kV48 * t92;
  const torch::Tensor t105 =
      (kV02 + t76 + ct * (kV03 + 2.0 * t74) +
       sa * (kV06 + 2.0 * t79 + t82 * (kV09 + t85 + ct * (kV10 + 2.0 * t83))));
  const torch::Tensor t106 = t24 * t105;
  const torch::Tensor t107 = kV44 + t2 + t3;
  const torch::Tensor t110 = kV43 + t48;
  const torch::Tensor t117 = t24 * t92;
  const torch::Tensor t120 = 4.0 * t71 * t20 - t117 - 2.0 * t110 * t13;
  const torch::Tensor t123 =
      (kV38 + t59 + ct * (kV39 + 2.0 * t57) + sa * kV42 +
       (4.0 * kV48 * t64 * t20 + 8.0 * t33 * t68 - 4.0 * t71 * t38 - t93 -
        t106 - 2.0 * t107 * t13 - 2.0 * t110 * t29) *
           t20 -
       t120 * t35 * t37);
  const torch::Tensor t128 = t19 * p;
  const torch::Tensor t130 = p * (1.0 * kV12 + 1.0 * t7 + 1.0 * t11 + t128);
  const torch::Tensor t131 = ScalarOver(1.0, t92);
  const torch::Tensor t133 = 1.0 + t130 * t131;
  const torch::Tensor t134 = torch::log(t133);
  const torch::Tensor t143 =
      kV37 + ct * (kV38 + t59) + sa * (kV41 + kV42 * ct) + t120 * t20;
  const torch::Tensor t152 = t37 * p;
  const torch::Tensor t156 = t92.pow(2);
  const torch::Tensor t165 = kV25 * ct;
  const torch::Tensor t167 = ct * (kV24 + t165);
  const torch::Tensor t169 = ct * (kV23 + t167);
  const torch::Tensor t175 = kV30 * ct;
  const torch::Tensor t177 = ct * (kV29 + t175);
  const torch::Tensor t179 = ct * (kV28 + t177);
  const torch::Tensor t185 = kV35 * ct;
  const torch::Tensor t187 = ct * (kV34 + t185);
  const torch::Tensor t189 = ct * (kV33 + t187);
  const torch::Tensor t199 = t13 * t20;
  const torch::Tensor t217 = 2.0 * t117 * t199 - t110 * t92;
  const torch::Tensor t234 = (kV21 + ct * (kV22 + t169) +
                              sa * (kV26 + ct * (kV27 + t179) + kV36 * sa +
                                    t82 * (kV31 + ct * (kV32 + t189))) +
                              t217 * t20);
  const torch::Tensor t241 = t64 - t92 * t19;
  const torch::Tensor t242 = torch::sqrt(t241);
  const torch::Tensor t243 = ScalarOver(1.0, t242);
  const torch::Tensor t244 = t4 + t8 + t12 - t242;
  const torch::Tensor t245 = ScalarOver(1.0, t244);
  const torch::Tensor t247 = t4 + t8 + t12 + t242 + t128;
  const torch::Tensor t248 = ScalarOver(1.0, t247);
  const torch::Tensor t249 = t242 * t245 * t248;
  const torch::Tensor t252 = 1.0 + 2.0 * t128 * t249;
  const torch::Tensor t253 = torch::log(t252);
  const torch::Tensor t254 = t243 * t253;
  const torch::Tensor t259 = t234 * t19 - t143 * t13;
  const torch::Tensor t264 = t259 * t20;
  const torch::Tensor t272 = 2.0 * t13 * t29 - t105 * t19 - t92 * t37;
  const torch::Tensor t282 = t128 * t242;
  const torch::Tensor t283 = t244.pow(2);
  const torch::Tensor t287 = t243 * t272 / 2.0;
  const torch::Tensor t292 = t247.pow(2);
  const torch::Tensor t305 =
      (0.1e5 * p *
           (kV44 + t2 + t3 - 2.0 * kV48 * t13 * t20 - 2.0 * t24 * t29 * t20 +
            2.0 * t33 * t38 + 0.5 * kV48 * p) *
           t20 -
       0.1e5 * p * (kV43 + t48 - 2.0 * t33 * t20 + 0.5 * t24 * p) * t38 +
       0.5e4 * t123 * t20 * t134 - 0.5e4 * t143 * t35 * t134 * t37 +
       0.5e4 * t143 * t20 *
           (p * (1.0 * kV13 + 2.0 * t5 + 1.0 * t27 + t152) * t131 -
            t130 / t156 * t105) /
           t133 +
       0.5e4 *
           ((kV22 + t169 + ct * (kV23 + t167 + ct * (kV24 + 2.0 * t165)) +
             sa * (kV27 + t179 + ct * (kV28 + t177 + ct * (kV29 + 2.0 * t175)) +
                   t82 * (kV32 + t189 +
                          ct * (kV33 + t187 + ct * (kV34 + 2.0 * t185)))) +
             (2.0 * t93 * t199 + 2.0 * t106 * t199 + 2.0 * t117 * t68 -
              2.0 * t117 * t13 * t35 * t37 - t107 * t92 - t110 * t105) *
                 t20 -
             t217 * t35 * t37) *
                t19 +
            t234 * t37 - t123 * t13 - t143 * t29) *
           t20 * t254 -
       0.5e4 * t259 * t35 * t254 * t37 -
       0.25e4 * t264 / t242 / t241 * t253 * t272 +
       0.5e4 * t264 * t243 *
           (2.0 * t152 * t249 + t128 * t243 * t245 * t248 * t272 -
            2.0 * t282 / t283 * t248 * (t25 + t26 + t28 - t287) -
            2.0 * t282 * t245 / t292 * (t25 + t26 + t28 + t287 + t152)) /
           t252);
  return t305;
}

// EquationOfState in the reference's __init__.py: a parameterless
// nn.Module whose forward is gsw_dHdT.
class EquationOfStateImpl : public torch::nn::Module {
 public:
  torch::Tensor forward(const torch::Tensor& s, const torch::Tensor& t,
                        const torch::Tensor& p) {
    return GswDhdt(s, t, p);
  }
};
TORCH_MODULE(EquationOfState);

class PyhpcEquationOfState final : public Model,
                                   public GoldenCheck,
                                   public FidelityCheck {
 public:
  // _generate_inputs(size): a (ceil(2 c), ceil(2 c), ceil(c / 4)) grid with
  // c = size^(1/3) ((204, 204, 26) at 1048576), salinity U(0.01, 10),
  // temperature U(-12, 20) and a (1, 1, nz) pressure U(0, 1000), drawn in
  // that order (numpy seed 17 there, torch's generator here), as float64 on
  // the device as prepare_inputs leaves them.
  explicit PyhpcEquationOfState(const ModelConfig& config) {
    const double c = std::pow(static_cast<double>(config.batch_size), 1.0 / 3);
    const int64_t nx = static_cast<int64_t>(std::ceil(2 * c));
    const int64_t nz = static_cast<int64_t>(std::ceil(0.25 * c));
    const auto options =
        torch::TensorOptions().dtype(torch::kFloat64).device(config.device);
    s_ = torch::empty({nx, nx, nz}, options).uniform_(1e-2, 10);
    t_ = torch::empty({nx, nx, nz}, options).uniform_(-12, 20);
    p_ = torch::empty({1, 1, nz}, options).uniform_(0, 1000);
    model_->to(config.device);
    model_->eval();
  }

  // The reference's eval() runs under torch.no_grad(); the harness already
  // wraps Eval steps in a NoGradGuard.
  torch::Tensor Step() override { return model_->forward(s_, t_, p_); }

  torch::nn::Module& module() override { return *model_; }

  // gsw_dHdT on filled inputs over _generate_inputs' ranges, as
  // tools/golden/adapters/pyhpc_equation_of_state.py runs the reference.
  std::map<std::string, torch::Tensor> GoldenOutputs() override {
    const auto options = s_.options();
    s_ = DeterministicTensor("s", s_.sizes(), torch::kDouble, 5.005, 4.995)
             .to(options);
    t_ = DeterministicTensor("t", t_.sizes(), torch::kDouble, 4.0, 16.0)
             .to(options);
    p_ = DeterministicTensor("p", p_.sizes(), torch::kDouble, 500.0, 500.0)
             .to(options);
    torch::NoGradGuard no_grad;
    return {{"output", Step()}};
  }

  // inputs = {sa, ct, p}.
  torch::Tensor Forward(const std::vector<torch::Tensor>& inputs) override {
    TORCH_CHECK(inputs.size() == 3, "gsw_dHdT takes sa, ct and p");
    return model_->forward(inputs[0], inputs[1], inputs[2]);
  }

 private:
  EquationOfState model_;
  torch::Tensor s_;
  torch::Tensor t_;
  torch::Tensor p_;
};

}  // namespace

// The kernel's polynomial cancellations are what the benchmark measures in
// float64.
TORCHBENCH_REGISTER_MODEL(
    common::PyhpcKernelSpec(
        {.name = "pyhpc_equation_of_state",
         .task = "other (ocean-model HPC kernel, gsw_dHdT)",
         .reference = "dionhaefner/pyhpc-benchmarks eos_pytorch.gsw_dHdT "
                      "(TorchBench's copy)"}),
    MakeModel<PyhpcEquationOfState>());

}  // namespace pyhpc_equation_of_state_model
}  // namespace torchbench
