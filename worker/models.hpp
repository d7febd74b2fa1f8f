#pragma once

#include <ATen/core/Generator.h>
#include <torch/nn/module.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/plan/run_config.hpp"

namespace trainbench::worker {

/// One piece of a model seen as a sequence (pipeline / model parallelism, worker/pipeline.cpp):
/// `forward` applies it; `modules` own its parameters and buffers.
struct ModelBlock {
  std::string name;
  std::vector<std::shared_ptr<torch::nn::Module>> modules;
  std::function<torch::Tensor(torch::Tensor)> forward;
};

/// Synthetic inputs and targets of one batch (first dimension: examples).
struct SyntheticBatch {
  torch::Tensor inputs;
  torch::Tensor targets;
};

/// A benchmark model: one input tensor in, class logits out.
class BenchModel : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(torch::Tensor input) = 0;
  /// The model as blocks applied in order (equal to forward()); their modules' parameters, in
  /// block order, are parameters() in registration order. Empty: the model cannot be split.
  virtual std::vector<ModelBlock> blocks() { return {}; }
  /// Shape of one example (without the batch dimension).
  virtual std::vector<std::int64_t> example_shape() const = 0;
  virtual std::int64_t num_classes() const = 0;
  /// `batch` examples drawn from `gen`. Default: randn inputs of example_shape(), randint
  /// targets in [0, num_classes()). The language models draw token ids instead.
  virtual SyntheticBatch synthetic_batch(std::int64_t batch, at::Generator& gen) const;
  /// The training loss of a batch. Default: cross entropy of forward(inputs) against targets.
  virtual torch::Tensor loss(const torch::Tensor& inputs, const torch::Tensor& targets);
  /// The loss of forward()'s output against targets, for a pipeline's last stage. Default: cross
  /// entropy (class logits); the token models: their per-token loss.
  virtual torch::Tensor output_loss(const torch::Tensor& output, const torch::Tensor& targets);
  /// The dtype of forward()'s input: float, or int64 for models that take ids.
  virtual at::ScalarType input_dtype() const { return at::kFloat; }
};

/// Names the registry knows: mlp, resnet18, resnet50, resnet101, resnext50_32x4d,
/// resnext101_32x8d.
const std::vector<std::string>& model_names();

/// Builds a model with torchvision's layout and initialisation (ResNets: 1000 classes,
/// config.image_size square RGB input; mlp: config.mlp). Parameters are initialised from the
/// global generator: call torch::manual_seed first. Throws ConfigError for unknown names.
std::shared_ptr<BenchModel> build_model(const std::string& name, const RunConfig& config);

}  // namespace trainbench::worker
