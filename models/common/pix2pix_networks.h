// File: models/common/pix2pix_networks.h
//
// The networks of junyanz/pytorch-CycleGAN-and-pix2pix's models/networks.py
// as TorchBench's copy (pytorch_CycleGAN_and_pix2pix at 43ca0857) builds
// them with norm 'instance': InstanceNorm2d without affine parameters or
// running statistics, so every convolution before a norm keeps its bias.
// Module names are the reference's state_dict names (each network is one
// Sequential called `model`).
//
//   ResnetGenerator  resnet_6blocks / resnet_9blocks, reflection padding
//   NLayerDiscriminator  the PatchGAN ('basic' is n_layers 3)
//
// Background_Matting's networks.py copies ResnetBlock (with BatchNorm2d:
// ResnetBlock(dim, BlockNorm::kBatch)) and NLayerDiscriminator (with 4x4
// convolutions padded by ceil(3 / 2) = 2 instead of 1: PatchGanLayers(...,
// 2), which its MultiscaleDiscriminator registers as `layer0`).
//
// pytorch_stargan's residual generator differs (zero padding, affine
// InstanceNorm with running statistics, 4x4 transposed convolutions), so it
// keeps its own blocks.
#ifndef TORCHBENCH_MODELS_COMMON_PIX2PIX_NETWORKS_H_
#define TORCHBENCH_MODELS_COMMON_PIX2PIX_NETWORKS_H_

#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/instancenorm.h>
#include <torch/nn/modules/padding.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <algorithm>
#include <cstdint>

namespace torchbench {
namespace pix2pix {

// get_norm_layer('instance').
inline torch::nn::InstanceNorm2d InstanceNorm(int64_t channels) {
  return torch::nn::InstanceNorm2d(torch::nn::InstanceNorm2dOptions(channels)
                                       .affine(false)
                                       .track_running_stats(false));
}

inline torch::nn::Conv2d PixConv(int64_t in, int64_t out, int64_t kernel,
                                 int64_t stride, int64_t padding) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel)
                               .stride(stride)
                               .padding(padding)
                               .bias(true));
}

inline torch::nn::ReLU PixRelu() {
  return torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true));
}

// The norm_layer a ResnetBlock is built with: InstanceNorm as above, or
// BatchNorm2d with its defaults (affine, running statistics).
enum class BlockNorm { kInstance, kBatch };

// ResnetBlock with padding_type 'reflect' and no dropout (CycleGAN sets
// no_dropout): x + conv_block(x).
class ResnetBlockImpl : public torch::nn::Module {
 public:
  explicit ResnetBlockImpl(int64_t dim, BlockNorm norm = BlockNorm::kInstance) {
    torch::nn::Sequential block;
    for (int i = 0; i < 2; ++i) {
      block->push_back(torch::nn::ReflectionPad2d(1));
      block->push_back(PixConv(dim, dim, 3, 1, 0));
      if (norm == BlockNorm::kBatch) {
        block->push_back(torch::nn::BatchNorm2d(dim));
      } else {
        block->push_back(InstanceNorm(dim));
      }
      if (i == 0) block->push_back(PixRelu());
    }
    conv_block_ = register_module("conv_block", block);
  }

  torch::Tensor forward(const torch::Tensor& x) {
    return x + conv_block_->forward(x);
  }

 private:
  torch::nn::Sequential conv_block_{nullptr};
};
TORCH_MODULE(ResnetBlock);

// ResnetGenerator: 7x7 stem, two stride-2 downsamplings, n_blocks residual
// blocks at 4*ngf channels, two transposed-convolution upsamplings, 7x7 head
// and tanh.
class ResnetGeneratorImpl : public torch::nn::Module {
 public:
  ResnetGeneratorImpl(int64_t input_nc, int64_t output_nc, int64_t ngf,
                      int n_blocks) {
    torch::nn::Sequential layers(torch::nn::ReflectionPad2d(3),
                                 PixConv(input_nc, ngf, 7, 1, 0),
                                 InstanceNorm(ngf), PixRelu());
    constexpr int kDownsampling = 2;
    for (int i = 0; i < kDownsampling; ++i) {
      const int64_t c = ngf << i;
      layers->push_back(PixConv(c, c * 2, 3, 2, 1));
      layers->push_back(InstanceNorm(c * 2));
      layers->push_back(PixRelu());
    }
    for (int i = 0; i < n_blocks; ++i) {
      layers->push_back(ResnetBlock(ngf << kDownsampling));
    }
    for (int i = 0; i < kDownsampling; ++i) {
      const int64_t c = ngf << (kDownsampling - i);
      layers->push_back(torch::nn::ConvTranspose2d(
          torch::nn::ConvTranspose2dOptions(c, c / 2, 3)
              .stride(2)
              .padding(1)
              .output_padding(1)
              .bias(true)));
      layers->push_back(InstanceNorm(c / 2));
      layers->push_back(PixRelu());
    }
    layers->push_back(torch::nn::ReflectionPad2d(3));
    layers->push_back(PixConv(ngf, output_nc, 7, 1, 0));
    layers->push_back(torch::nn::Tanh());
    model_ = register_module("model", layers);
  }

  torch::Tensor forward(const torch::Tensor& x) { return model_->forward(x); }

 private:
  torch::nn::Sequential model_{nullptr};
};
TORCH_MODULE(ResnetGenerator);

// The PatchGAN's layers: 4x4 convolutions (each padded by `padding`) with
// LeakyReLU(0.2), n_layers stride-2 stages (channels doubling up to 8*ndf),
// one stride-1 stage and a 1-channel stride-1 prediction map.
inline torch::nn::Sequential PatchGanLayers(int64_t input_nc, int64_t ndf,
                                            int n_layers, int64_t padding) {
  auto leaky = [] {
    return torch::nn::LeakyReLU(
        torch::nn::LeakyReLUOptions().negative_slope(0.2).inplace(true));
  };
  torch::nn::Sequential layers(PixConv(input_nc, ndf, 4, 2, padding), leaky());
  int64_t mult = 1;
  for (int n = 1; n <= n_layers; ++n) {
    const int64_t prev = mult;
    mult = std::min<int64_t>(int64_t{1} << n, 8);
    layers->push_back(
        PixConv(ndf * prev, ndf * mult, 4, n < n_layers ? 2 : 1, padding));
    layers->push_back(InstanceNorm(ndf * mult));
    layers->push_back(leaky());
  }
  layers->push_back(PixConv(ndf * mult, 1, 4, 1, padding));
  return layers;
}

// NLayerDiscriminator: PatchGanLayers (padding 1) as one Sequential `model`.
class NLayerDiscriminatorImpl : public torch::nn::Module {
 public:
  NLayerDiscriminatorImpl(int64_t input_nc, int64_t ndf, int n_layers) {
    model_ =
        register_module("model", PatchGanLayers(input_nc, ndf, n_layers, 1));
  }

  torch::Tensor forward(const torch::Tensor& x) { return model_->forward(x); }

 private:
  torch::nn::Sequential model_{nullptr};
};
TORCH_MODULE(NLayerDiscriminator);

}  // namespace pix2pix
}  // namespace torchbench

#endif  // TORCHBENCH_MODELS_COMMON_PIX2PIX_NETWORKS_H_
