// Part of reconcile() (reconciler_internal.hpp): the job's phase and conditions at each
// whole-job transition (Invalid, Running, Failed, Succeeded, Regressed), the pods cleaned up after
// it ends, status.runs and status.report.
#include <algorithm>
#include <cmath>

#include "core/api/job_status.hpp"
#include "core/report/report.hpp"
#include "core/results/run_result.hpp"
#include "operator/controller/reconciler_internal.hpp"

namespace trainbench::op::reconcile_detail {

void Reconcile::invalid(const std::string& why) {
  if (status_.phase != JobPhase::kInvalid) emit("Warning", "InvalidSpec", why, "g" + std::to_string(generation_));
  status_.phase = JobPhase::kInvalid;
  status_.set_condition(condition(ConditionType::kInvalid, true, "InvalidSpec", why, now_, generation_));
  // An invalid job runs nothing: stop whatever an earlier, valid generation started.
  delete_pods(o_.pods, job_selector());
}

void Reconcile::fail_job(const std::string& reason, const std::string& message) {
  status_.phase = JobPhase::kFailed;
  status_.completion_time = now_;
  status_.set_condition(condition(ConditionType::kRunning, false, reason, message, now_, generation_));
  status_.set_condition(condition(ConditionType::kFailed, true, reason, message, now_, generation_));
  if (status_.progress_detail) set_progress({status_.progress_detail->percent, std::nullopt, std::nullopt, now_});
  emit("Warning", "JobFailed", message, "");
  emit_verdicts();
  clean_up_finished_job();
}

void Reconcile::succeed_job() {
  status_.phase = JobPhase::kSucceeded;
  status_.completion_time = now_;
  const std::string msg = "all " + std::to_string(runs_total_) + " runs succeeded";
  status_.set_condition(condition(ConditionType::kRunning, false, "JobSucceeded", msg, now_, generation_));
  status_.set_condition(condition(ConditionType::kSucceeded, true, "JobSucceeded", msg, now_, generation_));
  if (o_.progress_interval.count() > 0 || status_.progress_detail) set_progress({100, 0, std::nullopt, now_});
  emit("Normal", "JobSucceeded", msg, "");
  emit_verdicts();
  clean_up_finished_job();
}

/// No pod keeps running after the job ends; finished pods go too under cleanPodPolicy All.
void Reconcile::clean_up_finished_job() {
  if (clean_pod_policy() == CleanPodPolicy::kAll) {
    delete_pods(o_.pods, job_selector());
    return;
  }
  for (const auto& p : o_.pods) {
    const std::string ph = pod_phase(p);
    if (ph != "Succeeded" && ph != "Failed") delete_pod(p);
  }
}

/// The Regressed condition of an ended job with spec.baseline, from what the controller read
/// (nothing when it did not look: the condition is decided, or there is no baseline). An Event
/// per new reason.
void Reconcile::compare_with_baseline(const BenchmarkJob& spec) {
  if (!spec.baseline || !o_.baseline.looked_up) return;
  const RegressionOutcome r = judge_regression(*spec.baseline, status_.report, o_.baseline);
  const Condition* had = status_.condition(ConditionType::kRegressed);
  if (had == nullptr || had->reason != r.reason) {
    emit(r.reason == "NoRegression" ? "Normal" : "Warning", r.reason, r.message, "g" + std::to_string(generation_));
  }
  status_.set_condition({ConditionType::kRegressed, r.status, r.reason, r.message, now_, generation_});
}

/// status.runs, one per sweep entry.
void Reconcile::init_runs(const std::vector<RunConfig>& runs) {
  status_.runs_total = runs_total_;
  if (status_.runs.size() != runs.size()) {
    status_.runs.clear();
    for (const auto& r : runs) {
      RunStatus rs;
      rs.index = r.index;
      rs.label = r.devices_label() + " -- " + r.label();
      status_.runs.push_back(std::move(rs));
    }
  }
}

void Reconcile::spec_valid() {
  status_.set_condition(
      condition(ConditionType::kInvalid, false, "SpecValid", "the spec is valid", now_, generation_));
}

void Reconcile::init_status(const std::vector<RunConfig>& runs) {
  init_runs(runs);
  if (is_suspended()) {  // resumed: the job starts again now (activeDeadlineSeconds too)
    const std::string why = "spec.suspend is false: the job runs";
    emit("Normal", "Resumed", why, "g" + std::to_string(generation_));
    status_.set_condition(condition(ConditionType::kSuspended, false, "Resumed", why, now_, generation_));
    status_.start_time = now_;
  }
  if (!status_.start_time) status_.start_time = now_;
  status_.phase = JobPhase::kRunning;
  // A run restarted after a hang keeps saying so (reason Hang) while the job runs on.
  const Condition* running = status_.condition(ConditionType::kRunning);
  if (running == nullptr || running->status != ConditionStatus::kTrue || running->reason != "Hang") {
    status_.set_condition(
        condition(ConditionType::kRunning, true, "RunsInProgress", "running the sweep", now_, generation_));
  }
  spec_valid();
}

void Reconcile::rebuild_report(const BenchmarkJob& spec, const std::vector<RunConfig>& runs) {
  std::vector<RunReport> reports;
  std::optional<EnvironmentInfo> env;
  for (const auto& r : runs) {
    const RunStatus& rs = run_status(r.index);
    // A failed run is a row as `trainbench run` reports it (its error, no timings).
    if (!rs.summary && rs.phase == RunPhase::kFailed) reports.push_back(failed_run(r, rs.message.value_or("")));
    if (!rs.summary) continue;
    reports.push_back(*rs.summary);
    if (rs.environment) fold_environment(env, *rs.environment);
  }
  if (reports.empty()) return;
  status_.report = assemble_report(spec, std::move(reports), env.value_or(EnvironmentInfo{}));
  const Report& rep = *status_.report;
  double best_ex = 0, best_speedup = 0;
  std::optional<double> lowest_efficiency;
  int noisy = 0;
  for (const auto& r : rep.runs) {
    if (r.phase != "Succeeded") continue;
    best_ex = std::max(best_ex, r.examples_per_sec.p50);
    if (r.speedup) best_speedup = std::max(best_speedup, *r.speedup);
    if (r.efficiency) lowest_efficiency = std::min(lowest_efficiency.value_or(*r.efficiency), *r.efficiency);
    if (r.noise && r.noise->verdict == NoiseVerdict::kNoisy) ++noisy;
  }
  // Printer columns (the report keeps every digit): ex/s whole (rounded here: the API server
  // truncates an integer column), two decimals; the lowest efficiency rounded down, so that a
  // run below the target never reads as meeting it.
  status_.best_examples_per_sec = std::round(best_ex);
  if (rep.baseline_run) status_.best_speedup = std::round(best_speedup * 100) / 100;
  status_.lowest_efficiency.reset();
  if (lowest_efficiency) status_.lowest_efficiency = std::floor(*lowest_efficiency * 100 + 1e-9) / 100;
  status_.noisy_runs = noisy;
}

}  // namespace trainbench::op::reconcile_detail
