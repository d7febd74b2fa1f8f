#pragma once

// A pod's status as its kubelet reports it, from the run's state: phase (Pending -> Running ->
// Succeeded/Failed), containerStatuses and initContainerStatuses, podIP(s), hostIP(s),
// startTime, and the conditions PodReadyToStartContainers, Initialized, ContainersReady, Ready,
// PodScheduled.

#include <string>

#include "runtime/pod_run.hpp"
#include "runtime/util.hpp"

namespace noderuntime {

struct PodStatusReport {
  std::string phase;
  json container_statuses = json::array();
  json init_container_statuses = json::array();
  bool initialized = false;
  bool ready = false;  ///< every regular container ready and the pod not finished
  std::string pod_ip, host_ip, start_time;

  bool terminal() const { return phase == "Succeeded" || phase == "Failed"; }
};

/// The run's status now (takes the run's lock).
PodStatusReport pod_status_report(PodRun& run);

/// Writes `report` into a pod's `status` object; conditions keep their lastTransitionTime while
/// their status stays. Returns false (and changes nothing) when the status is terminal already
/// and the report is not: a finished pod never runs again.
bool apply_pod_status(json& status, const PodStatusReport& report);

/// Sets condition `type` in a conditions array (made when null), its lastTransitionTime moved
/// when the status changes; empty reason or message are removed.
void set_condition(json& conditions, const std::string& type, const std::string& status,
                   const std::string& reason = "", const std::string& message = "");

}  // namespace noderuntime
