// reconcile(): one pure decision for one BenchmarkJob (reconciler.hpp). This file holds its
// entry and its flow: what to do with a deleted, invalid, ended or running job, the running job's
// sequence (the plan, Kueue and spec.suspend, the deadline, the results so far, the current run),
// the requeue, and the one status write at the end. The other parts of the decision are members of
// the same class (reconciler_internal.hpp), each defined in the file of its part.
#include "operator/controller/reconciler.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "core/api/crd.hpp"
#include "core/api/job_status.hpp"
#include "core/plan/run_config.hpp"
#include "core/spec/spec.hpp"
#include "operator/controller/json_access.hpp"
#include "operator/controller/reconciler_internal.hpp"

namespace trainbench::op::reconcile_detail {

namespace {

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

/// The status the job holds: none yet reads as empty; one this operator cannot read throws,
/// naming the field (the reconcile fails and is retried, status untouched).
BenchmarkJobStatus observed_status(const json& job) {
  const json st = get_or(job, "status", json::object());
  return st.is_object() ? job_status_from_json(st) : BenchmarkJobStatus{};
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

}  // namespace

Reconcile::Reconcile(const Observed& o, const NodeHealth& nodes)
    : o_(o), nodes_(nodes), job_(job_context(o.job, o.worker_images)), now_(format_time(o.now)) {
  generation_ = o.job.at("metadata").value("generation", std::int64_t{1});
}

Decision Reconcile::run() {
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

void Reconcile::progress(const BenchmarkJob& spec) {
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

void Reconcile::requeue(Clock::duration after) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(after) + std::chrono::milliseconds(100);
  if (ms.count() < 100) ms = std::chrono::milliseconds(100);
  if (!d_.requeue_after || ms < *d_.requeue_after) d_.requeue_after = ms;
}

Decision Reconcile::finish() {
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

}  // namespace trainbench::op::reconcile_detail

namespace trainbench::op {

Decision reconcile(const Observed& observed, const NodeHealth& nodes) {
  return reconcile_detail::Reconcile(observed, nodes).run();
}

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
