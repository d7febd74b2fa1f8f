#pragma once

// What the controller reports about its own work, for the operator's Prometheus metrics
// (operator/metrics/). An interface so that the controller does not depend on prometheus-cpp;
// the default does nothing.

#include <cstdint>
#include <map>
#include <string>

namespace trainbench::op {

class ControllerMetrics {
 public:
  enum class Outcome {
    kSuccess,  ///< every action carried out
    kRequeue,  ///< a write conflicted (409): decided again on the newer object
    kError,    ///< an API error or exception: retried with backoff
  };
  virtual ~ControllerMetrics() = default;
  /// One reconcile of one job and how long it took.
  virtual void reconciled(Outcome /*outcome*/, double /*seconds*/) {}
  /// A decision's Event was recorded and the decision's status written (counted once per
  /// transition): RunStarted, RunSucceeded, RunFailed, RunRestarted, JobSucceeded, JobFailed.
  virtual void transition(const std::string& /*reason*/) {}
};

/// Values read at scrape time (Controller::snapshot()).
struct ControllerSnapshot {
  std::size_t queue_depth = 0;
  std::map<std::string, std::int64_t> jobs_by_phase;  ///< "" counted as Pending
  struct Informer {
    std::uint64_t watches = 0;  ///< watches opened; each after the first is a restart
    std::uint64_t relists = 0;  ///< 410 Gone answers that forced a fresh list
    std::size_t objects = 0;    ///< in the cache
  };
  std::map<std::string, Informer> informers;  ///< by resource
  bool synced = false;                        ///< every informer has listed once
};

}  // namespace trainbench::op
