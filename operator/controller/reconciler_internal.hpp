#pragma once
// Internal to reconcile() (reconciler.hpp): the one decision for one BenchmarkJob is the class
// Reconcile, whose members are defined by part of the decision, one file each:
//   reconciler.cpp           the entry and the flow: deleted, invalid, ended or running; the
//                            running job's sequence; the requeue; the one status write
//   reconciler_status.cpp    the job's phase and conditions, status.runs, status.report
//   reconciler_runs.cpp      the runs and their attempts: results, start, failure, restart
//   reconciler_pods.cpp      the pods: an attempt's, the gang, lost nodes, deletes, the reporter
//   reconciler_events.cpp    the job's Events
//   reconciler_progress.cpp  percentComplete and progressDetail
//   reconciler_suspend.cpp   spec.suspend and Kueue
// Pure, as reconcile() is: the members read Observed and write Decision, nothing else. Included
// only by those files.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/api/job_status.hpp"
#include "core/plan/run_config.hpp"
#include "core/spec/spec.hpp"
#include "operator/controller/json_access.hpp"
#include "operator/controller/kueue_workload.hpp"
#include "operator/controller/manifests.hpp"
#include "operator/controller/naming.hpp"
#include "operator/controller/reconciler.hpp"

namespace trainbench::op::reconcile_detail {

using nlohmann::json;

// Small readers of the objects, used by several parts.

inline std::string str_or(const json& j, const char* key, const std::string& fallback = "") {
  const json v = get_or(j, key, fallback);
  return v.is_string() ? v.get<std::string>() : fallback;
}

inline std::string pod_phase(const json& pod) {
  return str_or(get_or(pod, "status", json::object()), "phase", "Pending");
}

inline std::string pod_name(const json& pod) { return str_or(pod.at("metadata"), "name"); }

inline bool being_deleted(const json& obj) {
  return get_or(obj.at("metadata"), "deletionTimestamp", nullptr).is_string();
}

inline std::string label(const json& obj, const char* key) {
  return str_or(get_or(obj.at("metadata"), "labels", json::object()), key);
}

inline Condition condition(ConditionType type, bool status, const std::string& reason, const std::string& message,
                           const std::string& now, std::int64_t generation) {
  return {type, status ? ConditionStatus::kTrue : ConditionStatus::kFalse, reason, message, now, generation};
}

class Reconcile {
 public:
  Reconcile(const Observed& o, const NodeHealth& nodes);
  Decision run();

 private:
  // reconciler.cpp
  void progress(const BenchmarkJob& spec);
  void requeue(Clock::duration after);
  Decision finish();

  // reconciler_status.cpp
  void invalid(const std::string& why);
  void fail_job(const std::string& reason, const std::string& message);
  void succeed_job();
  void clean_up_finished_job();
  void compare_with_baseline(const BenchmarkJob& spec);
  void init_runs(const std::vector<RunConfig>& runs);
  void spec_valid();
  void init_status(const std::vector<RunConfig>& runs);
  void rebuild_report(const BenchmarkJob& spec, const std::vector<RunConfig>& runs);

  // reconciler_runs.cpp
  int collect_results(const BenchmarkJob& spec, const std::vector<RunConfig>& runs);
  bool collect_result(const RunConfig& run);
  void drive_run(const RunConfig& run, const RunPolicy& pol);
  void start_attempt(const RunConfig& run, const RunPolicy& pol, const std::map<std::string, json>& expected,
                     const std::map<std::string, json>& present);
  void record_start(const RunConfig& run, std::size_t pods);
  std::pair<std::string, std::string> attempt_failure(const std::map<std::string, json>& expected,
                                                      const std::map<std::string, json>& present, bool created);
  void restart_or_fail(const RunConfig& run, const RunPolicy& pol, const std::string& failure,
                       const std::string& reason);

  // reconciler_pods.cpp
  std::map<std::string, json> expected_pods(const RunConfig& run, int attempt) const;
  void await_gang(const RunConfig& run, const RunPolicy& pol, const std::map<std::string, json>& present);
  std::string lost_node(const json& pod);
  void force_delete_lost_pods();
  std::string lost_node_failure(const std::map<std::string, json>& present);
  std::vector<json> pods_of(int run, int attempt) const;
  void delete_pod(const json& p);
  void delete_pods(const std::vector<json>& pods, const std::string& selector);
  void ensure_reporter();

  // reconciler_events.cpp
  void emit_verdicts();
  void warn_of_stragglers(int index, const RunStatus& rs);
  void emit(const std::string& type, const std::string& reason, const std::string& message, const std::string& key);

  // reconciler_progress.cpp
  void estimate_progress(const RunConfig& run);
  void settle_progress();
  void set_progress(ProgressDetail p);

  // reconciler_suspend.cpp
  bool follow_kueue(const BenchmarkJob& spec, const std::vector<RunConfig>& runs);
  bool write_suspend(bool suspend);
  std::vector<PodSetShape> kueue_pod_sets(const std::vector<RunConfig>& runs) const;
  bool any_pod_active() const;
  void finish_workload();
  void suspend(const BenchmarkJob& spec, const std::vector<RunConfig>& runs);

  // short ones, and the template, defined here
  /// cleanPodPolicy, also for a job whose spec no longer parses (then the default, All).
  CleanPodPolicy clean_pod_policy() const {
    return parsed_ ? parsed_->run_policy.clean_pod_policy : CleanPodPolicy::kAll;
  }

  bool is_suspended() const {
    const Condition* c = status_.condition(ConditionType::kSuspended);
    return c != nullptr && c->status == ConditionStatus::kTrue;
  }

  RunStatus& run_status(int index) { return status_.runs.at(static_cast<std::size_t>(index)); }

  std::string job_selector() const {
    return std::string(kJobLabel) + "=" + job_.name + ",app.kubernetes.io/managed-by=" + kManagedBy;
  }

  std::string run_selector(int run) const { return job_selector() + "," + kRunLabel + "=" + std::to_string(run); }

  template <typename Make>
  void ensure(const std::string& resource, const std::string& name, const std::vector<json>& have, Make make) {
    for (const auto& h : have) {
      if (str_or(h.at("metadata"), "name") == name) return;
    }
    d_.actions.push_back({Action::Verb::Create, resource, name, make(), "", {}});
  }

  /// "r<run>" or "r<run>.a<attempt>": which run (and attempt) an Event's transition belongs to.
  static std::string run_key(int run, int attempt) {
    return "r" + std::to_string(run) + (attempt >= 0 ? ".a" + std::to_string(attempt) : "");
  }

  const Observed& o_;
  const NodeHealth& nodes_;
  std::optional<BenchmarkJob> parsed_;
  JobContext job_;
  std::string now_;
  std::int64_t generation_ = 1;
  BenchmarkJobStatus status_;
  json original_status_;  ///< status_ as read, serialised: a status write only when it changed
  std::optional<ProgressDetail> next_progress_;  ///< estimate_progress's, for settle_progress
  int runs_total_ = 0;
  std::set<std::string> deleted_;
  std::string suspend_why_;    ///< the Suspended condition's message when Kueue suspends the job
  bool spec_written_ = false;  ///< spec.suspend written: no status this time (follow_kueue)
  Decision d_;
};

}  // namespace trainbench::op::reconcile_detail
