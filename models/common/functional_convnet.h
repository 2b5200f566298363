// The 4-block few-shot conv net of the MAML references (maml,
// maml_omniglot, functorch_maml_omniglot), run with an explicit weight list
// so that an inner loop can differentiate through its own SGD updates
// ("fast weights"), and the inner SGD step itself.
//
//   common::FunctionalConvNet net(common::OmniglotConvNetOptions(5));
//   std::vector<torch::Tensor> fast = params;   // parameters() order
//   for (int k = 0; k < 5; ++k) {
//     torch::Tensor loss = F::cross_entropy(net.Forward(x, fast, &bn), y);
//     fast = common::InnerSgdStep(loss, fast, 0.1, /*create_graph=*/true);
//   }
//
// The weight list is in the references' parameters() order: per block the
// conv weight and bias and the BatchNorm weight and bias, then the linear
// weight and bias.
#ifndef TORCHBENCH_MODELS_COMMON_FUNCTIONAL_CONVNET_H_
#define TORCHBENCH_MODELS_COMMON_FUNCTIONAL_CONVNET_H_

#include <ATen/CPUGeneratorImpl.h>
#include <torch/autograd.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>
#include <torch/types.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

namespace torchbench::common {

struct FunctionalConvNetOptions {
  int64_t in_channels = 1;
  int64_t channels = 64;
  int64_t n_way = 5;
  // One entry per block.
  std::vector<int64_t> kernel_sizes;
  std::vector<int64_t> strides;
  // dragen1860's Learner (maml) applies ReLU before BatchNorm; the higher /
  // functorch examples apply BatchNorm, then ReLU.
  bool relu_before_batch_norm = false;
  // A 2x2, stride-2 max-pool closes every block (higher / functorch).
  bool max_pool = true;
  double batch_norm_eps = 1e-5;
};

// maml_omniglot's and functorch_maml_omniglot's net: (Conv2d(3) - BN - ReLU
// - MaxPool(2)) x 3, Flatten, Linear(64, n_way); 28x28 -> 1x1.
inline FunctionalConvNetOptions OmniglotConvNetOptions(int64_t n_way) {
  FunctionalConvNetOptions options;
  options.n_way = n_way;
  options.kernel_sizes = {3, 3, 3};
  options.strides = {1, 1, 1};
  return options;
}

// The nn.Sequential the higher / functorch examples build, with their
// state_dict names ("0.weight", "1.running_mean", ..., "13.bias").
inline torch::nn::Sequential MakeConvNetSequential(
    const FunctionalConvNetOptions& o, const torch::nn::BatchNormOptions& bn) {
  torch::nn::Sequential net;
  int64_t in = o.in_channels;
  for (size_t b = 0; b < o.kernel_sizes.size(); ++b) {
    net->push_back(torch::nn::Conv2d(
        torch::nn::Conv2dOptions(in, o.channels, o.kernel_sizes[b])
            .stride(o.strides[b])));
    torch::nn::BatchNormOptions block_bn = bn;
    block_bn.num_features(o.channels);
    net->push_back(torch::nn::BatchNorm2d(block_bn));
    net->push_back(torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true)));
    net->push_back(torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2)));
    in = o.channels;
  }
  net->push_back(torch::nn::Flatten());
  net->push_back(torch::nn::Linear(o.channels, o.n_way));
  return net;
}

// Running statistics a train-mode BatchNorm updates, one entry per block;
// empty vectors: batch statistics only (track_running_stats=False).
struct BatchNormRunningStats {
  std::vector<torch::Tensor> mean;
  std::vector<torch::Tensor> var;
  // nn.BatchNorm2d's counter (+1 per train-mode call); may stay empty.
  std::vector<torch::Tensor> num_batches_tracked;
  double momentum = 0.1;
};

class FunctionalConvNet {
 public:
  explicit FunctionalConvNet(FunctionalConvNetOptions options)
      : options_(std::move(options)) {
    if (options_.strides.size() != options_.kernel_sizes.size()) {
      throw std::invalid_argument("one stride per block");
    }
  }

  const FunctionalConvNetOptions& options() const { return options_; }

  // Tensors in the weight list: four per block, then two.
  size_t num_weights() const { return 4 * options_.kernel_sizes.size() + 2; }

  // The net on x (N, C, H, W) with weights `w`. Train-mode BatchNorm
  // (training) normalises by batch statistics and, where `stats` holds
  // running tensors, updates them in place, as F.batch_norm does; eval mode
  // normalises by `stats`.
  torch::Tensor Forward(torch::Tensor x, const std::vector<torch::Tensor>& w,
                        const BatchNormRunningStats* stats = nullptr,
                        bool training = true) const {
    if (w.size() != num_weights()) {
      throw std::invalid_argument("FunctionalConvNet: wrong weight count");
    }
    const bool has_stats = stats != nullptr && !stats->mean.empty();
    const double momentum = stats != nullptr ? stats->momentum : 0.1;
    for (size_t b = 0; b < options_.kernel_sizes.size(); ++b) {
      x = torch::conv2d(x, w[4 * b], w[4 * b + 1], options_.strides[b]);
      const torch::Tensor mean = has_stats ? stats->mean[b] : torch::Tensor();
      const torch::Tensor var = has_stats ? stats->var[b] : torch::Tensor();
      if (options_.relu_before_batch_norm) x = torch::relu_(x);
      if (training && stats != nullptr && !stats->num_batches_tracked.empty()) {
        torch::NoGradGuard no_grad;
        stats->num_batches_tracked[b].add_(1);
      }
      x = torch::batch_norm(x, w[4 * b + 2], w[4 * b + 3], mean, var,
                            training || !has_stats, momentum,
                            options_.batch_norm_eps,
                            at::globalContext().userEnabledCuDNN());
      if (!options_.relu_before_batch_norm) x = torch::relu_(x);
      if (options_.max_pool) x = torch::max_pool2d(x, {2, 2}, {2, 2});
    }
    x = x.view({x.size(0), -1});
    const size_t l = 4 * options_.kernel_sizes.size();
    return torch::linear(x, w[l], w[l + 1]);
  }

 private:
  FunctionalConvNetOptions options_;
};

// One inner-loop SGD step on fast weights: p - lr * dloss/dp. With
// create_graph the gradients stay differentiable (second-order MAML: higher's
// DifferentiableSGD, functorch's grad transform); without it they are
// constants and the step is first-order in the initial weights (maml's
// torch.autograd.grad).
inline std::vector<torch::Tensor> InnerSgdStep(
    const torch::Tensor& loss, const std::vector<torch::Tensor>& params,
    double lr, bool create_graph) {
  const std::vector<torch::Tensor> grads =
      torch::autograd::grad({loss}, params, /*grad_outputs=*/{},
                            /*retain_graph=*/create_graph, create_graph);
  std::vector<torch::Tensor> out;
  out.reserve(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    out.push_back(params[i] - grads[i] * lr);
  }
  return out;
}

// A deterministic stand-in for maml_omniglot/batch.pt (a Git-LFS Omniglot
// meta-batch that the checkout lacks), of the shapes the higher example
// samples (OmniglotNShot): per task n_way classes with k_spt support and
// k_qry query 1x28x28 images each, labels 0..n_way-1 each k times in a
// shuffled order. OmniglotNShot's images are binary strokes; here each class
// is a random binary prototype with ~15% of its pixels set (the stroke share
// the LFS object's size suggests) and each image that prototype with 5% of
// its pixels flipped. Drawn on the host from its own generator.
struct MetaBatch {
  torch::Tensor x_spt, y_spt, x_qry, y_qry;
};

inline MetaBatch SyntheticOmniglotMetaBatch(int64_t task_num, int64_t n_way,
                                            int64_t k_spt, int64_t k_qry,
                                            int64_t img_size = 28,
                                            uint64_t seed = 1337) {
  constexpr double kInk = 0.15;
  constexpr double kNoise = 0.05;
  at::Generator gen = at::detail::createCPUGenerator(seed);
  const torch::Tensor prototypes = torch::bernoulli(
      torch::full({task_num, n_way, 1, img_size, img_size}, kInk), gen);
  auto draw = [&](int64_t k, torch::Tensor* x, torch::Tensor* y) {
    std::vector<torch::Tensor> xs, ys;
    for (int64_t t = 0; t < task_num; ++t) {
      const torch::Tensor labels =
          torch::arange(n_way, torch::kLong)
              .repeat_interleave(k)
              .index_select(0, torch::randperm(n_way * k, gen, torch::kLong));
      const torch::Tensor images = prototypes[t].index_select(0, labels);
      const torch::Tensor flips =
          torch::bernoulli(torch::full(images.sizes(), kNoise), gen);
      xs.push_back((images - flips).abs());
      ys.push_back(labels);
    }
    *x = torch::stack(xs);
    *y = torch::stack(ys);
  };
  MetaBatch batch;
  draw(k_spt, &batch.x_spt, &batch.y_spt);
  draw(k_qry, &batch.x_qry, &batch.y_qry);
  return batch;
}

}  // namespace torchbench::common

#endif  // TORCHBENCH_MODELS_COMMON_FUNCTIONAL_CONVNET_H_
