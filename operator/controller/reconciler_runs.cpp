// Part of reconcile() (reconciler_internal.hpp): the runs and their attempts: a run's result read
// from its ConfigMap, the current run driven (its objects, its pods started, its gang awaited), why
// an attempt failed, and the restart under spec.runPolicy.backoffLimit or the job's failure.
#include "core/api/job_status.hpp"
#include "core/report/rank_summary.hpp"
#include "core/report/report.hpp"
#include "core/results/run_result.hpp"
#include "core/util/failure_text.hpp"
#include "operator/controller/json_access.hpp"
#include "operator/controller/reconciler_internal.hpp"

namespace trainbench::op::reconcile_detail {

namespace {

int int_or(const json& j, const char* key, int fallback) {
  const json v = get_or(j, key, fallback);
  return v.is_number_integer() ? v.get<int>() : fallback;
}

/// How long a master pod's result may take to reach the operator's ConfigMap cache after the
/// pod is seen Succeeded (two watch streams, either of which can lag or be cut and resumed).
constexpr auto kResultArrivalGrace = std::chrono::seconds(30);

/// When the master pod's container ended (state.terminated.finishedAt), if the pod says.
std::optional<Clock::time_point> master_finished_at(const json& pod) {
  const json st = get_or(pod, "status", json::object());
  for (const auto& c : get_or(st, "containerStatuses", json::array())) {
    const json term = get_or(get_or(c, "state", json::object()), "terminated", json::object());
    if (term.is_object() && term.contains("finishedAt")) return parse_time(str_or(term, "finishedAt"));
  }
  return std::nullopt;
}

/// The last `n` characters of `s`, "..." marking a cut.
std::string last_chars(const std::string& s, std::size_t n) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

/// Why a pod failed, led by the worker's own error line when a container's termination message
/// (or, under FallbackToLogsOnError, its log tail) has one (core/util/failure_text.hpp): "trainbench-worker
/// rank 3: <what> (pod P failed: container trainer exited with code 1 (Error): rank 3 exited with
/// code 1)"; otherwise "pod P failed: ...: <the message>". libtorch's log noise is dropped.
std::string pod_failure(const json& pod) {
  const json st = get_or(pod, "status", json::object());
  std::string lead, out = "pod " + pod_name(pod) + " failed";
  if (st.contains("reason")) out += " (" + str_or(st, "reason") + ")";
  for (const auto& cs : get_or(st, "containerStatuses", json::array())) {
    const json term = get_or(get_or(cs, "state", json::object()), "terminated", nullptr);
    if (!term.is_object()) continue;
    out += ": container " + str_or(cs, "name") + " exited with code " + std::to_string(int_or(term, "exitCode", -1));
    if (term.contains("reason")) out += " (" + str_or(term, "reason") + ")";
    const FailureText text = read_failure_text(str_or(term, "message"));
    if (lead.empty()) lead = text.error_line.substr(0, 1024);
    if (!text.context.empty()) out += ": " + last_chars(text.context, 512);
  }
  if (st.contains("message")) out += ": " + str_or(st, "message");
  return lead.empty() ? out : lead + " (" + out + ")";
}

/// A failed pod whose message has the worker's own error line: the rank that says why.
bool has_worker_error(const json& pod) {
  for (const auto& cs : get_or(get_or(pod, "status", json::object()), "containerStatuses", json::array())) {
    const json term = get_or(get_or(cs, "state", json::object()), "terminated", nullptr);
    if (term.is_object() && !read_failure_text(str_or(term, "message")).error_line.empty()) return true;
  }
  return false;
}

/// The master's exit code when it saw the run hang (worker/main.cpp).
constexpr int kMasterHangExitCode = 3;

/// The hang message (core/analysis/hang.hpp's "hang: rank 3 (pod ...) ...") of a master pod that failed
/// by seeing its run hang: its termination message; "" for any other pod or failure.
std::string hang_failure(const json& pod) {
  if (label(pod, kRoleLabel) != "master" || pod_phase(pod) != "Failed") return "";
  for (const auto& cs : get_or(get_or(pod, "status", json::object()), "containerStatuses", json::array())) {
    const json term = get_or(get_or(cs, "state", json::object()), "terminated", nullptr);
    if (!term.is_object() || int_or(term, "exitCode", -1) != kMasterHangExitCode) continue;
    std::string msg = str_or(term, "message");
    const auto at = msg.find("hang: ");
    if (at == std::string::npos) continue;
    msg = msg.substr(at, 2048);
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    return msg;
  }
  return "";
}

/// A result's environment; one this operator cannot read is left out (the report then takes
/// the environment of another run), as its run's result is still good.
std::optional<EnvironmentInfo> readable_environment(const json& result) {
  try {
    return environment_from_json(get_or(result, "environment", nullptr));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

/// The runs done, after the results that arrived for the current run (the loop also covers
/// several runs finishing between two reconciles, which cannot happen today but costs nothing).
int Reconcile::collect_results(const BenchmarkJob& spec, const std::vector<RunConfig>& runs) {
  int done = status_.runs_done.value_or(0);
  while (done < runs_total_ && collect_result(runs[static_cast<std::size_t>(done)])) ++done;
  status_.runs_done = done;
  status_.progress = std::to_string(done) + "/" + std::to_string(runs_total_);
  rebuild_report(spec, runs);
  return done;
}

/// True when the run's result ConfigMap holds this attempt's result (the run then succeeded).
bool Reconcile::collect_result(const RunConfig& run) {
  RunStatus& rs = run_status(run.index);
  const int attempt = rs.attempt;
  const std::string cm_name = result_configmap_name(job_.name, run.index);
  for (const auto& cm : o_.configmaps) {
    if (str_or(cm.at("metadata"), "name") != cm_name) continue;
    const std::string raw = str_or(get_or(cm, "data", json::object()), "result");
    if (raw.empty()) return false;
    json res = json::parse(raw, nullptr, false);
    if (res.is_discarded() || int_or(res, "attempt", -1) != attempt) return false;
    try {
      RunReport rr = run_report_from_json(get_or(res, "run", nullptr), "result.run");
      if (rr.phase != "Succeeded") {
        rs.message = rr.error;
        return false;
      }
      // Large runs keep their per-rank detail in the ConfigMap only (core/report/rank_summary.hpp).
      rs.summary = compact_for_status(std::move(rr), cm_name);
      rs.environment = readable_environment(res);
    } catch (const std::exception& e) {
      rs.message = std::string("unreadable result: ") + e.what();
      return false;
    }
    // A result of an attempt no reconcile recorded as started: its leader died between creating
    // the pods and its status write (and maybe before the RunStarted Event), and the run ended
    // before the next leader looked. Its start is recorded now (same Event name: AlreadyExists if
    // it was), before the Event of its end.
    if (!rs.pods_created.value_or(false)) record_start(run, pods_of(run.index, attempt).size());
    rs.phase = RunPhase::kSucceeded;
    rs.completion_time = now_;
    emit("Normal", "RunSucceeded", "run " + std::to_string(run.index) + " (" + rs.label + ") succeeded",
         run_key(run.index, -1));
    warn_of_stragglers(run.index, rs);
    if (clean_pod_policy() == CleanPodPolicy::kAll) {
      delete_pods(pods_of(run.index, -1), run_selector(run.index));
    } else {
      for (const auto& p : pods_of(run.index, -1)) {
        const std::string ph = pod_phase(p);
        if (ph != "Succeeded" && ph != "Failed") delete_pod(p);
      }
    }
    return true;
  }
  return false;
}

void Reconcile::drive_run(const RunConfig& run, const RunPolicy& pol) {
  const int attempt = run_status(run.index).attempt;

  ensure_reporter();
  ensure("services", run_service_name(job_.name, run.index), o_.services, [&] { return run_service(job_, run.index); });
  ensure("configmaps", result_configmap_name(job_.name, run.index), o_.configmaps,
         [&] { return result_configmap(job_, run.index); });

  // Pods of earlier attempts go; this attempt's pods are compared with the plan.
  std::vector<json> stale;
  for (const auto& p : pods_of(run.index, -1)) {
    if (label(p, kAttemptLabel) != std::to_string(attempt)) stale.push_back(p);
  }
  delete_pods(stale, run_selector(run.index) + "," + kAttemptLabel + "!=" + std::to_string(attempt));
  const std::map<std::string, json> expected = expected_pods(run, attempt);
  std::map<std::string, json> present;
  for (const auto& p : pods_of(run.index, attempt)) present.emplace(pod_name(p), p);

  const bool created = run_status(run.index).pods_created.value_or(false);
  const auto [failure, reason] = attempt_failure(expected, present, created);
  if (!failure.empty()) {
    // Pods present but not recorded as created: the leader that created them died (or its
    // RunStarted Event create failed) before its status write, and they failed before any
    // reconcile recorded them. The attempt did start: its RunStarted Event is recorded now
    // (same name: AlreadyExists if it was), before the Event of its end.
    if (!created && !present.empty()) record_start(run, present.size());
    restart_or_fail(run, pol, failure, reason);
  } else if (!created) {
    start_attempt(run, pol, expected, present);
  } else {
    await_gang(run, pol, present);
  }
}

/// Creates the attempt's missing pods; the gang then has schedulingTimeoutSeconds to start.
void Reconcile::start_attempt(const RunConfig& run, const RunPolicy& pol, const std::map<std::string, json>& expected,
                              const std::map<std::string, json>& present) {
  RunStatus& rs = run_status(run.index);
  for (const auto& [name, want] : expected) {
    if (present.count(name) == 0) d_.actions.push_back({Action::Verb::Create, "pods", name, want, "", {}});
  }
  rs.pods_created = true;
  rs.phase = RunPhase::kStarting;
  rs.attempt_start_time = now_;
  record_start(run, expected.size() - present.size());
  requeue(std::chrono::seconds(pol.scheduling_timeout_seconds));
}

/// The current attempt's start: the run's startTime (its first attempt's) and the RunStarted
/// Event, named by run and attempt.
void Reconcile::record_start(const RunConfig& run, std::size_t pods) {
  RunStatus& rs = run_status(run.index);
  if (!rs.start_time) rs.start_time = now_;
  emit("Normal", "RunStarted",
       "run " + std::to_string(run.index) + " (" + rs.label + ") attempt " + std::to_string(rs.attempt) +
           ": created " + std::to_string(pods) + " pods",
       run_key(run.index, rs.attempt));
}

/// Why this attempt failed ("" while it has not), with the job's reason should the run fail
/// for good: a failed pod, a pod gone after it was created, a master that ended without a
/// result (BackoffLimitExceeded), or a pod on a lost node (NodeLost).
std::pair<std::string, std::string> Reconcile::attempt_failure(const std::map<std::string, json>& expected,
                                                               const std::map<std::string, json>& present,
                                                               bool created) {
  // Several pods failed: a hang, else the pod whose worker said why (others often fail because it did).
  for (const auto& [name, p] : present) {
    if (const std::string hang = hang_failure(p); !hang.empty()) return {hang, "Hang"};
  }
  for (const auto& [name, p] : present) {
    if (pod_phase(p) == "Failed" && has_worker_error(p)) return {pod_failure(p), "BackoffLimitExceeded"};
  }
  for (const auto& [name, want] : expected) {
    auto it = present.find(name);
    if (it == present.end()) {
      if (created) return {"pod " + name + " disappeared", "BackoffLimitExceeded"};
      continue;
    }
    const std::string ph = pod_phase(it->second);
    if (const std::string hang = hang_failure(it->second); !hang.empty()) return {hang, "Hang"};
    if (ph == "Failed") return {pod_failure(it->second), "BackoffLimitExceeded"};
    if (ph == "Succeeded" && label(it->second, kRoleLabel) == "master") {
      // The master writes the result before it exits, but the pods' watch can bring its end
      // before the ConfigMaps' watch brings the result (a cut or lagging stream): give the
      // result kResultArrivalGrace from the master's finish to arrive.
      const auto finished = master_finished_at(it->second);
      if (finished && o_.now - *finished < kResultArrivalGrace) {
        requeue(kResultArrivalGrace - (o_.now - *finished));
        continue;
      }
      return {"master pod " + name + " ended without delivering a result", "BackoffLimitExceeded"};
    }
  }
  return {lost_node_failure(present), "NodeLost"};
}

void Reconcile::restart_or_fail(const RunConfig& run, const RunPolicy& pol, const std::string& failure,
                                const std::string& reason) {
  RunStatus& rs = run_status(run.index);
  const int restarts = rs.restarts;
  delete_pods(pods_of(run.index, -1), run_selector(run.index));
  if (reason == "Hang") {
    const std::string what =
        "run " + std::to_string(run.index) + " attempt " + std::to_string(rs.attempt) + ": " + failure;
    emit("Warning", "Hang", what, run_key(run.index, rs.attempt));
    if (restarts < pol.backoff_limit) {
      status_.set_condition(
          condition(ConditionType::kRunning, true, "Hang", what + "; restarted", now_, generation_));
    }
  }
  if (restarts < pol.backoff_limit) {
    rs.restarts = restarts + 1;
    rs.attempt += 1;
    rs.pods_created = false;
    rs.phase = RunPhase::kRestarting;
    rs.message = failure;
    emit("Warning", "RunRestarted",
         "run " + std::to_string(run.index) + " restarted (" + std::to_string(restarts + 1) + "/" +
             std::to_string(pol.backoff_limit) + "): " + failure,
         run_key(run.index, rs.attempt - 1));
    requeue(std::chrono::seconds(1));
    return;
  }
  rs.phase = RunPhase::kFailed;
  rs.completion_time = now_;
  rs.message = failure;
  emit("Warning", "RunFailed", "run " + std::to_string(run.index) + " failed: " + failure,
       run_key(run.index, rs.attempt));
  fail_job(reason, "run " + std::to_string(run.index) + " failed after " + std::to_string(restarts) +
                       " restarts: " + failure);
}

}  // namespace trainbench::op::reconcile_detail
