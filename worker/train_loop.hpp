#pragma once

#include <string>

#include "core/plan/run_config.hpp"
#include "worker/rank_env.hpp"

namespace trainbench::worker {

/// What the worker reads from its environment besides the rank placement and the config.
struct WorkerOptions {
  std::string result_file;         ///< TRAINBENCH_RESULT_FILE; empty: rank 0 prints to stdout
  std::string progress_file;       ///< TRAINBENCH_PROGRESS_FILE; empty: no progress
  /// TRAINBENCH_RANK_PROGRESS_FILE: this rank's heartbeat writes its progress record there
  /// (atomically) when the run watches for hangs and has no external store.
  std::string rank_progress_file;
  std::string dump_params_prefix;  ///< TRAINBENCH_DUMP_PARAMS; empty: no dump
  int reference_world_size = 0;    ///< TRAINBENCH_REFERENCE_WORLD_SIZE; 0: off
  bool external_store = false;     ///< TRAINBENCH_EXTERNAL_STORE=1: the master pod serves the store,
                                   ///< rank 0 hands the result to it (key trainbench/result)
  std::string bind_address;        ///< POD_IP: the address gloo listens on
  /// TRAINBENCH_METRICS_PORT: Prometheus metrics on port + LOCAL_RANK (one per worker process
  /// of a node); -1: no metrics.
  int metrics_port = -1;
  std::string metrics_host = "0.0.0.0";  ///< TRAINBENCH_METRICS_HOST
  /// TRAINBENCH_METRICS_LINGER_SECONDS: after the run, keep serving the last values this long
  /// (so that a few more scrapes see them).
  double metrics_linger_seconds = 0;
  /// TRAINBENCH_METRICS_AWAIT_SCRAPE_SECONDS: before the warm-up, wait up to this long for a
  /// first scrape of /metrics, so that a scraper holds the run's values from before its first step
  /// (0: do not wait).
  double metrics_await_scrape_seconds = 0;
};

/// Runs one rank of one benchmark run: rendezvous (paradigm ddp), model, synthetic data,
/// warmup + timed steps, gather to rank 0, result/progress/dump files.
/// Throws ConfigError for a bad config/environment, std::runtime_error otherwise.
void run_worker(const RankEnv& env, const RunConfig& config, const WorkerOptions& options);

}  // namespace trainbench::worker
