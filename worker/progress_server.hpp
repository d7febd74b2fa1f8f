#pragma once
// The run's progress as its master pod serves it to the operator: rank 0's progress record
// (core/results/rank_progress.hpp, read from the run's store about once a second) turned into a
// RunProgressSample with the rate measured so far (core/results/run_progress.hpp), answered at
// GET /progress on TRAINBENCH_PROGRESS_PORT. The operator polls it (docs/operator.md,
// "Progress"): the pod needs no API access for it, and the operator alone sets the rate.

#include <memory>
#include <mutex>

#include "core/plan/run_config.hpp"
#include "core/results/rank_progress.hpp"
#include "core/results/run_progress.hpp"

namespace trainbench::telemetry {
class HttpEndpoint;
}

namespace trainbench::worker {

class ProgressServer {
 public:
  /// Serves on `port` (all interfaces); 0: no endpoint (observe() and sample() still work). A
  /// port it cannot listen on is reported on stderr: the run goes on without progress.
  ProgressServer(const RunConfig& run, int attempt, int port);
  ~ProgressServer();
  ProgressServer(const ProgressServer&) = delete;
  ProgressServer& operator=(const ProgressServer&) = delete;

  /// Rank 0's latest record.
  void observe(const RankProgressRecord& rank0);
  RunProgressSample sample() const;

 private:
  mutable std::mutex mutex_;
  RunProgressSample sample_;
  StepRate rate_;
  std::unique_ptr<telemetry::HttpEndpoint> endpoint_;
};

/// Completed loop steps a record says (-1 before rank 0 began its first; all once it gathers).
std::int64_t steps_done(const RankProgressRecord& r, std::int64_t total);

}  // namespace trainbench::worker
