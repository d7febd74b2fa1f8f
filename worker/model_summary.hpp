#pragma once

#include <cstdint>
#include <string>

#include "core/plan/run_config.hpp"

namespace trainbench::worker {

/// Sizes of a model as built by the worker (`trainbench-worker --describe-model NAME`).
struct ModelSummary {
  std::string model;
  std::int64_t parameters = 0;  ///< elements of all parameters
  std::int64_t buffers = 0;     ///< elements of all buffers (BatchNorm running stats, counters)
  /// Of `parameters`, those of the loss heads beyond the reference model (a submodule "head":
  /// bert-base's pre-training heads); parameters - head_parameters is the reference count.
  std::int64_t head_parameters = 0;
};

/// Builds `name` for `config` on the CPU and counts it. Throws ConfigError for unknown names.
/// (libtorch-free declaration: implemented in models.cpp.)
ModelSummary summarize_model(const std::string& name, const RunConfig& config);

}  // namespace trainbench::worker
