#pragma once

// The worker's Prometheus metrics: prometheus-cpp's registry, served on /metrics by
// telemetry::HttpEndpoint (no libtorch here). Names follow Prometheus conventions: prefix
// trainbench_, base units (seconds, bytes), _total on counters; every series carries the same
// bounded label set (benchmark_job, run, role, rank, node, model, paradigm; not "job", which is
// Prometheus's own target label). docs/observability.md lists them.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace trainbench::worker {

struct MetricLabels {
  std::string benchmark_job;  ///< the BenchmarkJob's name ("local" for `trainbench run`)
  std::string run;        ///< sweep index
  std::string role;       ///< trainer | master
  std::string rank;       ///< global rank
  std::string node;       ///< node rank
  std::string model;
  std::string paradigm;
  int world_size = 1;  ///< ranks in the run: the value of trainbench_world_size
};

struct BuildInfo {
  std::string version;           ///< trainbench
  std::string libtorch_version;
  std::string backend;           ///< gloo | nccl
  std::string device;            ///< cpu | cuda
};

/// One rank's metrics. Thread-safe (prometheus-cpp's metrics are).
class WorkerMetrics {
 public:
  /// Serves /metrics on `listen` ("HOST:PORT"; port 0 picks a free one). Throws
  /// std::runtime_error naming the address when it cannot listen.
  static std::unique_ptr<WorkerMetrics> serve(const std::string& listen, const MetricLabels& labels,
                                              const BuildInfo& build);
  ~WorkerMetrics();
  WorkerMetrics(const WorkerMetrics&) = delete;
  WorkerMetrics& operator=(const WorkerMetrics&) = delete;

  /// The port it listens on.
  int port() const;
  /// Waits until /metrics has been scraped at least once (since serve()) or `timeout` passed;
  /// true when it was scraped.
  bool await_scrape(std::chrono::milliseconds timeout) const;

  /// Warm-up plus measured steps this rank will run (progress = steps_total / this).
  void set_planned_steps(std::int64_t steps);
  /// One finished step: its wall time, the part of it spent waiting for communication after
  /// the backward pass (exposed communication), examples this rank processed, and bytes
  /// all-reduced. `measured`: false for warm-up steps (counted as progress only).
  void observe_step(double step_seconds, double communication_seconds, std::int64_t examples,
                    std::int64_t allreduce_bytes, bool measured);
  /// The model's training FLOPs per example on this rank and the device's peak FLOP/s (nullopt:
  /// unknown): from then on each measured step sets trainbench_achieved_flops and
  /// trainbench_model_flops_utilization_ratio (core/analysis/mfu.hpp). Nothing for flops <= 0.
  void set_model_flops(double flops_per_example, std::optional<double> peak_flops);
  /// Host memory (RSS now and peak), CPU time and network bytes of this process, read from
  /// /proc; call once per step (cheap) or from a timer.
  void refresh_process();
  /// Bytes this rank has sent to other ranks so far, as its communicator counts them
  /// (Communicator::sent_bytes(): the report's networkBytesPerStep); call after each step.
  void set_sent_bytes(std::int64_t total_bytes);
  /// GPU memory from the CUDA caching allocator, where a GPU is used.
  void set_gpu_memory(std::int64_t allocated_bytes, std::int64_t peak_allocated_bytes);
  /// GPU busy fraction and memory in use, from NVML (gpu_monitor.hpp), where a GPU is used.
  void set_gpu_utilization(double utilization_ratio, std::int64_t memory_used_bytes);

 private:
  struct Impl;
  explicit WorkerMetrics(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace trainbench::worker
