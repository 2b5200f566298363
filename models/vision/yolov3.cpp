// TorchBench's yolov3 (torchbenchmark/models/yolov3 at 43ca0857: its own copy
// of ultralytics/yolov3, __init__.py, yolo_train.py, yolo_models.py,
// yolo_utils/{utils,layers,torch_utils}.py): YOLOv3-SPP, Darknet built from
// cfg/yolov3-spp.cfg with 80 classes.
//
// The network (vision/yolov3_net.h) is the cfg's layer list written out,
// under the reference's state_dict names (module_list.<i>.Conv2d.weight).
//
// One Train call is the reference's train(): Model.__init__ built the
// model, the nesterov SGD with its three groups (BatchNorm weights; conv
// weights, which get the weight decay; biases) and the ModelEMA once; every
// call runs train_loop(epochs=1) with one prefetched batch, so it is always
// batch ni = 0 of the burn-in: giou ratio gr 0, accumulate 1, lr 0 for the
// weight groups and 0.1 for the biases, weight decay 0, momentum 0.9 (the
// hyp's 0.937 and 5e-4 are reached only at ni = 500). Forward at 416x416,
// compute_loss (GIoU box, objectness and class BCE, build_targets with the
// 0.2 anchor-IoU match), loss * batch / 64, backward, step, zero_grad, EMA
// update, then the progress line's reads of the four mean losses (host
// syncs) and torch.cuda.empty_cache(). Its LambdaLR's step() at the end is
// left out: the next call's burn-in overwrites every lr it sets. The loss's
// small tensors (ft([0]) accumulators, pos_weights, the mean-loss buffer,
// build_targets' offsets and class rows) are made on the host and copied
// over, and build_targets' class assert reads each layer's maximum back,
// as in the reference.
//
// One Eval call is eval(): the model (built at img_size 512, eval mode) on
// rand(B, 3, 384, 512), non_max_suppression (conf 0.3, IoU 0.6, best class,
// merge) with torchvision's nms (vision_ops.h), whose detections the
// reference computes and drops; returns the inference boxes (the
// reference's out[0]).
//
// Train inputs: the reference reads coco128 (not bundled here) as 416x416
// mosaics (4 images, random affine off, HSV jitter, left-right flips) at
// the train batch. The stand-in is deterministic: uint8 images (as the data
// loader yields, divided by 255 in the step) and, per image, 2 to 12 boxes
// (mean 7: coco128 has 929 labels on 128 images, 7.3 each), class 0
// (person, about a quarter of coco128's labels) for a quarter of them and
// classes 1..79 uniformly otherwise, normalised widths and heights
// log-uniform in [0.02, 0.6] (COCO's boxes are mostly small: about 40% under
// 32x32 px) and centres keeping the box inside the image. These figures are
// from COCO's published statistics, not measured on coco128. The targets
// stay float32 under every precision, as the loader's labels are.
//
// The EMA's copy of the state is made in the constructor (the reference's
// ModelEMA deepcopies in __init__) and lives outside module(), so the
// counts, like the reference's, cover the model alone; under fp16/bf16 it
// stays float32, as a copy made before TorchBench converts the model does.
#include <torch/nn/functional/loss.h>
#include <torch/nn/module.h>
#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "torchbench/amp.h"
#include "torchbench/checks.h"
#include "torchbench/deterministic_fill.h"
#include "torchbench/golden.h"
#include "torchbench/memory.h"
#include "torchbench/model.h"
#include "torchbench/optim.h"
#include "torchbench/registry.h"
#include "torchbench/vision_ops.h"
#include "vision/yolov3_net.h"

namespace torchbench {
namespace yolov3_model {
namespace {

namespace F = torch::nn::functional;
using torch::indexing::Ellipsis;
using torch::indexing::None;
using torch::indexing::Slice;
using yolov3::Darknet;
using yolov3::DarknetImpl;
using yolov3::kAnchorsPerLayer;
using yolov3::kClasses;

constexpr int64_t kTrainSize = 416;  // --img 416
constexpr int64_t kEvalHeight = 384;
constexpr int64_t kEvalWidth = 512;
// The golden check's sizes (tools/golden/adapters/yolov3.py), also the CPU
// tests' (ModelConfig::small_inputs): every YOLO scale still has a grid.
constexpr int64_t kSmallTrainSize = 64;
constexpr int64_t kSmallEvalHeight = 64;
constexpr int64_t kSmallEvalWidth = 96;
constexpr int64_t kGoldenTargetsPerImage = 4;

// yolo_train.py's hyp, as Model.__init__ leaves it (cls *= nc / 80 = 1).
constexpr double kGiouGain = 3.54;
constexpr double kClsGain = 37.4;
constexpr double kObjGain = 64.3;
constexpr double kIouThreshold = 0.20;  // iou_t: anchor-target match
constexpr double kLr0 = 0.01;
constexpr double kMomentum = 0.937;
constexpr double kWeightDecay = 0.0005;
constexpr double kBurnInStartMomentum = 0.9;
constexpr double kBurnInStartBiasLr = 0.1;
constexpr int64_t kBurnIn = 500;  // n_burn = max(3 * nb, 500), nb <= 17
constexpr double kEmaDecay = 0.9999;

// non_max_suppression's settings as eval() calls it.
constexpr double kConfThreshold = 0.3;
constexpr double kNmsIouThreshold = 0.6;
constexpr double kMinWh = 2;
constexpr double kMaxWh = 4096;

// np.interp(x, [x0, x1], [y0, y1]) for x0 <= x <= x1.
double Interp(double x, double x0, double x1, double y0, double y1) {
  return y0 + (y1 - y0) * (x - x0) / (x1 - x0);
}

// build_targets' matches for one YOLO layer.
struct LayerTargets {
  torch::Tensor image, anchor, gj, gi;  // indices into the layer's map
  torch::Tensor box;                    // (n, 4): xy within the cell, wh
  torch::Tensor anchor_wh;              // (n, 2) in grid units
  torch::Tensor cls;
};

// wh_iou: the (N, M) IoUs of boxes sharing a centre.
torch::Tensor WhIou(const torch::Tensor& wh1, const torch::Tensor& wh2) {
  torch::Tensor a = wh1.unsqueeze(1), b = wh2.unsqueeze(0);
  torch::Tensor inter = torch::min(a, b).prod(2);
  return inter / (a.prod(2) + b.prod(2) - inter);
}

// build_targets: each target (image, class, x, y, w, h; normalised) goes to
// every anchor whose shape-IoU with it exceeds iou_t, in the cell holding
// its centre.
std::vector<LayerTargets> BuildTargets(DarknetImpl& model,
                                       const std::vector<torch::Tensor>& p,
                                       const torch::Tensor& targets) {
  const int64_t nt = targets.size(0);
  std::vector<LayerTargets> out;
  torch::Tensor gain = torch::ones({6}, targets.options());
  // The overlap offsets, made on the host, copied and cast; only the rect
  // styles (off here) read them.
  [[maybe_unused]] const torch::Tensor off =
      torch::tensor({1, 0, 0, 1, -1, 0, 0, -1}, torch::kLong)
          .view({4, 2})
          .to(targets.device())
          .to(torch::kFloat);
  for (size_t i = 0; i < p.size(); ++i) {
    torch::Tensor anchors =
        model.AnchorVec(static_cast<int>(i), targets.device());
    const int64_t ny = p[i].size(2), nx = p[i].size(3);
    gain.index_put_({Slice(2, None)},
                    torch::tensor({nx, ny, nx, ny}).to(gain.options()));
    torch::Tensor at =
        torch::arange(kAnchorsPerLayer, targets.options().dtype(torch::kLong))
            .view({kAnchorsPerLayer, 1})
            .repeat({1, nt});
    torch::Tensor t = targets * gain;
    torch::Tensor a = torch::empty({0}, at.options());
    if (nt > 0) {
      torch::Tensor j =
          WhIou(anchors, t.index({Slice(), Slice(4, 6)})) > kIouThreshold;
      a = at.index({j});
      t = t.repeat({kAnchorsPerLayer, 1, 1}).index({j});
    }
    torch::Tensor bc = t.index({Slice(), Slice(None, 2)}).to(torch::kLong).t();
    torch::Tensor gxy = t.index({Slice(), Slice(2, 4)});
    torch::Tensor gwh = t.index({Slice(), Slice(4, 6)});
    // (gxy - offsets).long() with offsets the int 0.
    torch::Tensor gij = (gxy - 0).to(torch::kLong);
    LayerTargets lt;
    lt.image = bc[0];
    lt.cls = bc[1];
    lt.anchor = a;
    lt.gi = gij.index({Slice(), 0});
    lt.gj = gij.index({Slice(), 1});
    lt.box = torch::cat({gxy - gij, gwh}, 1);
    lt.anchor_wh = anchors.index({a});
    // assert c.max() < model.nc: a host read per layer with targets.
    if (lt.cls.size(0) > 0) {
      TORCH_CHECK((lt.cls.max() < kClasses).item<bool>(),
                  "yolov3: a target class is not below ", kClasses);
    }
    out.push_back(std::move(lt));
  }
  return out;
}

// bbox_iou(box1, box2, x1y1x2y2=False, GIoU=True) on (4, n) xywh columns.
torch::Tensor Giou(const torch::Tensor& box1, const torch::Tensor& box2) {
  torch::Tensor b1_x1 = box1[0] - box1[2] / 2, b1_x2 = box1[0] + box1[2] / 2;
  torch::Tensor b1_y1 = box1[1] - box1[3] / 2, b1_y2 = box1[1] + box1[3] / 2;
  torch::Tensor b2_x1 = box2[0] - box2[2] / 2, b2_x2 = box2[0] + box2[2] / 2;
  torch::Tensor b2_y1 = box2[1] - box2[3] / 2, b2_y2 = box2[1] + box2[3] / 2;
  torch::Tensor inter =
      (torch::min(b1_x2, b2_x2) - torch::max(b1_x1, b2_x1)).clamp_min(0) *
      (torch::min(b1_y2, b2_y2) - torch::max(b1_y1, b2_y1)).clamp_min(0);
  torch::Tensor w1 = b1_x2 - b1_x1, h1 = b1_y2 - b1_y1;
  torch::Tensor w2 = b2_x2 - b2_x1, h2 = b2_y2 - b2_y1;
  torch::Tensor union_area = (w1 * h1 + 1e-16) + w2 * h2 - inter;
  torch::Tensor iou = inter / union_area;
  torch::Tensor cw = torch::max(b1_x2, b2_x2) - torch::min(b1_x1, b2_x1);
  torch::Tensor ch = torch::max(b1_y2, b2_y2) - torch::min(b1_y1, b2_y1);
  torch::Tensor c_area = cw * ch + 1e-16;
  return iou - (c_area - union_area) / c_area;
}

// compute_loss: (loss, [lbox, lobj, lcls, loss]). The accumulators are the
// reference's ft([0]) (float32; float64 in the golden check, whose adapter
// makes float64 the default dtype); `gr` is the model's giou ratio.
std::pair<torch::Tensor, torch::Tensor> ComputeLoss(
    DarknetImpl& model, const std::vector<torch::Tensor>& p,
    const torch::Tensor& targets, double gr,
    torch::ScalarType accumulator_dtype) {
  // ft([value]): a one-element tensor made on the host and copied over.
  auto ft = [&](double value) {
    return torch::full({1}, value, torch::dtype(accumulator_dtype))
        .to(targets.device());
  };
  torch::Tensor lcls = ft(0);
  torch::Tensor lbox = ft(0);
  torch::Tensor lobj = ft(0);
  std::vector<LayerTargets> tg = BuildTargets(model, p, targets);
  // BCEWithLogitsLoss(pos_weight=ft([cls_pw])) and ft([obj_pw]), both 1.
  const auto bce_cls =
      F::BinaryCrossEntropyWithLogitsFuncOptions().pos_weight(ft(1));
  const auto bce_obj =
      F::BinaryCrossEntropyWithLogitsFuncOptions().pos_weight(ft(1));
  for (size_t i = 0; i < p.size(); ++i) {
    const LayerTargets& t = tg[i];
    torch::Tensor tobj = torch::zeros_like(p[i].select(-1, 0));
    const int64_t nb = t.image.size(0);
    if (nb > 0) {
      torch::Tensor ps = p[i].index({t.image, t.anchor, t.gj, t.gi});
      torch::Tensor pxy = ps.index({Slice(), Slice(None, 2)}).sigmoid();
      torch::Tensor pwh =
          ps.index({Slice(), Slice(2, 4)}).exp().clamp_max(1e3) * t.anchor_wh;
      torch::Tensor giou = Giou(torch::cat({pxy, pwh}, 1).t(), t.box.t());
      lbox.add_(torch::rsub(giou, 1.0).mean());
      tobj.index_put_(
          {t.image, t.anchor, t.gj, t.gi},
          (1.0 - gr) + gr * giou.detach().clamp_min(0).to(tobj.scalar_type()));
      torch::Tensor cls = ps.index({Slice(), Slice(5, None)});
      torch::Tensor target = torch::zeros_like(cls);  // smooth_BCE(eps=0)
      // t[range(nb), tcls[i]] = cp: the range becomes a host index tensor.
      target.index_put_({torch::arange(nb, torch::kLong), t.cls}, 1.0);
      lcls.add_(F::binary_cross_entropy_with_logits(cls, target, bce_cls));
    }
    lobj.add_(
        F::binary_cross_entropy_with_logits(p[i].select(-1, 4), tobj, bce_obj));
  }
  lbox.mul_(kGiouGain);
  lobj.mul_(kObjGain);
  lcls.mul_(kClsGain);
  torch::Tensor loss = lbox + lobj + lcls;
  return {loss, torch::cat({lbox, lobj, lcls, loss}).detach()};
}

torch::Tensor XywhToXyxy(const torch::Tensor& x) {
  torch::Tensor xy = x.index({Slice(), Slice(None, 2)});
  torch::Tensor half = x.index({Slice(), Slice(2, 4)}) / 2;
  return torch::cat({xy - half, xy + half}, 1);
}

// box_iou: the (N, M) IoUs of xyxy boxes.
torch::Tensor BoxIou(const torch::Tensor& box1, const torch::Tensor& box2) {
  auto area = [](const torch::Tensor& b) {
    return (b.select(1, 2) - b.select(1, 0)) *
           (b.select(1, 3) - b.select(1, 1));
  };
  torch::Tensor b1 = box1.unsqueeze(1);
  torch::Tensor inter = (torch::min(b1.index({Ellipsis, Slice(2, None)}),
                                    box2.index({Slice(), Slice(2, None)})) -
                         torch::max(b1.index({Ellipsis, Slice(None, 2)}),
                                    box2.index({Slice(), Slice(None, 2)})))
                            .clamp_min(0)
                            .prod(2);
  return inter / (area(box1).unsqueeze(1) + area(box2) - inter);
}

// non_max_suppression(pred, 0.3, 0.6, multi_label=False): per image, the
// kept (x1, y1, x2, y2, conf, class) rows (undefined when none), boxes
// merged by their overlapping neighbours' scores. `float_dtype` is what the
// reference's .float() casts give.
std::vector<torch::Tensor> NonMaxSuppression(const torch::Tensor& prediction,
                                             torch::ScalarType float_dtype) {
  std::vector<torch::Tensor> output(prediction.size(0));
  for (int64_t xi = 0; xi < prediction.size(0); ++xi) {
    torch::Tensor x = prediction[xi];
    x = x.index({x.select(1, 4) > kConfThreshold});
    torch::Tensor wh = x.index({Slice(), Slice(2, 4)});
    x = x.index({((wh > kMinWh) & (wh < kMaxWh)).all(1)});
    if (x.size(0) == 0) continue;
    x.index({Slice(), Slice(5, None)}).mul_(x.index({Slice(), Slice(4, 5)}));
    torch::Tensor box = XywhToXyxy(x.index({Slice(), Slice(None, 4)}));
    auto [conf, j] = x.index({Slice(), Slice(5, None)}).max(1);
    x = torch::cat({box, conf.unsqueeze(1), j.to(float_dtype).unsqueeze(1)}, 1)
            .index({conf > kConfThreshold});
    const int64_t n = x.size(0);
    if (n == 0) continue;
    torch::Tensor boxes =
        x.index({Slice(), Slice(None, 4)}).clone() +
        x.index({Slice(), 5}).view({-1, 1}) * kMaxWh;  // offset per class
    torch::Tensor scores = x.index({Slice(), 4});
    torch::Tensor i = vision_ops::Nms(boxes, scores, kNmsIouThreshold);
    if (1 < n && n < 3000) {
      torch::Tensor weights =
          (BoxIou(boxes.index({i}), boxes) > kNmsIouThreshold) *
          scores.unsqueeze(0);
      x.index_put_({i, Slice(None, 4)},
                   torch::mm(weights, x.index({Slice(), Slice(None, 4)}))
                           .to(float_dtype) /
                       weights.sum(1, /*keepdim=*/true));
    }
    output[xi] = x.index({i});
  }
  return output;
}

// The parameters and buffers ModelEMA averages: the state_dict's floating
// entries.
std::vector<torch::Tensor> FloatingState(const torch::nn::Module& module) {
  std::vector<torch::Tensor> out;
  for (const auto& p : module.named_parameters()) out.push_back(p.value());
  for (const auto& b : module.named_buffers()) {
    if (b.value().is_floating_point()) out.push_back(b.value());
  }
  return out;
}

class Yolov3 final : public Model, public GoldenCheck {
 public:
  explicit Yolov3(const ModelConfig& config)
      : mode_(config.mode), input_dtype_(config.dtype()) {
    vision_ops::RequireLoaded();
    net_ = Darknet();
    net_->to(config.device);
    const int64_t batch = config.batch_size;
    if (mode_ == Mode::kEval) {
      net_->eval();
      const int64_t height =
          config.small_inputs ? kSmallEvalHeight : kEvalHeight;
      const int64_t width = config.small_inputs ? kSmallEvalWidth : kEvalWidth;
      images_ = torch::rand({batch, 3, height, width})
                    .to(config.device, config.dtype());
      return;
    }
    MakeTrainInputs(batch, config.small_inputs ? kSmallTrainSize : kTrainSize,
                    config.device);
    // get_train()'s groups: pg0 everything else (BatchNorm weights), pg1
    // conv weights (weight decay), pg2 biases.
    std::vector<optim::ParamGroup> groups(3);
    for (const auto& p : net_->named_parameters()) {
      const std::string& name = p.key();
      const int g = name.find(".bias") != std::string::npos           ? 2
                    : name.find("Conv2d.weight") != std::string::npos ? 1
                                                                      : 0;
      groups[g].params.push_back(p.value());
    }
    groups[1].weight_decay = kWeightDecay;
    for (auto& g : groups) g.lr = kLr0;
    // Every call's burn-in sets momentum to its ni = 0 value.
    optimizer_ = std::make_unique<optim::Sgd>(
        std::move(groups),
        optim::SgdOptions{
            .momentum = Interp(0, 0, kBurnIn, kBurnInStartMomentum, kMomentum),
            .nesterov = true},
        config.optimizer);
    ResetEma();
    net_->train();
  }

  torch::Tensor Step() override {
    return mode_ == Mode::kEval ? EvalStep() : TrainStep();
  }

  torch::nn::Module& module() override { return *net_; }

  // eval() and two train() calls on filled weights and inputs at the small
  // sizes, in float64, as tools/golden/adapters/yolov3.py records them.
  std::map<std::string, torch::Tensor> GoldenOutputs() override {
    net_->to(torch::kDouble);
    input_dtype_ = float_dtype_ = torch::kDouble;
    ResetEma();  // the adapter fills the EMA's copy as the model
    const torch::Device device = images_.device();
    const int64_t batch = images_.size(0);
    std::map<std::string, torch::Tensor> out = recorder_.Capture([&] {
      torch::NoGradGuard no_grad;
      net_->eval();
      images_ = DeterministicTensor(
                    "images", {batch, 3, kSmallEvalHeight, kSmallEvalWidth},
                    torch::kFloat, 0.5, 0.5)
                    .to(device, torch::kDouble);
      EvalStep();
    });
    images_ = DeterministicIntegers(
                  "train_images", {batch, 3, kSmallTrainSize, kSmallTrainSize},
                  0, 256)
                  .to(device, torch::kUInt8);
    const int64_t n = batch * kGoldenTargetsPerImage;
    targets_ =
        torch::cat(
            {torch::arange(batch)
                 .repeat_interleave(kGoldenTargetsPerImage)
                 .unsqueeze(1)
                 .to(torch::kFloat),
             DeterministicIntegers("train_classes", {n, 1}, 0, kClasses)
                 .to(torch::kFloat),
             DeterministicTensor("train_xy", {n, 2}, torch::kFloat, 0.5, 0.45),
             DeterministicTensor("train_wh", {n, 2}, torch::kFloat, 0.25, 0.2)},
            1)
            .to(device, torch::kDouble);
    out.merge(recorder_.Capture([&] { TrainStep(); }));
    RecordEdges(*net_, "after_step:", &out);
    for (const auto& b : net_->named_buffers()) {
      if (b.key() == "module_list.0.BatchNorm2d.running_mean") {
        out["after_step:" + b.key()] = b.value().detach().clone();
      }
    }
    const auto params = net_->named_parameters();
    for (size_t k = 0; k < params.size(); ++k) {
      if (IsEdge(params[k].key())) {
        out["ema:" + params[k].key()] = ema_[k].clone();
      }
    }
    TrainStep();
    RecordEdges(*net_, "after_2_steps:", &out);
    return out;
  }

 private:
  // The parameters the golden file records.
  static bool IsEdge(const std::string& name) {
    for (const char* edge :
         {"module_list.0.Conv2d.weight", "module_list.0.BatchNorm2d.weight",
          "module_list.0.BatchNorm2d.bias", "module_list.112.Conv2d.weight",
          "module_list.112.Conv2d.bias"}) {
      if (name == edge) return true;
    }
    return false;
  }

  static void RecordEdges(const torch::nn::Module& module,
                          const std::string& prefix,
                          std::map<std::string, torch::Tensor>* out,
                          bool gradients = false) {
    for (const auto& p : module.named_parameters()) {
      if (!IsEdge(p.key())) continue;
      (*out)[prefix + p.key()] =
          (gradients ? p.value().grad() : p.value()).detach().clone();
    }
  }

  // The stand-in for the prefetched coco128 batch (the file's header says
  // what it follows).
  void MakeTrainInputs(int64_t batch, int64_t size,
                       const torch::Device& device) {
    images_ = DeterministicIntegers("images", {batch, 3, size, size}, 0, 256)
                  .to(device, torch::kUInt8);
    torch::Tensor counts =
        DeterministicIntegers("target_counts", {batch}, 2, 13);
    const int64_t n = counts.sum().item<int64_t>();
    torch::Tensor image = torch::repeat_interleave(torch::arange(batch), counts)
                              .to(torch::kFloat);
    torch::Tensor person =
        DeterministicTensor("target_person", {n}) < -0.5;  // a quarter
    torch::Tensor cls =
        torch::where(person, torch::zeros({n}, torch::kLong),
                     DeterministicIntegers("target_classes", {n}, 1, kClasses));
    // log-uniform in [0.02, 0.6]
    const double lo = std::log(0.02), hi = std::log(0.6);
    torch::Tensor wh = torch::exp(
        lo + (hi - lo) * (DeterministicTensor("target_wh", {n, 2}) + 1) / 2);
    torch::Tensor xy =
        wh / 2 + (1 - wh) * (DeterministicTensor("target_xy", {n, 2}) + 1) / 2;
    targets_ =
        torch::cat(
            {image.unsqueeze(1), cls.unsqueeze(1).to(torch::kFloat), xy, wh}, 1)
            .to(device);
  }

  // ModelEMA(model): a copy of the state, zero updates.
  void ResetEma() {
    if (mode_ != Mode::kTrain) return;
    ema_.clear();
    for (const torch::Tensor& t : FloatingState(*net_)) {
      ema_.push_back(t.detach().clone());
    }
    ema_updates_ = 0;
  }

  // ModelEMA.update: v = d * v + (1 - d) * model's, with the decay ramp.
  void UpdateEma() {
    torch::NoGradGuard no_grad;
    ++ema_updates_;
    const double d =
        kEmaDecay * (1 - std::exp(-static_cast<double>(ema_updates_) / 2000));
    const std::vector<torch::Tensor> state = FloatingState(*net_);
    for (size_t k = 0; k < state.size(); ++k) {
      ema_[k].mul_(d);
      ema_[k].add_((1.0 - d) * state[k].detach());
    }
  }

  // Model.eval(): forward and non_max_suppression, whose detections the
  // reference drops. Returns the inference boxes (its out[0]).
  torch::Tensor EvalStep() {
    auto [p, io] = net_->forward(images_);
    std::vector<torch::Tensor> detections = NonMaxSuppression(io, float_dtype_);
    if (recorder_.recording()) {
      recorder_.Record("eval_output", io.clone());
      for (size_t i = 0; i < p.size(); ++i) {
        recorder_.Record("eval_p." + std::to_string(i), p[i].clone());
      }
      for (size_t i = 0; i < detections.size(); ++i) {
        recorder_.Record("eval_detections." + std::to_string(i),
                         detections[i].defined() ? detections[i].clone()
                                                 : torch::zeros({0, 6}));
      }
    }
    return io;
  }

  // Model.train(): batch ni = 0 of the burn-in (the file's header says
  // why every call is). Records the maps, the loss items and the edge
  // gradients before the step. Returns the scaled loss (the reference
  // returns its zero results).
  torch::Tensor TrainStep() {
    constexpr double ni = 0;
    const double gr = Interp(ni, 0, kBurnIn, 0.0, 1.0);
    const int64_t accumulate = std::max<int64_t>(
        1, std::llround(Interp(ni, 0, kBurnIn, 1, 64.0 / images_.size(0))));
    auto& groups = optimizer_->param_groups();
    for (size_t j = 0; j < groups.size(); ++j) {
      // Bias lr falls from 0.1 to lr0, the others rise from 0 (lf(0) = 1).
      groups[j].lr =
          Interp(ni, 0, kBurnIn, j == 2 ? kBurnInStartBiasLr : 0.0, kLr0);
      groups[j].weight_decay =
          Interp(ni, 0, kBurnIn, 0.0, j == 1 ? kWeightDecay : 0.0);
    }
    net_->train();
    // mloss = torch.zeros(4).to(device).
    torch::Tensor mloss =
        torch::zeros({4}, torch::dtype(float_dtype_)).to(images_.device());
    torch::Tensor imgs = (images_.to(float_dtype_) / 255.0).to(input_dtype_);
    auto [p, unused] = net_->forward(imgs);
    auto [loss, items] = ComputeLoss(*net_, p, targets_, gr, float_dtype_);
    // `if not torch.isfinite(loss)`: a host read; the reference then ends
    // the loop without a backward (the harness reports the loss).
    if (!torch::isfinite(loss).item<bool>()) {
      StepHasNoBackward();
      return loss.detach();
    }
    loss = loss * (static_cast<double>(images_.size(0)) / 64);
    Backward(loss);
    if (recorder_.recording()) {
      for (size_t i = 0; i < p.size(); ++i) {
        recorder_.Record("output." + std::to_string(i), p[i].clone());
      }
      const char* keys[] = {"loss.giou", "loss.obj", "loss.cls", "loss"};
      for (int64_t i = 0; i < 4; ++i) {
        recorder_.Record(keys[i], items[i].clone());
      }
      std::map<std::string, torch::Tensor> grads;
      RecordEdges(*net_, "grad:", &grads, /*gradients=*/true);
      for (const auto& [key, grad] : grads) recorder_.Record(key, grad);
    }
    if (static_cast<int64_t>(ni) % accumulate == 0) {
      optimizer_->Step();
      optimizer_->ZeroGrad();
      UpdateEma();
    }
    // The progress line: mloss = (mloss * i + loss_items) / (i + 1), then
    // '%10.3g' of each of its four entries, a host read each.
    constexpr int64_t i = 0;
    mloss = (mloss * i + items) / (i + 1);
    for (int64_t k = 0; k < 4; ++k) mloss[k].item<double>();
    // train_loop ends with torch.cuda.empty_cache().
    ReleaseCachedMemory(images_.device());
    return loss.detach();
  }

  Mode mode_;
  // The dtype of the reference's .float() casts and ft() accumulators:
  // float32, float64 only in the golden check (as its adapter makes them).
  torch::ScalarType float_dtype_ = torch::kFloat;
  torch::ScalarType input_dtype_;  // config.dtype(): the network's input
  Darknet net_{nullptr};
  torch::Tensor images_;   // Eval: floats; Train: uint8, as loaded
  torch::Tensor targets_;  // Train: (n, 6) image, class, xywh (float32)
  std::unique_ptr<optim::Sgd> optimizer_;
  std::vector<torch::Tensor> ema_;  // ModelEMA's copy, FloatingState order
  int64_t ema_updates_ = 0;
  GoldenRecorder recorder_;
};

}  // namespace

TORCHBENCH_REGISTER_MODEL(
    ModelSpec(
        {.name = "yolov3",
         .domain = "vision",
         .task = "object detection",
         .reference = "TorchBench yolov3 (ultralytics YOLOv3-SPP, "
                      "yolov3-spp.cfg)",
         .train_batch_size = 16,  // DEFAULT_TRAIN_BSIZE
         .eval_batch_size = 8,    // DEFAULT_EVAL_BSIZE
         // Darknet(cfg/yolov3-spp.cfg) from the reference's yolo_models.py
         // (pinned torch), counted in Python (sum(p.numel() ...) over
         // parameters() and over buffers(): 72 BatchNorms' running statistics
         // and num_batches_tracked; YOLOLayer's anchors are plain attributes).
         .reference_parameters = 62998749,
         .reference_buffers = 53705,
         .default_cuda_eval_precision = Precision::kAmpFp16,  // "amp"
         // eval() and two train() calls of the reference's own code on filled
         // weights and inputs at 64x96 / 64x64, in float64.
         // TorchBench's metadata.yaml (tests/golden/cudnn_flags.txt).
         .train_cudnn = {.benchmark = true},
         .eval_cudnn = {.benchmark = true},
         .checks = {.golden_file = "yolov3.golden"}}),
    MakeModel<Yolov3>());

}  // namespace yolov3_model
}  // namespace torchbench
