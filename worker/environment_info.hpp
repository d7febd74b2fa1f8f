#pragma once

// The environment header of a run's result (versions, device, BLAS, host), filled the same way
// by every kind of run (training paradigms and the all-reduce benchmark).

#include <ATen/Version.h>
#include <torch/torch.h>

#include "core/plan/run_config.hpp"
#include "core/results/run_result.hpp"
#include "core/spec/model_sizes.hpp"
#include "core/util/version.hpp"
#include "worker/models_lm.hpp"
#include "worker/system_probe.hpp"
#include "worker/torch_compat.hpp"

namespace trainbench::worker {

inline EnvironmentInfo environment_info(const RunConfig& c, const torch::Device& device) {
  EnvironmentInfo e;
  e.trainbench_version = kVersion;
  e.libtorch_version = TORCH_VERSION;
  e.cuda_version = compat::cuda_version();
  e.backend = to_string(c.backend);
  e.device = to_string(c.device);
  e.device_name = device.is_cuda() ? compat::cuda_device_name(device.index()) : cpu_model_name();
  e.blas = blas_description(loaded_blas_library(), at::show_config());
  e.hostname = host_name();
  e.threads_per_process = c.threads_per_process;
  e.cpu_cores = usable_cpu_count();
  if (is_transformer_model(c.model)) e.attention = to_string(resolve_attention(c.transformer.attention));
  if (uses_ddp_reducer(c.paradigm)) e.ddp = to_string(c.ddp.implementation);
  return e;
}

}  // namespace trainbench::worker
