// Part of reconcile() (reconciler_internal.hpp): the pods: an attempt's planned pods, the gang
// awaited within the scheduling timeout, pods on lost nodes, the deletes, the reporter's objects.
#include <algorithm>

#include "operator/controller/json_access.hpp"
#include "operator/controller/reconciler_internal.hpp"

namespace trainbench::op::reconcile_detail {

namespace {

/// "name (Pending: Unschedulable: 0/1 nodes are available...)" for a pod that is not running,
/// or with a container that waits for a reason of its own, "name (Pending: container trainer
/// ImagePullBackOff: Back-off pulling image ...)".
std::string pending_reason(const json& pod) {
  std::string out = pod_phase(pod);
  const json st = get_or(pod, "status", json::object());
  for (const auto& c : get_or(st, "conditions", json::array())) {
    if (str_or(c, "type") == "PodScheduled" && str_or(c, "status") == "False") {
      out += ": " + str_or(c, "reason") + (c.contains("message") ? ": " + str_or(c, "message") : "");
    }
  }
  for (const auto& cs : get_or(st, "containerStatuses", json::array())) {
    const json waiting = get_or(get_or(cs, "state", json::object()), "waiting", nullptr);
    const std::string why = waiting.is_object() ? str_or(waiting, "reason") : "";
    if (why.empty() || why == "ContainerCreating" || why == "PodInitializing") continue;
    out += ": container " + str_or(cs, "name") + " " + why;
    if (waiting.contains("message")) out += ": " + str_or(waiting, "message").substr(0, 512);
  }
  return out;
}

/// A gang that did not start: "K of N pods not running after T s: " and each reason once, with
/// how many pods give it and a few of their names, most common first ("3 Pending: Unschedulable:
/// 0/120 nodes are available: ... (J-r0-a0-trainer-2, ... and 1 more)"). Its length does not grow
/// with the gang: at most 3 reasons of 5 names each.
std::string gang_timeout_message(const std::map<std::string, std::vector<std::string>>& by_reason, std::size_t pods,
                                 int timeout_seconds) {
  constexpr std::size_t kReasons = 3, kNames = 5;
  std::vector<std::pair<std::string, std::vector<std::string>>> groups(by_reason.begin(), by_reason.end());
  std::stable_sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  std::size_t waiting = 0;
  for (const auto& g : groups) waiting += g.second.size();
  std::string out = std::to_string(waiting) + " of " + std::to_string(pods) + " pods not running after " +
                    std::to_string(timeout_seconds) + " s";
  for (std::size_t i = 0; i < groups.size() && i < kReasons; ++i) {
    const auto& [reason, names] = groups[i];
    out += (i == 0 ? ": " : "; ") + std::to_string(names.size()) + " " + reason + " (";
    for (std::size_t n = 0; n < names.size() && n < kNames; ++n) out += (n == 0 ? "" : ", ") + names[n];
    if (names.size() > kNames) out += ", and " + std::to_string(names.size() - kNames) + " more";
    out += ")";
  }
  if (groups.size() > kReasons) out += "; " + std::to_string(groups.size() - kReasons) + " other reasons";
  return out;
}

}  // namespace

/// The pods of this attempt, by name: the master, one trainer a node, the parameter servers.
std::map<std::string, json> Reconcile::expected_pods(const RunConfig& run, int attempt) const {
  std::map<std::string, json> expected;
  expected.emplace(master_pod_name(job_.name, run.index, attempt), master_pod(job_, run, attempt));
  for (int n = 0; n < run.nodes; ++n) {
    expected.emplace(trainer_pod_name(job_.name, run.index, attempt, n), trainer_pod(job_, run, attempt, n));
  }
  for (int j = 0; j < run.parameter_servers; ++j) {
    expected.emplace(parameter_server_pod_name(job_.name, run.index, attempt, j),
                     parameter_server_pod(job_, run, attempt, j));
  }
  return expected;
}

/// Gang start: every pod must be running (or done) within schedulingTimeoutSeconds.
void Reconcile::await_gang(const RunConfig& run, const RunPolicy& pol, const std::map<std::string, json>& present) {
  RunStatus& rs = run_status(run.index);
  std::map<std::string, std::vector<std::string>> waiting;  // reason -> pods
  for (const auto& [name, p] : present) {
    const std::string ph = pod_phase(p);
    if (ph != "Running" && ph != "Succeeded") waiting[pending_reason(p)].push_back(name);
  }
  if (waiting.empty()) {
    rs.phase = RunPhase::kRunning;
    return;
  }
  // attemptStartTime has whole seconds: the timeout counts from the second after it, never early.
  const auto since = parse_time(rs.attempt_start_time.value_or("")).value_or(o_.now) + std::chrono::seconds(1);
  const auto limit = since + std::chrono::seconds(pol.scheduling_timeout_seconds);
  if (o_.now >= limit) {
    const std::string why = gang_timeout_message(waiting, present.size(), pol.scheduling_timeout_seconds);
    rs.phase = RunPhase::kFailed;
    rs.completion_time = now_;
    rs.message = why;
    emit("Warning", "RunFailed", "run " + std::to_string(run.index) + ": " + why, run_key(run.index, rs.attempt));
    fail_job("SchedulingTimeout", "run " + std::to_string(run.index) + ": " + why);
    return;
  }
  requeue(limit - o_.now);
}

/// How the node `pod` runs on is lost ("" when it is not): its Ready condition has not been
/// True for node_lost_after. A node not Ready for less requeues for the moment it would be.
std::string Reconcile::lost_node(const json& pod) {
  if (nodes_.lost_after.count() <= 0) return "";
  const std::string node = str_or(get_or(pod, "spec", json::object()), "nodeName");
  const auto it = nodes_.unready.find(node);
  if (node.empty() || it == nodes_.unready.end()) return "";
  const NodeTrouble& t = it->second;
  const auto lost_at = t.since + nodes_.lost_after;
  if (o_.now < lost_at) {
    requeue(lost_at - o_.now);
    return "";
  }
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(o_.now - t.since).count();
  return "node " + node + " lost: Ready=" + t.status + " for " + std::to_string(secs) + " s (" + t.reason +
         (t.message.empty() ? "" : ": " + t.message) + "; --node-lost-after " +
         std::to_string(nodes_.lost_after.count()) + " s)";
}

/// Pods on a lost node never finish terminating (no kubelet confirms it): they are
/// force-deleted (gracePeriodSeconds 0, as kubectl delete --force), whatever their phase.
void Reconcile::force_delete_lost_pods() {
  for (const auto& p : o_.pods) {
    if (lost_node(p).empty()) continue;
    deleted_.insert(pod_name(p));
    d_.actions.push_back({Action::Verb::ForceDelete, "pods", pod_name(p), json(), "", {}});
  }
}

/// "node N lost: ...; its pods: a, b" for the first of this attempt's pods on a lost node.
std::string Reconcile::lost_node_failure(const std::map<std::string, json>& present) {
  std::string first, pods;
  for (const auto& [name, p] : present) {
    const std::string lost = lost_node(p);
    if (lost.empty() || (!first.empty() && lost != first)) continue;
    first = lost;
    pods += (pods.empty() ? "" : ", ") + name;
  }
  return first.empty() ? "" : first + "; pods on it: " + pods;
}

std::vector<json> Reconcile::pods_of(int run, int attempt) const {
  std::vector<json> out;
  for (const auto& p : o_.pods) {
    if (label(p, kRunLabel) != std::to_string(run)) continue;
    if (attempt >= 0 && label(p, kAttemptLabel) != std::to_string(attempt)) continue;
    out.push_back(p);
  }
  return out;
}

void Reconcile::delete_pod(const json& p) {
  if (being_deleted(p)) return;
  const std::string name = pod_name(p);
  if (!deleted_.insert(name).second) return;
  d_.actions.push_back({Action::Verb::Delete, "pods", name, json(), "", {}});
}

/// Deletes `pods`, all of which match `selector`: one request for several pods (a run's gang
/// can be hundreds), one per pod otherwise.
void Reconcile::delete_pods(const std::vector<json>& pods, const std::string& selector) {
  std::vector<std::string> names;
  for (const auto& p : pods) {
    if (!being_deleted(p) && deleted_.count(pod_name(p)) == 0) names.push_back(pod_name(p));
  }
  if (names.size() < 2) {
    for (const auto& p : pods) delete_pod(p);
    return;
  }
  deleted_.insert(names.begin(), names.end());
  d_.actions.push_back({Action::Verb::DeleteCollection, "pods", "", json(), selector, names});
}

void Reconcile::ensure_reporter() {
  if (!o_.reporter_service_account) {
    d_.actions.push_back({Action::Verb::Create, "serviceaccounts", reporter_name(job_.name), reporter_service_account(job_), "", {}});
  }
  if (!o_.reporter_role) {
    d_.actions.push_back({Action::Verb::Create, "roles", reporter_name(job_.name), reporter_role(job_, runs_total_), "", {}});
  }
  if (!o_.reporter_role_binding) {
    d_.actions.push_back({Action::Verb::Create, "rolebindings", reporter_name(job_.name), reporter_role_binding(job_), "", {}});
  }
}

}  // namespace trainbench::op::reconcile_detail
