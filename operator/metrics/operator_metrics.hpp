#pragma once

// The operator's Prometheus metrics (docs/observability.md lists them): reconciles, errors and
// their duration, the work queue, every Kubernetes API request by verb, resource and code with
// its latency, watch restarts, jobs by phase, runs started/succeeded/failed/restarted, and
// whether this replica leads. prometheus-cpp's registry, served by telemetry::HttpEndpoint.

#include <functional>
#include <memory>
#include <string>

#include "operator/controller/controller_metrics.hpp"
#include "kube/request_info.hpp"

namespace prometheus {
class Registry;
}

namespace trainbench::op {

class OperatorMetrics : public ControllerMetrics {
 public:
  explicit OperatorMetrics(const std::string& version);
  ~OperatorMetrics() override;
  OperatorMetrics(const OperatorMetrics&) = delete;
  OperatorMetrics& operator=(const OperatorMetrics&) = delete;

  void reconciled(Outcome outcome, double seconds) override;
  void transition(const std::string& reason) override;

  /// For kube::ClientConfig::observe: counts and times every API request.
  kube::RequestObserver request_observer();
  void set_leader(bool leading);
  /// Where scrape-time values come from (the controller, once it exists); empty: none yet.
  void set_snapshot_source(std::function<ControllerSnapshot()> source);
  /// Reads the snapshot source into the gauges and counters; called before each scrape.
  void refresh();

  std::shared_ptr<prometheus::Registry> registry() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trainbench::op
