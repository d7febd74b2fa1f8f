#pragma once

// What a PodRunner (pod_runner.hpp) needs of the kubelet it works for: the cluster's objects,
// the pod as last seen, a place to write the pod's status and Events, and ServiceAccount tokens.
// The node agent implements it on the real API server (kubesim's kubelet, now retired, did on
// its store).

#include <optional>
#include <string>

#include "runtime/cluster_view.hpp"
#include "runtime/pod_run.hpp"
#include "runtime/pod_status.hpp"

namespace noderuntime {

class PodHost {
 public:
  virtual ~PodHost() = default;

  virtual ClusterView& cluster() = 0;
  /// The pod as last seen; null when it is gone (or its name now holds another uid).
  virtual json current_pod(const PodRun& run) = 0;
  /// The run's state changed: write it as the pod's status (a host may coalesce writes; a lost
  /// node writes nothing).
  virtual void publish(const PodRun& run, const PodStatusReport& status) = 0;
  /// An Event of the kubelet about the pod (source component "kubelet", host the run's node).
  virtual void event(const PodRun& run, const json& pod, const std::string& type, const std::string& reason,
                     const std::string& message) = 0;
  /// A token of the pod's ServiceAccount bound to the pod, or nullopt when none is to be mounted.
  /// Throws std::runtime_error when it cannot be had now.
  virtual std::optional<std::string> service_account_token(const PodRun& run, const json& pod) = 0;
};

}  // namespace noderuntime
