// Part of reconcile() (reconciler_internal.hpp): spec.suspend (docs/operator.md, "Suspend and
// queueing") and Kueue, which admits and evicts a job through it (kueue_workload.hpp, docs/install.md
// "Queueing with Kueue"): the Workload, the suspend written on admission and eviction, the run under
// way interrupted, the quota given back.
#include <algorithm>

#include "operator/controller/json_access.hpp"
#include "operator/controller/reconciler_internal.hpp"

namespace trainbench::op::reconcile_detail {

/// The job's Workload made, and spec.suspend kept to what Kueue decided: true unless the
/// Workload is admitted. False when this reconcile wrote spec.suspend: the next one decides on
/// the new spec (and writes no status now, which the spec write's new resourceVersion would
/// refuse). After an eviction, once no pod of the job is active, the quota is given back.
bool Reconcile::follow_kueue(const BenchmarkJob& spec, const std::vector<RunConfig>& runs) {
  const std::string queue = queue_name_of(o_.job);
  const std::string wl_name = workload_name(job_.name, job_.uid);
  if (!o_.workload) {
    const std::string cls = str_or(get_or(o_.job.at("metadata"), "labels", json::object()), kPriorityClassLabel);
    d_.actions.push_back({Action::Verb::Create, "workloads", wl_name,
                          workload(job_, queue, kueue_pod_sets(runs),
                                   cls.empty() ? std::nullopt : std::optional<std::string>(cls), o_.workload_priority),
                          "", {}});
    suspend_why_ = "queued: Workload " + wl_name + " waits for Kueue's admission in LocalQueue " + queue;
    return spec.suspend || !write_suspend(true);
  }
  const AdmissionState a = admission_of(*o_.workload);
  const bool hold = a.admission != Admission::kAdmitted;
  if (a.admission == Admission::kEvicted) {
    suspend_why_ = "evicted by Kueue (Workload " + wl_name + "): " + a.message;
  } else if (hold) {
    suspend_why_ = "queued: Workload " + wl_name + " waits for Kueue's admission in LocalQueue " + queue +
                   (a.message.empty() ? "" : ": " + a.message);
  }
  if (hold != spec.suspend) return !write_suspend(hold);
  if (a.admission == Admission::kEvicted && a.quota_reserved && !any_pod_active()) {
    d_.actions.push_back({Action::Verb::PatchStatus, "workloads", wl_name, give_back_quota_patch(*o_.workload, now_), "", {}});
  }
  return true;
}

/// Writes spec.suspend (a merge patch of the job); always true.
bool Reconcile::write_suspend(bool suspend) {
  d_.actions.push_back({Action::Verb::Patch, "benchmarkjobs", job_.name, {{"spec", {{"suspend", suspend}}}}, "", {}});
  spec_written_ = true;
  return true;
}

/// The Workload's pod sets: the master, the most trainer pods of any run, each like the trainer
/// pod of the run with the most devices a node (a cuda job's pods ask for their run's GPUs), and
/// the most parameter-server pods: every run of the sweep fits the admission.
std::vector<PodSetShape> Reconcile::kueue_pod_sets(const std::vector<RunConfig>& runs) const {
  const RunConfig* most_nodes = &runs.front();
  const RunConfig* most_devices = &runs.front();
  const RunConfig* most_servers = &runs.front();
  for (const auto& r : runs) {
    if (r.nodes > most_nodes->nodes) most_nodes = &r;
    if (r.devices_per_node > most_devices->devices_per_node) most_devices = &r;
    if (r.parameter_servers > most_servers->parameter_servers) most_servers = &r;
  }
  std::vector<PodSetShape> sets = {{"master", 1, master_pod(job_, *most_nodes, 0)},
                                   {"trainer", most_nodes->nodes, trainer_pod(job_, *most_devices, 0, 0)}};
  if (most_servers->parameter_servers > 0) {
    sets.push_back({"parameter-server", most_servers->parameter_servers, parameter_server_pod(job_, *most_servers, 0, 0)});
  }
  return sets;
}

/// Whether a pod of the job has not ended (also one being deleted: it may still hold its GPUs).
bool Reconcile::any_pod_active() const {
  return std::any_of(o_.pods.begin(), o_.pods.end(), [](const json& p) {
    return pod_phase(p) != "Succeeded" && pod_phase(p) != "Failed";
  });
}

/// An ended job's Workload is marked Finished, which frees its quota: once no pod of the job is
/// active (trainer pods serve their last metrics for a while after the run, and the ones the
/// end deletes terminate first).
void Reconcile::finish_workload() {
  if (!o_.kueue || !o_.workload) return;
  if (status_.phase != JobPhase::kSucceeded && status_.phase != JobPhase::kFailed) return;
  if (admission_of(*o_.workload).admission == Admission::kFinished || any_pod_active()) return;
  const Condition* c = status_.condition(status_.phase == JobPhase::kSucceeded ? ConditionType::kSucceeded
                                                                                : ConditionType::kFailed);
  d_.actions.push_back({Action::Verb::PatchStatus, "workloads", workload_name(job_.name, job_.uid),
                        finished_patch(*o_.workload, status_.phase == JobPhase::kSucceeded,
                                       c != nullptr ? c->message : "", now_),
                        "", {}});
}

/// No pod runs while spec.suspend is true. A run under way is interrupted, not failed: its pods
/// go and it starts again from its beginning on resume (a new attempt, so a late result of this
/// one is ignored); no restart is counted. Runs that finished keep their results. Nothing is
/// timed meanwhile: the resume restarts activeDeadlineSeconds (as Job's and TrainJob's do) and
/// the next attempt's schedulingTimeoutSeconds.
void Reconcile::suspend(const BenchmarkJob& spec, const std::vector<RunConfig>& runs) {
  init_runs(runs);
  const int done = collect_results(spec, runs);  // a result that arrived before the suspend counts
  if (done == runs_total_) {
    succeed_job();
    return;
  }
  RunStatus& rs = run_status(done);
  if (rs.pods_created.value_or(false) || !pods_of(done, rs.attempt).empty()) {
    emit("Normal", "RunInterrupted",
         "run " + std::to_string(done) + " (" + rs.label + ") attempt " + std::to_string(rs.attempt) +
             " interrupted by spec.suspend: its pods are deleted; it starts again from its beginning on resume",
         run_key(done, rs.attempt));
    rs.message = "attempt " + std::to_string(rs.attempt) + " interrupted by spec.suspend at " + now_;
    rs.interruptions = rs.interruptions.value_or(0) + 1;
    rs.attempt += 1;
    rs.pods_created = false;
    rs.attempt_start_time.reset();
    rs.phase = RunPhase::kPending;
  }
  delete_pods(pods_of(done, -1), run_selector(done));
  for (const auto& p : o_.pods) {  // pods of finished runs stay (cleanPodPolicy), none runs
    if (pod_phase(p) != "Succeeded" && pod_phase(p) != "Failed") delete_pod(p);
  }
  const std::string why = suspend_why_.empty() ? "spec.suspend is true: no pods run until it is false" : suspend_why_;
  if (!is_suspended()) emit("Normal", "Suspended", why, "g" + std::to_string(generation_));
  status_.phase = JobPhase::kSuspended;
  status_.set_condition(condition(ConditionType::kSuspended, true, "Suspended", why, now_, generation_));
  status_.set_condition(condition(ConditionType::kRunning, false, "Suspended", why, now_, generation_));
  spec_valid();
}

}  // namespace trainbench::op::reconcile_detail
