#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/spec.hpp"

namespace trainbench {

/// Everything one run (one sweep entry) needs, fully resolved: pure data, the same for the
/// local executor and the Kubernetes operator. Workers receive it as JSON in
/// TRAINBENCH_RUN_CONFIG.
struct RunConfig {
  std::string job_name;
  std::string job_namespace = "default";
  int index = 0;              ///< position in spec.sweep
  int nodes = 1;
  int devices_per_node = 1;
  std::string paradigm;       ///< none | ddp
  std::string model;
  int batch_size_per_device = 32;
  std::string precision = "fp32";
  int warmup_steps = 20;
  int measure_steps = 100;
  int repeats = 5;
  std::uint64_t seed = 0;
  double learning_rate = 0.01;
  int threads_per_process = 1;  ///< resolved (never 0)
  int image_size = 224;
  MlpSpec mlp;
  DdpSpec ddp;
  std::string optimizer = "sgd";  ///< sgd (momentum 0.9) | adam; resolved per paradigm
  PipelineSpec pipeline;          ///< micro_batches resolved: 1 unless paradigm pipeline
  int sequence_length = 128;
  TransformerSpec transformer;
  MlstmSpec mlstm;
  HybridEmbeddingSpec hybrid_embedding;
  AllreduceSpec allreduce;        ///< paradigm allreduce
  std::string device = "cpu";
  std::string backend = "gloo";
  int collective_timeout_seconds = 300;

  int world_size() const { return nodes * devices_per_node; }
  /// Seed-style configuration label: "no ddp" or "1M/2G" (machines / devices per machine).
  std::string label() const;
  /// "2 CPUs" / "8 GPUs".
  std::string devices_label() const;
};

nlohmann::json to_json(const RunConfig& c);
/// Throws std::runtime_error naming the missing or mistyped field.
RunConfig run_config_from_json(const nlohmann::json& j);

/// The plan: one RunConfig per sweep entry, in order. `cores` is the number of CPU cores
/// available on one node (used to resolve threadsPerProcess = 0).
std::vector<RunConfig> plan_runs(const BenchmarkJob& job, int cores);

/// Where a rank lives inside a run.
struct RankPlacement {
  int node_rank = 0;
  int local_rank = 0;
  int rank = 0;  ///< node_rank * devices_per_node + local_rank
};

std::vector<RankPlacement> placements(const RunConfig& run);

/// torchrun-compatible environment for one rank: MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK,
/// LOCAL_RANK, LOCAL_WORLD_SIZE, NODE_RANK, GROUP_RANK, OMP_NUM_THREADS, OPENBLAS_NUM_THREADS and
/// TRAINBENCH_RUN_CONFIG (the RunConfig as JSON).
std::map<std::string, std::string> rank_environment(const RunConfig& run, const RankPlacement& p,
                                                    const std::string& master_addr, int master_port);

}  // namespace trainbench
