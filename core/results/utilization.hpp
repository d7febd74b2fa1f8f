#pragma once

// How much of its hardware each rank used over a run's measured steps (issue 15 item 2;
// docs/report.md, "Hardware utilization"): CPU, peak memory, the bytes it sent to other ranks and,
// on GPU, NVML's utilization and memory. The worker measures one rank's window (the readings at
// the first measured step's start and the last one's end, and an NVML sample after each measured
// step: the same sources as its /metrics); the report summarises the ranks of a run.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainbench {

/// One rank over its measured steps ("utilization" of a rank in the worker's result and the report).
struct RankUtilization {
  /// CPU seconds of the process (user + system, all its threads) / wall seconds of the measured
  /// steps: the cores it kept busy on average (1.0 = one core; the dashboard's CPU panel).
  double cpu_cores = 0;
  /// Peak resident set size of the process (getrusage), which includes the warm-up.
  std::int64_t peak_rss_bytes = 0;
  /// Bytes this rank sent to other ranks per measured step, as its communicator counts them:
  /// an all-reduce of N bytes over p ranks sends 2(p-1)/p N (ring), an all-gather (p-1) N, a
  /// send N; receives count at their sender, so the run's traffic is the ranks' sum.
  double network_bytes_per_step = 0;
  /// GPU runs only: the CUDA caching allocator's max allocated bytes, and NVML's busy fraction
  /// (mean of the samples, 0..1) and memory used on the device (max of the samples).
  std::optional<std::int64_t> gpu_peak_allocated_bytes;
  std::optional<double> gpu_utilization;
  std::optional<std::int64_t> gpu_memory_used_bytes;
};

/// A run's ranks summarised ("utilization" of a run in the report).
struct RunUtilization {
  int ranks = 0;                ///< ranks that reported utilization
  int threads_per_process = 1;  ///< spec.benchmark.threadsPerProcess
  double cpu_cores_mean = 0;    ///< mean over ranks of RankUtilization::cpu_cores
  /// cpu_cores_mean / threads_per_process: the share of its compute threads a rank kept busy
  /// (above 1 when communication threads add to them).
  double cpu_per_thread = 0;
  std::int64_t peak_rss_bytes_max = 0;
  double network_bytes_per_step_mean = 0;  ///< mean over ranks
  std::optional<std::int64_t> gpu_peak_allocated_bytes_max;
  std::optional<double> gpu_utilization_mean;
  std::optional<std::int64_t> gpu_memory_used_bytes_max;
};

/// Bytes a rank sends in an all-reduce of `bytes` over `ranks` ranks (ring: 2(p-1)/p x bytes).
double allreduce_sent_bytes(std::int64_t bytes, int ranks);
/// Bytes a rank sends in an all-gather of `bytes` from each of `ranks` ranks (ring: (p-1) x bytes).
double allgather_sent_bytes(std::int64_t bytes, int ranks);

/// One rank's measured window: begin() before the first measured step, a GPU sample after each
/// measured step, end() after the last.
class UtilizationWindow {
 public:
  struct Reading {
    double wall_seconds = 0;      ///< a monotonic clock
    double cpu_seconds = 0;       ///< the process's user + system CPU time
    std::int64_t sent_bytes = 0;  ///< the communicator's count so far
  };
  void begin(const Reading& start) { start_ = start; }
  void add_gpu_sample(double utilization_ratio, std::int64_t memory_used_bytes);
  /// The rank's utilization over `steps` measured steps; `gpu_peak_allocated_bytes` where it
  /// runs on a GPU. A window of no time or no steps gives 0 for its rates.
  RankUtilization end(const Reading& stop, std::int64_t steps, std::int64_t peak_rss_bytes,
                      std::optional<std::int64_t> gpu_peak_allocated_bytes) const;

 private:
  Reading start_;
  int gpu_samples_ = 0;
  double gpu_utilization_sum_ = 0;
  std::int64_t gpu_memory_max_ = 0;
};

/// The run's summary over its ranks (trainers and parameter servers alike); nullopt when no
/// rank reported utilization (results of older workers). GPU fields are set when any rank has them.
std::optional<RunUtilization> summarize_utilization(const std::vector<RankUtilization>& ranks, int threads_per_process);

/// The text report's line for a run: "CPU 0.98 cores/rank (98% of 1 thread), peak RSS 412.0 MiB,
/// sent 37.5 KiB/step/rank[, GPU 87% busy, 12.30 GiB used, 9.81 GiB allocated]".
std::string utilization_line(const RunUtilization& u);

nlohmann::json to_json(const RankUtilization& u);
nlohmann::json to_json(const RunUtilization& u);
/// Readers: throw std::runtime_error naming the bad field under `path`; numbers must be >= 0
/// and gpuUtilization at most 1.
RankUtilization rank_utilization_from_json(const nlohmann::json& j, const std::string& path);
RunUtilization run_utilization_from_json(const nlohmann::json& j, const std::string& path);

}  // namespace trainbench
