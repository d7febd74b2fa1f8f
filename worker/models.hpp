#pragma once

#include <torch/nn/module.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/run_config.hpp"

namespace trainbench::worker {

/// A benchmark model: one input tensor in, class logits out.
class BenchModel : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(torch::Tensor input) = 0;
  /// Shape of one example (without the batch dimension).
  virtual std::vector<std::int64_t> example_shape() const = 0;
  virtual std::int64_t num_classes() const = 0;
};

/// Names the registry knows: mlp, resnet18, resnet50, resnet101, resnext50_32x4d,
/// resnext101_32x8d.
const std::vector<std::string>& model_names();

/// Builds a model with torchvision's layout and initialisation (ResNets: 1000 classes,
/// config.image_size square RGB input; mlp: config.mlp). Parameters are initialised from the
/// global generator: call torch::manual_seed first. Throws ConfigError for unknown names.
std::shared_ptr<BenchModel> build_model(const std::string& name, const RunConfig& config);

}  // namespace trainbench::worker
