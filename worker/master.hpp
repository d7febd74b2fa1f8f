#pragma once

#include <chrono>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/plan/run_config.hpp"

namespace trainbench::worker {

/// Where the master delivers a run's summarised result: {"attempt", "run" (RunReport JSON),
/// "environment"}. The operator's pods write it into the run's result ConfigMap.
using ResultSink = std::function<void(const nlohmann::json& payload)>;

struct MasterOptions {
  int port = 29500;                                   ///< MASTER_PORT
  int attempt = 0;                                    ///< TRAINBENCH_ATTEMPT
  int progress_port = 0;  ///< TRAINBENCH_PROGRESS_PORT: GET /progress (worker/progress_server.hpp); 0: none
  std::chrono::milliseconds wait_for_result{std::chrono::hours(24 * 7)};
  std::chrono::milliseconds wait_for_ranks{std::chrono::seconds(60)};  ///< after the result
};

/// The master of a run (trainbench-worker --master): serves the run's rendezvous store, waits
/// for rank 0's RunResult, checks it against the config, summarises it with core (per-rank
/// percentiles; raw step times stay behind, so 1024 ranks fit in a ConfigMap), hands it to
/// `sink`, then waits for every rank to be done with the store. Throws on a bad result.
/// While it waits it reads rank 0's progress record from the store about once a second and
/// serves the run's progress (worker/progress_server.hpp); with run.hang_timeout_seconds > 0 it
/// reads every rank's record and throws HangError when no rank advanced for that long.
void run_master(const RunConfig& run, const MasterOptions& options, const ResultSink& sink);

}  // namespace trainbench::worker
