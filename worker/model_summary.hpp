#pragma once

#include <cstdint>
#include <string>

#include "core/run_config.hpp"

namespace trainbench::worker {

/// Sizes of a model as built by the worker (`trainbench-worker --describe-model NAME`).
struct ModelSummary {
  std::string model;
  std::int64_t parameters = 0;  ///< elements of all parameters
  std::int64_t buffers = 0;     ///< elements of all buffers (BatchNorm running stats, counters)
};

/// Builds `name` for `config` on the CPU and counts it. Throws ConfigError for unknown names.
/// (libtorch-free declaration: implemented in models.cpp.)
ModelSummary summarize_model(const std::string& name, const RunConfig& config);

}  // namespace trainbench::worker
