#include "worker/models.hpp"

#include <torch/nn.h>

#include <functional>
#include <map>

#include "worker/model_summary.hpp"
#include "worker/models_lm.hpp"
#include "worker/worker_error.hpp"

namespace trainbench::worker {
namespace {

namespace nn = torch::nn;

// ---------------------------------------------------------------- MLP

class Mlp : public BenchModel {
 public:
  explicit Mlp(const MlpSpec& spec) : input_(spec.input_size), classes_(spec.num_classes) {
    if (spec.input_size < 1 || spec.num_classes < 1) {
      throw ConfigError("mlp: inputSize and numClasses must be >= 1");
    }
    std::int64_t in = spec.input_size;
    int index = 0;
    for (int hidden : spec.hidden_sizes) {
      if (hidden < 1) throw ConfigError("mlp: hidden sizes must be >= 1");
      layers_.push_back(register_module("fc" + std::to_string(index++), nn::Linear(in, hidden)));
      in = hidden;
    }
    layers_.push_back(
        register_module("fc" + std::to_string(index), nn::Linear(in, spec.num_classes)));
  }

  torch::Tensor forward(torch::Tensor x) override {
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      x = layers_[i]->forward(x);
      if (i + 1 < layers_.size()) x = torch::relu(x);
    }
    return x;
  }
  std::vector<ModelBlock> blocks() override {
    std::vector<ModelBlock> out;
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      std::shared_ptr<nn::LinearImpl> layer = layers_[i].ptr();
      const bool relu = i + 1 < layers_.size();
      out.push_back({"fc" + std::to_string(i), {layer}, [layer, relu](torch::Tensor x) {
                       x = layer->forward(x);
                       return relu ? torch::relu(x) : x;
                     }});
    }
    return out;
  }
  std::vector<std::int64_t> example_shape() const override { return {input_}; }
  std::int64_t num_classes() const override { return classes_; }

 private:
  std::int64_t input_;
  std::int64_t classes_;
  std::vector<nn::Linear> layers_;
};

// ---------------------------------------------------------------- ResNet (torchvision layout)

nn::Conv2d conv3x3(std::int64_t in, std::int64_t out, std::int64_t stride, std::int64_t groups) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).groups(groups).bias(false));
}

nn::Conv2d conv1x1(std::int64_t in, std::int64_t out, std::int64_t stride) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, 1).stride(stride).bias(false));
}

struct BlockShape {
  std::int64_t inplanes;
  std::int64_t planes;
  std::int64_t stride;
  std::int64_t groups;
  std::int64_t base_width;
  bool downsample;
};

class BasicBlock : public nn::Module {
 public:
  static constexpr std::int64_t kExpansion = 1;
  explicit BasicBlock(const BlockShape& s) {
    conv1_ = register_module("conv1", conv3x3(s.inplanes, s.planes, s.stride, 1));
    bn1_ = register_module("bn1", nn::BatchNorm2d(s.planes));
    conv2_ = register_module("conv2", conv3x3(s.planes, s.planes, 1, 1));
    bn2_ = register_module("bn2", nn::BatchNorm2d(s.planes));
    if (s.downsample) {
      downsample_ = register_module(
          "downsample", nn::Sequential(conv1x1(s.inplanes, s.planes * kExpansion, s.stride),
                                       nn::BatchNorm2d(s.planes * kExpansion)));
    }
  }
  torch::Tensor forward(torch::Tensor x) {
    torch::Tensor identity = downsample_ ? downsample_->forward(x) : x;
    torch::Tensor out = torch::relu(bn1_->forward(conv1_->forward(x)));
    out = bn2_->forward(conv2_->forward(out));
    return torch::relu(out + identity);
  }

 private:
  nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr};
  nn::Sequential downsample_{nullptr};
};

class Bottleneck : public nn::Module {
 public:
  static constexpr std::int64_t kExpansion = 4;
  explicit Bottleneck(const BlockShape& s) {
    const std::int64_t width = (s.planes * s.base_width / 64) * s.groups;
    conv1_ = register_module("conv1", conv1x1(s.inplanes, width, 1));
    bn1_ = register_module("bn1", nn::BatchNorm2d(width));
    conv2_ = register_module("conv2", conv3x3(width, width, s.stride, s.groups));
    bn2_ = register_module("bn2", nn::BatchNorm2d(width));
    conv3_ = register_module("conv3", conv1x1(width, s.planes * kExpansion, 1));
    bn3_ = register_module("bn3", nn::BatchNorm2d(s.planes * kExpansion));
    if (s.downsample) {
      downsample_ = register_module(
          "downsample", nn::Sequential(conv1x1(s.inplanes, s.planes * kExpansion, s.stride),
                                       nn::BatchNorm2d(s.planes * kExpansion)));
    }
  }
  torch::Tensor forward(torch::Tensor x) {
    torch::Tensor identity = downsample_ ? downsample_->forward(x) : x;
    torch::Tensor out = torch::relu(bn1_->forward(conv1_->forward(x)));
    out = torch::relu(bn2_->forward(conv2_->forward(out)));
    out = bn3_->forward(conv3_->forward(out));
    return torch::relu(out + identity);
  }

 private:
  nn::Conv2d conv1_{nullptr}, conv2_{nullptr}, conv3_{nullptr};
  nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr}, bn3_{nullptr};
  nn::Sequential downsample_{nullptr};
};

struct ResNetShape {
  bool bottleneck;
  std::vector<int> layers;
  std::int64_t groups;
  std::int64_t width_per_group;
};

class ResNet : public BenchModel {
 public:
  ResNet(const ResNetShape& shape, std::int64_t image_size, std::int64_t classes)
      : image_size_(image_size), classes_(classes) {
    const std::int64_t expansion = shape.bottleneck ? Bottleneck::kExpansion : BasicBlock::kExpansion;
    conv1_ = register_module(
        "conv1", nn::Conv2d(nn::Conv2dOptions(3, 64, 7).stride(2).padding(3).bias(false)));
    bn1_ = register_module("bn1", nn::BatchNorm2d(64));
    maxpool_ = register_module("maxpool", nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2).padding(1)));
    std::int64_t inplanes = 64;
    const std::int64_t planes[4] = {64, 128, 256, 512};
    for (int stage = 0; stage < 4; ++stage) {
      nn::Sequential seq;
      for (int i = 0; i < shape.layers[static_cast<std::size_t>(stage)]; ++i) {
        const std::int64_t stride = (i == 0 && stage > 0) ? 2 : 1;
        BlockShape bs{inplanes, planes[stage], stride, shape.groups, shape.width_per_group,
                      i == 0 && (stride != 1 || inplanes != planes[stage] * expansion)};
        if (shape.bottleneck) {
          seq->push_back(std::make_shared<Bottleneck>(bs));
        } else {
          seq->push_back(std::make_shared<BasicBlock>(bs));
        }
        inplanes = planes[stage] * expansion;
      }
      stages_.push_back(register_module("layer" + std::to_string(stage + 1), seq));
    }
    avgpool_ = register_module("avgpool", nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({1, 1})));
    fc_ = register_module("fc", nn::Linear(512 * expansion, classes));

    // torchvision: kaiming_normal_(fan_out, relu) for convs; BatchNorm weight 1, bias 0;
    // Linear keeps its default initialisation.
    torch::NoGradGuard no_grad;
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* conv = m->as<nn::Conv2d>()) {
        nn::init::kaiming_normal_(conv->weight, 0.0, torch::kFanOut, torch::kReLU);
      } else if (auto* bn = m->as<nn::BatchNorm2d>()) {
        nn::init::ones_(bn->weight);
        nn::init::zeros_(bn->bias);
      }
    }
  }

  torch::Tensor forward(torch::Tensor x) override {
    x = maxpool_->forward(torch::relu(bn1_->forward(conv1_->forward(x))));
    for (auto& stage : stages_) x = stage->forward(x);
    x = torch::flatten(avgpool_->forward(x), 1);
    return fc_->forward(x);
  }
  std::vector<ModelBlock> blocks() override {
    std::vector<ModelBlock> out;
    auto conv1 = conv1_.ptr();
    auto bn1 = bn1_.ptr();
    auto maxpool = maxpool_.ptr();
    out.push_back({"stem", {conv1, bn1, maxpool}, [conv1, bn1, maxpool](torch::Tensor x) {
                     return maxpool->forward(torch::relu(bn1->forward(conv1->forward(x))));
                   }});
    for (std::size_t s = 0; s < stages_.size(); ++s) {
      for (std::size_t i = 0; i < stages_[s]->size(); ++i) {
        std::shared_ptr<nn::Module> block = stages_[s]->ptr(i);
        std::function<torch::Tensor(torch::Tensor)> fwd;
        if (auto basic = std::dynamic_pointer_cast<BasicBlock>(block)) {
          fwd = [basic](torch::Tensor x) { return basic->forward(x); };
        } else {
          auto bottleneck = std::dynamic_pointer_cast<Bottleneck>(block);
          fwd = [bottleneck](torch::Tensor x) { return bottleneck->forward(x); };
        }
        out.push_back({"layer" + std::to_string(s + 1) + "." + std::to_string(i), {block}, fwd});
      }
    }
    auto avgpool = avgpool_.ptr();
    auto fc = fc_.ptr();
    out.push_back({"head", {avgpool, fc}, [avgpool, fc](torch::Tensor x) {
                     return fc->forward(torch::flatten(avgpool->forward(x), 1));
                   }});
    return out;
  }
  std::vector<std::int64_t> example_shape() const override { return {3, image_size_, image_size_}; }
  std::int64_t num_classes() const override { return classes_; }

 private:
  std::int64_t image_size_;
  std::int64_t classes_;
  nn::Conv2d conv1_{nullptr};
  nn::BatchNorm2d bn1_{nullptr};
  nn::MaxPool2d maxpool_{nullptr};
  std::vector<nn::Sequential> stages_;
  nn::AdaptiveAvgPool2d avgpool_{nullptr};
  nn::Linear fc_{nullptr};
};

const std::map<std::string, ResNetShape>& resnet_shapes() {
  static const std::map<std::string, ResNetShape> shapes = {
      {"resnet18", {false, {2, 2, 2, 2}, 1, 64}},
      {"resnet50", {true, {3, 4, 6, 3}, 1, 64}},
      {"resnet101", {true, {3, 4, 23, 3}, 1, 64}},
      {"resnext50_32x4d", {true, {3, 4, 6, 3}, 32, 4}},
      {"resnext101_32x8d", {true, {3, 4, 23, 3}, 32, 8}},
  };
  return shapes;
}

constexpr std::int64_t kImageClasses = 1000;

}  // namespace

SyntheticBatch BenchModel::synthetic_batch(std::int64_t batch, at::Generator& gen) const {
  std::vector<std::int64_t> shape{batch};
  for (auto d : example_shape()) shape.push_back(d);
  SyntheticBatch b;
  b.inputs = at::randn(shape, gen, at::TensorOptions().dtype(at::kFloat));
  b.targets = at::randint(0, num_classes(), {batch}, gen, at::TensorOptions().dtype(at::kLong));
  return b;
}

torch::Tensor BenchModel::loss(const torch::Tensor& inputs, const torch::Tensor& targets) {
  return torch::nn::functional::cross_entropy(forward(inputs), targets);
}

torch::Tensor BenchModel::output_loss(const torch::Tensor& output, const torch::Tensor& targets) {
  return torch::nn::functional::cross_entropy(output, targets);
}

const std::vector<std::string>& model_names() {
  static const std::vector<std::string> names = {"mlp",       "resnet18",        "resnet50",
                                                 "resnet101", "resnext50_32x4d", "resnext101_32x8d",
                                                 "bert-base", "gpt2-small",      "mlstm",
                                                 "hybrid-embedding"};
  return names;
}

std::shared_ptr<BenchModel> build_model(const std::string& name, const RunConfig& config) {
  if (name == "mlp") return std::make_shared<Mlp>(config.mlp);
  if (auto lm = build_sequence_model(name, config)) return lm;
  const auto& shapes = resnet_shapes();
  const auto it = shapes.find(name);
  if (it == shapes.end()) {
    std::string known;
    for (const auto& n : model_names()) known += (known.empty() ? "" : ", ") + n;
    throw ConfigError("unknown model '" + name + "' (known: " + known + ")");
  }
  if (config.image_size < 32) {
    throw ConfigError("imageSize must be >= 32 for " + name + ", got " +
                      std::to_string(config.image_size));
  }
  return std::make_shared<ResNet>(it->second, config.image_size, kImageClasses);
}

ModelSummary summarize_model(const std::string& name, const RunConfig& config) {
  torch::NoGradGuard no_grad;
  auto model = build_model(name, config);
  ModelSummary s;
  s.model = name;
  for (const auto& p : model->parameters()) s.parameters += p.numel();
  for (const auto& b : model->buffers()) s.buffers += b.numel();
  for (const auto& kv : model->named_parameters()) {
    if (kv.key().rfind("head.", 0) == 0) s.head_parameters += kv.value().numel();
  }
  return s;
}

}  // namespace trainbench::worker
