#include "runtime/pod_status.hpp"

namespace noderuntime {

namespace {

json container_status(const PodRun& run, const ContainerRun& c) {
  json cs = {{"name", c.name},
             {"state", c.state},
             {"lastState", c.last_state},
             {"ready", c.ready},
             {"restartCount", c.restarts},
             {"image", c.image_ref.empty() ? c.spec.value("image", "") : c.image_ref},
             {"imageID", c.image_id},
             {"started", c.running}};
  if (c.has_log) cs["containerID"] = container_id(run, c.name);
  return cs;
}

std::string phase_of(const PodRun& run) {
  bool all_done = true, all_zero = true, any_started = false, init_failed = false, any_main = false;
  for (const auto& c : run.containers) {
    if (c.init) {
      if (c.finished && c.exit_code != 0) init_failed = true;
      continue;
    }
    any_main = true;
    if (!c.finished) all_done = false;
    if (c.finished && c.exit_code != 0) all_zero = false;
    if (c.has_log) any_started = true;
  }
  if (init_failed && run.restart_policy == "Never") return "Failed";
  if (all_done && any_main && any_started) return all_zero ? "Succeeded" : "Failed";
  if (all_done && run.stopping) return all_zero && any_started ? "Succeeded" : "Failed";
  if (any_started) return "Running";
  return "Pending";
}

}  // namespace

PodStatusReport pod_status_report(PodRun& run) {
  PodStatusReport r;
  std::lock_guard<std::mutex> lock(run.mu);
  bool all_ready = true, any_main = false;
  for (const auto& c : run.containers) {
    (c.init ? r.init_container_statuses : r.container_statuses).push_back(container_status(run, c));
    if (c.init) continue;
    any_main = true;
    if (!c.ready) all_ready = false;
  }
  r.phase = phase_of(run);
  r.initialized = run.initialized;
  r.ready = !r.terminal() && any_main && all_ready;
  r.pod_ip = run.ip;
  r.host_ip = run.host_ip;
  r.start_time = run.start_time;
  return r;
}

bool apply_pod_status(json& st, const PodStatusReport& r) {
  if (!st.is_object()) st = json::object();
  const std::string old_phase = st.value("phase", "");
  if ((old_phase == "Succeeded" || old_phase == "Failed") && !r.terminal()) return false;
  st["phase"] = r.phase;
  st["hostIP"] = r.host_ip;
  st["hostIPs"] = json::array({{{"ip", r.host_ip}}});
  st["podIP"] = r.pod_ip;
  st["podIPs"] = json::array({{{"ip", r.pod_ip}}});
  st["startTime"] = r.start_time;
  st["containerStatuses"] = r.container_statuses;
  if (!r.init_container_statuses.empty()) st["initContainerStatuses"] = r.init_container_statuses;
  json& conds = st["conditions"];
  set_condition(conds, "PodReadyToStartContainers", "True");
  set_condition(conds, "Initialized", r.initialized ? "True" : "False", r.initialized ? "" : "ContainersNotInitialized",
                r.initialized ? "" : "containers with incomplete status: [init]");
  const std::string ready = r.ready ? "True" : "False";
  const std::string reason = r.terminal() ? "PodCompleted" : (r.ready ? "" : "ContainersNotReady");
  set_condition(conds, "Ready", ready, reason);
  set_condition(conds, "ContainersReady", ready, reason);
  set_condition(conds, "PodScheduled", "True");
  return true;
}

void set_condition(json& conds, const std::string& type, const std::string& status, const std::string& reason,
                   const std::string& message) {
  if (!conds.is_array()) conds = json::array();
  for (auto& c : conds) {
    if (c.value("type", "") == type) {
      if (c.value("status", "") != status) c["lastTransitionTime"] = now_rfc3339();
      c["status"] = status;
      if (reason.empty()) c.erase("reason"); else c["reason"] = reason;
      if (message.empty()) c.erase("message"); else c["message"] = message;
      return;
    }
  }
  json c = {{"type", type}, {"status", status}, {"lastProbeTime", nullptr}, {"lastTransitionTime", now_rfc3339()}};
  if (!reason.empty()) c["reason"] = reason;
  if (!message.empty()) c["message"] = message;
  conds.push_back(c);
}

}  // namespace noderuntime
