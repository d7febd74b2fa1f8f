#include "operator/controller/reconciler.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <set>

#include "core/api/crd.hpp"
#include "core/api/job_status.hpp"
#include "core/plan/run_config.hpp"
#include "core/report/rank_summary.hpp"
#include "core/report/report.hpp"
#include "core/report/report_notes.hpp"
#include "core/report/straggler.hpp"
#include "core/spec/spec.hpp"
#include "core/util/failure_text.hpp"
#include "operator/controller/json_access.hpp"
#include "operator/controller/kueue_workload.hpp"
#include "operator/controller/manifests.hpp"
#include "operator/controller/naming.hpp"

namespace trainbench::op {
namespace {

using nlohmann::json;

std::string str_or(const json& j, const char* key, const std::string& fallback = "") {
  const json v = get_or(j, key, fallback);
  return v.is_string() ? v.get<std::string>() : fallback;
}

int int_or(const json& j, const char* key, int fallback) {
  const json v = get_or(j, key, fallback);
  return v.is_number_integer() ? v.get<int>() : fallback;
}

/// How long a master pod's result may take to reach the operator's ConfigMap cache after the
/// pod is seen Succeeded (two watch streams, either of which can lag or be cut and resumed).
constexpr auto kResultArrivalGrace = std::chrono::seconds(30);

/// Stragglers a Stragglers Event names (lowest score first; its message stays well under the
/// 1 KiB Kubernetes' own recorders keep): status and the result ConfigMap name the rest.
constexpr std::size_t kStragglersNamedInEvent = 5;

/// When the master pod's container ended (state.terminated.finishedAt), if the pod says.
std::optional<Clock::time_point> master_finished_at(const json& pod) {
  const json st = get_or(pod, "status", json::object());
  for (const auto& c : get_or(st, "containerStatuses", json::array())) {
    const json term = get_or(get_or(c, "state", json::object()), "terminated", json::object());
    if (term.is_object() && term.contains("finishedAt")) return parse_time(str_or(term, "finishedAt"));
  }
  return std::nullopt;
}

/// CPU cores one trainer pod gets (template resources, limits before requests; at least 1).
int pod_cores(const json& spec) {
  const json res = get_or(get_or(spec, "template", json::object()), "resources", json::object());
  for (const char* kind : {"limits", "requests"}) {
    const json cpu = get_or(get_or(res, kind, json::object()), "cpu", nullptr);
    if (cpu.is_number()) return std::max(1, static_cast<int>(cpu.get<double>()));
    if (cpu.is_string()) {
      const std::string s = cpu.get<std::string>();
      try {
        if (!s.empty() && s.back() == 'm') return std::max(1, std::stoi(s.substr(0, s.size() - 1)) / 1000);
        return std::max(1, static_cast<int>(std::stod(s)));
      } catch (const std::exception&) {
        return 1;
      }
    }
  }
  return 1;
}

std::string pod_phase(const json& pod) { return str_or(get_or(pod, "status", json::object()), "phase", "Pending"); }
std::string pod_name(const json& pod) { return str_or(pod.at("metadata"), "name"); }
bool being_deleted(const json& obj) { return get_or(obj.at("metadata"), "deletionTimestamp", nullptr).is_string(); }

std::string label(const json& obj, const char* key) {
  return str_or(get_or(obj.at("metadata"), "labels", json::object()), key);
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

/// `target` as a JSON merge patch over `original`: every object member `original` has and
/// `target` has not is null, so that the patch removes it (a merge patch keeps absent members).
json with_removals(const json& original, json target) {
  if (!original.is_object() || !target.is_object()) return target;
  for (const auto& [key, was] : original.items()) {
    const auto it = target.find(key);
    if (it == target.end()) {
      target[key] = nullptr;
    } else {
      *it = with_removals(was, std::move(*it));
    }
  }
  return target;
}

/// `v` to four significant digits.
double four_digits(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return std::strtod(buf, nullptr);
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

/// The job as a spec document: apiVersion, kind, metadata and spec, without its status. Parsing
/// that is what a reconcile needs, and the status (the report, up to a rank summary per run) was
/// most of what every reconcile parsed before, on each pod event of a big job.
json spec_document(const json& job) {
  json doc = json::object();
  for (const char* key : {"apiVersion", "kind", "metadata", "spec"}) {
    if (job.contains(key)) doc[key] = job[key];
  }
  return doc;
}

Condition condition(ConditionType type, bool status, const std::string& reason, const std::string& message,
                    const std::string& now, std::int64_t generation) {
  return {type, status ? ConditionStatus::kTrue : ConditionStatus::kFalse, reason, message, now, generation};
}

/// The status the job holds: none yet reads as empty; one this operator cannot read throws,
/// naming the field (the reconcile fails and is retried, status untouched).
BenchmarkJobStatus observed_status(const json& job) {
  const json st = get_or(job, "status", json::object());
  return st.is_object() ? job_status_from_json(st) : BenchmarkJobStatus{};
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

json event(const JobContext& job, const std::string& type, const std::string& reason, const std::string& message,
           const std::string& now, const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Event"},
          {"metadata", {{"name", name}, {"namespace", job.namespace_}}},
          {"involvedObject",
           {{"apiVersion", "trainbench.dev/v1alpha1"}, {"kind", "BenchmarkJob"}, {"name", job.name},
            {"namespace", job.namespace_}, {"uid", job.uid}}},
          {"type", type},
          {"reason", reason},
          {"message", message},
          {"firstTimestamp", now},
          {"lastTimestamp", now},
          {"count", 1},
          {"source", {{"component", kManagedBy}}},
          {"reportingComponent", kManagedBy}};
}

class Reconcile {
 public:
  Reconcile(const Observed& o, const NodeHealth& nodes)
      : o_(o), nodes_(nodes), job_(job_context(o.job, o.worker_images)), now_(format_time(o.now)) {
    generation_ = o.job.at("metadata").value("generation", std::int64_t{1});
  }

  Decision run() {
    if (being_deleted(o_.job)) return std::move(d_);  // garbage collection removes what it owns
    status_ = observed_status(o_.job);
    original_status_ = to_json(status_);
    force_delete_lost_pods();
    BenchmarkJob spec;
    try {
      spec = parse_benchmark_job(spec_document(o_.job).dump());
      parsed_ = spec;
    } catch (const SpecError& e) {
      invalid(e.summary(kMaxConditionMessageLength));  // any spec, however large: a message the CRD takes
      return finish();
    }
    if (status_.phase == JobPhase::kSucceeded || status_.phase == JobPhase::kFailed) {
      clean_up_finished_job();
      compare_with_baseline(spec);
      return finish();
    }
    progress(spec);
    return finish();
  }

 private:
  // ---- whole-job transitions ----

  void invalid(const std::string& why) {
    if (status_.phase != JobPhase::kInvalid) emit("Warning", "InvalidSpec", why, "g" + std::to_string(generation_));
    status_.phase = JobPhase::kInvalid;
    status_.set_condition(condition(ConditionType::kInvalid, true, "InvalidSpec", why, now_, generation_));
    // An invalid job runs nothing: stop whatever an earlier, valid generation started.
    delete_pods(o_.pods, job_selector());
  }

  void fail_job(const std::string& reason, const std::string& message) {
    status_.phase = JobPhase::kFailed;
    status_.completion_time = now_;
    status_.set_condition(condition(ConditionType::kRunning, false, reason, message, now_, generation_));
    status_.set_condition(condition(ConditionType::kFailed, true, reason, message, now_, generation_));
    if (status_.progress_detail) set_progress({status_.progress_detail->percent, std::nullopt, std::nullopt, now_});
    emit("Warning", "JobFailed", message, "");
    emit_verdicts();
    clean_up_finished_job();
  }

  void succeed_job() {
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

  /// A finished job's runs below spec.benchmark.efficiencyTarget, and its noisy runs: one
  /// Warning Event each (BelowTarget, Noisy), as a job that ends is decided once.
  void emit_verdicts() {
    if (!status_.report) return;
    constexpr std::size_t kMaxEventMessage = 1024;  // events.k8s.io's note limit
    auto cut = [](std::string s) {
      return s.size() > kMaxEventMessage ? s.substr(0, kMaxEventMessage - 3) + "..." : s;
    };
    const std::string below = below_target_summary(*status_.report);
    if (!below.empty()) emit("Warning", "BelowTarget", cut(below), "");
    const std::string noisy = noisy_summary(*status_.report);
    if (!noisy.empty()) emit("Warning", "Noisy", cut(noisy), "");
  }

  /// No pod keeps running after the job ends; finished pods go too under cleanPodPolicy All.
  void clean_up_finished_job() {
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
  void compare_with_baseline(const BenchmarkJob& spec) {
    if (!spec.baseline || !o_.baseline.looked_up) return;
    const RegressionOutcome r = judge_regression(*spec.baseline, status_.report, o_.baseline);
    const Condition* had = status_.condition(ConditionType::kRegressed);
    if (had == nullptr || had->reason != r.reason) {
      emit(r.reason == "NoRegression" ? "Normal" : "Warning", r.reason, r.message, "g" + std::to_string(generation_));
    }
    status_.set_condition({ConditionType::kRegressed, r.status, r.reason, r.message, now_, generation_});
  }

  // ---- the current run ----

  /// cleanPodPolicy, also for a job whose spec no longer parses (then the default, All).
  CleanPodPolicy clean_pod_policy() const {
    return parsed_ ? parsed_->run_policy.clean_pod_policy : CleanPodPolicy::kAll;
  }

  void progress(const BenchmarkJob& spec) {
    const RunPolicy& pol = spec.run_policy;
    const std::vector<RunConfig> runs = plan_runs(spec, pod_cores(job_.spec), ServerPlacement::OwnPods);
    runs_total_ = static_cast<int>(runs.size());
    if (o_.kueue && !queue_name_of(o_.job).empty() && !follow_kueue(spec, runs)) return;
    if (spec.suspend) {
      suspend(spec, runs);
      return;
    }
    init_status(runs);

    const auto started = parse_time(status_.start_time.value_or(""));
    if (pol.active_deadline_seconds > 0 && started) {
      const auto deadline = *started + std::chrono::seconds(pol.active_deadline_seconds);
      if (o_.now >= deadline) {
        fail_job("DeadlineExceeded", "the job ran longer than activeDeadlineSeconds (" +
                                         std::to_string(pol.active_deadline_seconds) + " s)");
        return;
      }
      requeue(deadline - o_.now);
    }

    const int done = collect_results(spec, runs);
    if (done == runs_total_) {
      succeed_job();
      return;
    }
    drive_run(runs[static_cast<std::size_t>(done)], pol);
    if (status_.phase == JobPhase::kRunning) estimate_progress(runs[static_cast<std::size_t>(done)]);
    if (status_.phase == JobPhase::kFailed) rebuild_report(spec, runs);  // with the run that failed it
  }

  // ---- progress (docs/operator.md, "Progress") ----

  /// The estimate of now, from the master's sample of the current run (when it is of this
  /// attempt) and the ended runs' durations; settle_progress decides whether it is written.
  void estimate_progress(const RunConfig& run) {
    if (o_.progress_interval.count() <= 0) return;
    const RunStatus& rs = run_status(run.index);
    const RunSteps steps = run_steps(run);
    JobEstimateInput in{runs_total_, run.index, {}, 0, -1, steps.total(), std::nullopt};
    for (int i = 0; i < run.index; ++i) {
      const auto from = parse_time(run_status(i).start_time.value_or(""));
      const auto to = parse_time(run_status(i).completion_time.value_or(""));
      if (from && to) in.ended_seconds.push_back(std::chrono::duration<double>(*to - *from).count());
    }
    if (const auto since = parse_time(rs.attempt_start_time.value_or(""))) {
      in.current_elapsed = std::chrono::duration<double>(o_.now - *since).count();
    }
    CurrentRunProgress current{run.index, rs.label, rs.attempt, {}, steps.repeats, std::nullopt, std::nullopt};
    const auto& s = o_.progress;
    if (s && s->run == run.index && s->attempt == rs.attempt && s->steps_total == steps.total()) {
      in.current_done = s->steps_done;
      in.seconds_per_step = s->seconds_per_step;
      current.position = loop_position(steps, s->steps_done);
      // Four significant digits: the rate's jitter alone is no reason to write status.
      if (s->seconds_per_step) current.seconds_per_step = four_digits(*s->seconds_per_step);
    }
    const JobEstimate e = estimate_job(in);
    auto whole = [](std::optional<double> v) {
      return v ? std::optional<std::int64_t>(std::llround(*v)) : std::nullopt;
    };
    current.remaining_seconds = whole(e.run_remaining_seconds);
    next_progress_ = ProgressDetail{e.percent, whole(e.remaining_seconds), current, now_};
    requeue(o_.progress_interval);  // the next poll
  }

  /// Writes the new estimate when it says something new and either the last one is
  /// progress_interval old or status is written anyway: at most one write of its own per interval.
  void settle_progress() {
    const std::optional<ProgressDetail>& held = status_.progress_detail;
    if (!next_progress_ || (held && same_progress(*held, *next_progress_))) return;
    const auto last = held ? parse_time(held->last_update_time) : std::nullopt;
    if (last && o_.now - *last < o_.progress_interval && to_json(status_) == original_status_) {
      requeue(*last + o_.progress_interval - o_.now);
      return;
    }
    set_progress(*next_progress_);
  }

  void set_progress(ProgressDetail p) {
    status_.percent_complete = std::to_string(p.percent) + "%";
    status_.progress_detail = std::move(p);
  }

  /// The runs done, after the results that arrived for the current run (the loop also covers
  /// several runs finishing between two reconciles, which cannot happen today but costs nothing).
  int collect_results(const BenchmarkJob& spec, const std::vector<RunConfig>& runs) {
    int done = status_.runs_done.value_or(0);
    while (done < runs_total_ && collect_result(runs[static_cast<std::size_t>(done)])) ++done;
    status_.runs_done = done;
    status_.progress = std::to_string(done) + "/" + std::to_string(runs_total_);
    rebuild_report(spec, runs);
    return done;
  }

  // ---- Kueue (kueue_workload.hpp, docs/install.md "Queueing with Kueue") ----

  /// The job's Workload made, and spec.suspend kept to what Kueue decided: true unless the
  /// Workload is admitted. False when this reconcile wrote spec.suspend: the next one decides on
  /// the new spec (and writes no status now, which the spec write's new resourceVersion would
  /// refuse). After an eviction, once no pod of the job is active, the quota is given back.
  bool follow_kueue(const BenchmarkJob& spec, const std::vector<RunConfig>& runs) {
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
  bool write_suspend(bool suspend) {
    d_.actions.push_back({Action::Verb::Patch, "benchmarkjobs", job_.name, {{"spec", {{"suspend", suspend}}}}, "", {}});
    spec_written_ = true;
    return true;
  }

  /// The Workload's pod sets: the master, the most trainer pods of any run, each like the trainer
  /// pod of the run with the most devices a node (a cuda job's pods ask for their run's GPUs), and
  /// the most parameter-server pods: every run of the sweep fits the admission.
  std::vector<PodSetShape> kueue_pod_sets(const std::vector<RunConfig>& runs) const {
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
  bool any_pod_active() const {
    return std::any_of(o_.pods.begin(), o_.pods.end(), [](const json& p) {
      return pod_phase(p) != "Succeeded" && pod_phase(p) != "Failed";
    });
  }

  /// An ended job's Workload is marked Finished, which frees its quota: once no pod of the job is
  /// active (trainer pods serve their last metrics for a while after the run, and the ones the
  /// end deletes terminate first).
  void finish_workload() {
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

  // ---- spec.suspend (docs/operator.md, "Suspend and queueing") ----

  bool is_suspended() const {
    const Condition* c = status_.condition(ConditionType::kSuspended);
    return c != nullptr && c->status == ConditionStatus::kTrue;
  }

  /// No pod runs while spec.suspend is true. A run under way is interrupted, not failed: its pods
  /// go and it starts again from its beginning on resume (a new attempt, so a late result of this
  /// one is ignored); no restart is counted. Runs that finished keep their results. Nothing is
  /// timed meanwhile: the resume restarts activeDeadlineSeconds (as Job's and TrainJob's do) and
  /// the next attempt's schedulingTimeoutSeconds.
  void suspend(const BenchmarkJob& spec, const std::vector<RunConfig>& runs) {
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

  /// status.runs, one per sweep entry.
  void init_runs(const std::vector<RunConfig>& runs) {
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

  void spec_valid() {
    status_.set_condition(
        condition(ConditionType::kInvalid, false, "SpecValid", "the spec is valid", now_, generation_));
  }

  void init_status(const std::vector<RunConfig>& runs) {
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

  RunStatus& run_status(int index) { return status_.runs.at(static_cast<std::size_t>(index)); }

  /// True when the run's result ConfigMap holds this attempt's result (the run then succeeded).
  bool collect_result(const RunConfig& run) {
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

  void drive_run(const RunConfig& run, const RunPolicy& pol) {
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

  /// The pods of this attempt, by name: the master, one trainer a node, the parameter servers.
  std::map<std::string, json> expected_pods(const RunConfig& run, int attempt) const {
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

  /// Creates the attempt's missing pods; the gang then has schedulingTimeoutSeconds to start.
  void start_attempt(const RunConfig& run, const RunPolicy& pol, const std::map<std::string, json>& expected,
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
  void record_start(const RunConfig& run, std::size_t pods) {
    RunStatus& rs = run_status(run.index);
    if (!rs.start_time) rs.start_time = now_;
    emit("Normal", "RunStarted",
         "run " + std::to_string(run.index) + " (" + rs.label + ") attempt " + std::to_string(rs.attempt) +
             ": created " + std::to_string(pods) + " pods",
         run_key(run.index, rs.attempt));
  }

  /// Gang start: every pod must be running (or done) within schedulingTimeoutSeconds.
  void await_gang(const RunConfig& run, const RunPolicy& pol, const std::map<std::string, json>& present) {
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

  /// Why this attempt failed ("" while it has not), with the job's reason should the run fail
  /// for good: a failed pod, a pod gone after it was created, a master that ended without a
  /// result (BackoffLimitExceeded), or a pod on a lost node (NodeLost).
  std::pair<std::string, std::string> attempt_failure(const std::map<std::string, json>& expected,
                                                      const std::map<std::string, json>& present, bool created) {
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

  void restart_or_fail(const RunConfig& run, const RunPolicy& pol, const std::string& failure,
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

  // ---- lost nodes ----

  /// How the node `pod` runs on is lost ("" when it is not): its Ready condition has not been
  /// True for node_lost_after. A node not Ready for less requeues for the moment it would be.
  std::string lost_node(const json& pod) {
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
  void force_delete_lost_pods() {
    for (const auto& p : o_.pods) {
      if (lost_node(p).empty()) continue;
      deleted_.insert(pod_name(p));
      d_.actions.push_back({Action::Verb::ForceDelete, "pods", pod_name(p), json(), "", {}});
    }
  }

  /// "node N lost: ...; its pods: a, b" for the first of this attempt's pods on a lost node.
  std::string lost_node_failure(const std::map<std::string, json>& present) {
    std::string first, pods;
    for (const auto& [name, p] : present) {
      const std::string lost = lost_node(p);
      if (lost.empty() || (!first.empty() && lost != first)) continue;
      first = lost;
      pods += (pods.empty() ? "" : ", ") + name;
    }
    return first.empty() ? "" : first + "; pods on it: " + pods;
  }

  // ---- report ----

  void rebuild_report(const BenchmarkJob& spec, const std::vector<RunConfig>& runs) {
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

  // ---- helpers ----

  std::vector<json> pods_of(int run, int attempt) const {
    std::vector<json> out;
    for (const auto& p : o_.pods) {
      if (label(p, kRunLabel) != std::to_string(run)) continue;
      if (attempt >= 0 && label(p, kAttemptLabel) != std::to_string(attempt)) continue;
      out.push_back(p);
    }
    return out;
  }

  void delete_pod(const json& p) {
    if (being_deleted(p)) return;
    const std::string name = pod_name(p);
    if (!deleted_.insert(name).second) return;
    d_.actions.push_back({Action::Verb::Delete, "pods", name, json(), "", {}});
  }

  /// Deletes `pods`, all of which match `selector`: one request for several pods (a run's gang
  /// can be hundreds), one per pod otherwise.
  void delete_pods(const std::vector<json>& pods, const std::string& selector) {
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

  void ensure_reporter() {
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

  /// A Warning Event naming a succeeded run's stragglers (core/report/straggler.hpp), if it has any.
  void warn_of_stragglers(int index, const RunStatus& rs) {
    if (!rs.summary || !rs.summary->stragglers || rs.summary->stragglers->count == 0) return;
    emit("Warning", "Stragglers",
         "run " + std::to_string(index) + " (" + rs.label +
             "): " + straggler_line(*rs.summary->stragglers, kStragglersNamedInEvent),
         run_key(index, -1));
  }

  /// "r<run>" or "r<run>.a<attempt>": which run (and attempt) an Event's transition belongs to.
  static std::string run_key(int run, int attempt) {
    return "r" + std::to_string(run) + (attempt >= 0 ? ".a" + std::to_string(attempt) : "");
  }

  /// Records a transition's Event under a name derived from the transition itself (job uid,
  /// reason, run, attempt, generation: transition_event_name), never from the clock. The Event is created
  /// before the status write that records the transition; a leader killed between the two
  /// leaves it behind, the next one decides the same transition again and its create of the same
  /// name answers 409 AlreadyExists, a no-op: one Event per transition.
  void emit(const std::string& type, const std::string& reason, const std::string& message, const std::string& key) {
    d_.actions.push_back(
        {Action::Verb::Event,
         "events",
         "",
         event(job_, type, reason, message, now_, transition_event_name(job_.name, job_.uid, reason, key)),
         "",
         {}});
  }

  void requeue(Clock::duration after) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(after) + std::chrono::milliseconds(100);
    if (ms.count() < 100) ms = std::chrono::milliseconds(100);
    if (!d_.requeue_after || ms < *d_.requeue_after) d_.requeue_after = ms;
  }

  Decision finish() {
    if (spec_written_) return std::move(d_);  // decided again on the new spec (follow_kueue)
    status_.observed_generation = generation_;
    settle_progress();
    finish_workload();
    json status = to_json(status_);  // the one place status becomes JSON
    if (status != original_status_) {
      d_.actions.push_back({Action::Verb::PatchStatus,
                            "benchmarkjobs",
                            job_.name,
                            {{"status", with_removals(original_status_, std::move(status))}},
                            "",
                            {}});
    }
    return std::move(d_);
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

}  // namespace

Decision reconcile(const Observed& observed, const NodeHealth& nodes) { return Reconcile(observed, nodes).run(); }

std::string format_time(Clock::time_point t) {
  const std::time_t tt = Clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::optional<Clock::time_point> parse_time(const std::string& s) {
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                  &tm.tm_sec, &consumed) != 6) {
    return std::nullopt;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  std::size_t pos = static_cast<std::size_t>(consumed);
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') ++pos;
  }
  long offset = 0;
  if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int hh = 0, mm = 0;
    if (std::sscanf(s.c_str() + pos + 1, "%2d:%2d", &hh, &mm) != 2) return std::nullopt;
    offset = (s[pos] == '+' ? 1 : -1) * (hh * 3600L + mm * 60L);
  } else if (pos >= s.size() || (s[pos] != 'Z' && s[pos] != 'z')) {
    return std::nullopt;
  }
  const std::time_t t = timegm(&tm);
  if (t == static_cast<std::time_t>(-1)) return std::nullopt;
  return Clock::from_time_t(t - offset);
}

}  // namespace trainbench::op
