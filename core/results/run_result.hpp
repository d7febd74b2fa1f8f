#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/plan/peak_flops.hpp"
#include "core/results/topology.hpp"
#include "core/results/utilization.hpp"
#include "core/spec/allreduce.hpp"

namespace trainbench {

/// Facts about the software and machine a run measured, written by rank 0.
struct EnvironmentInfo {
  std::string trainbench_version;
  std::string libtorch_version;
  std::string cuda_version;   ///< empty on CPU-only builds
  std::string backend;        ///< gloo | nccl
  std::string device;         ///< cpu | cuda
  std::string device_name;    ///< CPU model or GPU name
  std::string blas;           ///< the BLAS library actually loaded (path)
  std::string hostname;
  int threads_per_process = 1;
  /// CPUs this process may run on: its affinity mask, capped by a cgroup CPU quota (a pod's
  /// CPU limit). "cpuCores"; absent in results of older workers.
  std::optional<int> cpu_cores;
  /// How bert-base / gpt2-small computed attention: "eager" or "fused" (spec's auto resolved
  /// against this libtorch); empty for the other models. "attention"; absent in older results.
  std::string attention;
  /// Whose DDP averaged the gradients ("pytorch" or "trainbench", spec.benchmark.ddp.implementation);
  /// empty for paradigms without DDP. "ddp"; absent in older results.
  std::string ddp;
  /// A program workload's own stack as its probe names it ("torch 2.15.0, Python 3.11.2");
  /// empty for the built-in worker. "framework"; absent in older results.
  std::string framework;
};

/// Folds a run's environment into the report's, runs in order: the first run's, with the DDP of
/// the first run that had one (a sweep's single-device baseline runs without DDP).
inline void fold_environment(std::optional<EnvironmentInfo>& report_env, const EnvironmentInfo& run_env) {
  if (!report_env) {
    report_env = run_env;
  } else {
    if (report_env->ddp.empty()) report_env->ddp = run_env.ddp;
    if (report_env->framework.empty()) report_env->framework = run_env.framework;
  }
}

/// One rank's measurements. step_seconds[r][s] = duration of measured step s in repeat r.
struct RankResult {
  int rank = 0;
  int node_rank = 0;
  int local_rank = 0;
  std::vector<std::vector<double>> step_seconds;
  std::int64_t peak_memory_bytes = 0;  ///< host peak RSS on CPU, allocator peak on CUDA
  double final_loss = 0.0;    ///< loss of the last measured step
  double initial_loss = 0.0;  ///< loss of the first measured step ("initialLoss"; 0 when absent)
  /// Bytes of optimizer state this rank holds after the run (momentum / Adam moments; for zero
  /// only its shard's). "optimizerStateBytes"; 0 when absent.
  std::int64_t optimizer_state_bytes = 0;
  /// Parameters this rank holds and trains (pipeline / model-parallel: its stage's; else the
  /// model's). "parameterCount"; 0 when absent.
  std::int64_t parameter_count = 0;
  /// pipeline / model-parallel: this rank's stage and the fraction of its measured step time
  /// spent waiting for activations / gradients from its neighbours (the measured bubble).
  int stage = -1;
  double bubble_fraction = 0.0;
  /// Each measured step split, [repeat][step] as step_seconds: compute (forward, backward,
  /// optimizer: the step's time not spent waiting on other ranks) and exposed communication
  /// (waiting for the gradients' all-reduce, a pipeline neighbour, a parameter server).
  /// "computeSeconds", "communicationSeconds"; empty when absent (paradigm allreduce, older
  /// results).
  std::vector<std::vector<double>> compute_seconds{};
  std::vector<std::vector<double>> communication_seconds{};
  /// CPU, memory, network and GPU use over the measured steps (core/results/utilization.hpp).
  /// "utilization"; absent in results of older workers.
  std::optional<RankUtilization> utilization{};
};

/// paradigm hybrid-ps: one parameter server's measurements ("servers" of the RunResult). The
/// per-request lists are [repeat][request], requests of the repeat's measured steps in the
/// order the server served them (each step: the trainers' lookups in arrival order).
struct ServerResult {
  int rank = 0;        ///< its c10d rank (worldSize + server)
  int server = 0;      ///< 0..P-1
  std::int64_t rows = 0;     ///< embedding rows it owns, all tables together
  std::int64_t lookups = 0;  ///< lookup requests it served in measured steps
  /// Per measured request: from the start of its service (ids in hand) to its partial sums sent.
  std::vector<std::vector<double>> lookup_service_seconds;
  /// Per measured request: from its arrival (count and ids received) to the start of its service.
  std::vector<std::vector<double>> lookup_queue_seconds;
  /// Per measured step: applying the trainers' gradients to its rows (after all had arrived).
  std::vector<std::vector<double>> update_seconds;
  std::int64_t peak_memory_bytes = 0;
  std::optional<RankUtilization> utilization{};  ///< as RankResult's
};

/// What the workers of one run produce (rank 0 gathers it from every rank and writes it as
/// JSON to TRAINBENCH_RESULT_FILE).
struct RunResult {
  int run_index = 0;
  int world_size = 1;
  std::int64_t parameter_count = 0;
  int ddp_bucket_count = 0;     ///< 0 for paradigm none
  std::string optimizer;        ///< sgd | adam ("" when absent)
  int micro_batches = 1;        ///< pipeline: micro-batches per step
  /// pipeline / model-parallel: block count of the model and the first block of each stage
  /// (stageStarts[0] = 0), resolved by the worker.
  int block_count = 0;
  std::vector<int> stage_starts;
  /// paradigm allreduce: sizes, dtype, the measured copy limit; the ranks' stepSeconds are then
  /// [repeat][size] = seconds per all-reduce ("allreduce"; absent for other paradigms).
  std::optional<AllreduceRunInfo> allreduce;
  EnvironmentInfo environment;
  std::vector<RankResult> ranks;  ///< ordered by rank (hybrid-ps: the trainers)
  std::vector<ServerResult> servers;  ///< hybrid-ps: its parameter servers by index ("servers", absent when empty)
  /// CPU runs: rank 0's GEMM of the model's dominant shape, timed at the run's start, the peak
  /// MFU is measured against (core/plan/peak_flops.hpp). "peakGemm"; absent on GPU and in older results.
  std::optional<MeasuredGemm> peak_gemm;
  /// Where the ranks ran: hosts' NUMA nodes and GPU matrix, each rank's CPUs (core/results/topology.hpp).
  /// "topology"; absent in older results and program workloads'.
  std::optional<Topology> topology;
};

nlohmann::json to_json(const EnvironmentInfo& e);
nlohmann::json to_json(const RunResult& r);
EnvironmentInfo environment_from_json(const nlohmann::json& j);
/// Throws std::runtime_error naming the first bad field (e.g. "ranks[1].stepSeconds[0][3]").
RunResult run_result_from_json(const nlohmann::json& j);

}  // namespace trainbench
