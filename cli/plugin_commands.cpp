#include "cli/plugin_commands.hpp"

#include <algorithm>
#include <iostream>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/diff_output.hpp"
#include "cli/rank_pod.hpp"
#include "core/plan/run_config.hpp"
#include "core/plot/scaling_plot.hpp"
#include "core/report/report_format.hpp"
#include "core/spec/spec.hpp"
#include "core/util/atomic_file.hpp"
#include "kube/errors.hpp"

namespace trainbench::cli {
namespace {

bool ended(const BenchmarkJobStatus& s) {
  return s.phase &&
         (*s.phase == JobPhase::kSucceeded || *s.phase == JobPhase::kFailed || *s.phase == JobPhase::kInvalid);
}

/// "phase Running, 1 of 3 runs done" (+ the run that is not Pending or Succeeded, + a message).
std::string phase_words(const BenchmarkJobStatus& s) {
  std::ostringstream os;
  os << "phase " << to_string(*s.phase);
  if (s.runs_total) os << ", " << s.runs_done.value_or(0) << " of " << *s.runs_total << " runs done";
  for (const auto& r : s.runs) {
    if (r.phase == RunPhase::kPending || r.phase == RunPhase::kSucceeded) continue;
    os << "; run " << r.index << " (" << r.label << ") " << to_string(r.phase) << ", attempt " << r.attempt;
    if (r.message) os << ": " << *r.message;
  }
  return os.str();
}

/// The condition that explains an ended job without a report (Invalid / Failed), or "".
std::string ended_message(const BenchmarkJobStatus& s) {
  for (ConditionType t : {ConditionType::kInvalid, ConditionType::kFailed}) {
    const Condition* c = s.condition(t);
    if (c != nullptr && c->status == ConditionStatus::kTrue) return c->reason + ": " + c->message;
  }
  return "";
}

BenchmarkJob job_spec(const ClusterJob& job) {
  try {
    return parse_benchmark_job(job.object.dump());
  } catch (const SpecError& e) {
    throw PluginError("BenchmarkJob " + job.name + " has an invalid spec (" + e.errors().front().str() + ")",
                      kExitError);
  }
}

/// The job's planned run `index`, as the operator plans it (its pods' names and ranks).
RunConfig planned_run(const ClusterJob& job, int index) {
  const std::vector<RunConfig> runs = plan_runs(job_spec(job), 1, ServerPlacement::OwnPods);
  if (index >= static_cast<int>(runs.size())) {
    throw PluginError("BenchmarkJob " + job.name + " has runs 0.." + std::to_string(runs.size() - 1) + ", not " +
                          std::to_string(index),
                      kExitUsage);
  }
  return runs[static_cast<std::size_t>(index)];
}

/// The failed runs that status.report lacks, as `trainbench run` reports a failed run: the
/// operator puts them in the report, but a status written by an earlier build had only the runs
/// whose result it read there (the others' phase and message are in status.runs[]), and a job
/// whose every run failed before one ended has no report at all.
std::vector<RunReport> failed_runs(const ClusterJob& job) {
  std::vector<RunReport> out;
  const auto in_report = [&job](int index) {
    return job.status.report && std::any_of(job.status.report->runs.begin(), job.status.report->runs.end(),
                                            [index](const RunReport& r) { return r.index == index; });
  };
  for (const auto& r : job.status.runs) {
    if (r.phase == RunPhase::kFailed && !r.summary && !in_report(r.index)) {
      out.push_back(failed_run(planned_run(job, r.index), r.message.value_or("")));
    }
  }
  return out;
}

const RunStatus* run_status(const BenchmarkJobStatus& s, int index) {
  for (const auto& r : s.runs) {
    if (r.index == index) return &r;
  }
  return nullptr;
}

/// Why the pod of a run is not there, from the run's phase.
PluginError missing_pod(const std::string& pod, const RunStatus* rs) {
  if (rs == nullptr || rs->phase == RunPhase::kPending || !rs->pods_created.value_or(false)) {
    return PluginError("pod " + pod + " does not exist yet: the run has not started", kExitNotYet);
  }
  if (rs->phase == RunPhase::kSucceeded || rs->phase == RunPhase::kFailed) {
    return PluginError("pod " + pod + " not found: the operator deletes a run's pods when it ends, unless the job's " +
                           "spec.runPolicy.cleanPodPolicy is None",
                       kExitError);
  }
  return PluginError("pod " + pod + " not found (an earlier attempt's pods are deleted when it restarts)", kExitError);
}

RankPod checked_rank_pod(const RunConfig& run, int attempt, int rank) {
  try {
    return rank_pod(run, attempt, rank);
  } catch (const std::out_of_range& e) {
    throw PluginError(std::string("--rank: ") + e.what(), kExitUsage);
  }
}

std::string rank_words(const RankPod& p) {
  if (p.first_rank < 0) return "the master";
  if (p.first_rank == p.last_rank) return "rank " + std::to_string(p.first_rank);
  return "ranks " + std::to_string(p.first_rank) + ".." + std::to_string(p.last_rank);
}

}  // namespace

std::string no_report_reason(const ClusterJob& job) {
  const BenchmarkJobStatus& s = job.status;
  const std::string what =
      "BenchmarkJob " + job.name + " in namespace " + job.namespace_ + " has no report" + (ended(s) ? ": " : " yet: ");
  if (!s.phase) return what + "the operator has not acted on it (no status): is trainbench-operator running?";
  const std::string why = ended_message(s);
  return what + phase_words(s) + (why.empty() ? "" : "; " + why);
}

Report job_report(const ClusterJob& job) {
  std::vector<RunReport> failed = failed_runs(job);
  if (!job.status.report && failed.empty()) {
    throw PluginError(no_report_reason(job), ended(job.status) ? kExitError : kExitNotYet);
  }
  Report report = job.status.report ? *job.status.report : assemble_report(job_spec(job), {}, EnvironmentInfo{});
  for (auto& f : failed) {  // in index order; baselineRun is a position in runs[]
    const auto at =
        std::find_if(report.runs.begin(), report.runs.end(), [&f](const RunReport& r) { return r.index > f.index; });
    if (report.baseline_run && *report.baseline_run >= at - report.runs.begin()) ++*report.baseline_run;
    report.runs.insert(at, std::move(f));
  }
  return report;
}

int plugin_report(const PluginRequest& r) {
  const PluginCluster cluster(r.kube);
  const ClusterJob job = cluster.job(r.names[0]);
  const Report report = job_report(job);
  std::cout << format_report(report);
  std::cout.flush();
  if (!ended(job.status)) {
    std::cerr << "kubectl-trainbench: BenchmarkJob " << job.name << " is still running (" << phase_words(job.status)
              << "): the report has the runs that ended\n";
  }
  if (!r.json_out.empty()) write_file_atomically(r.json_out, to_json(report).dump(2) + "\n");
  return kExitOk;
}

int plugin_diff(const PluginRequest& r) {
  const PluginCluster cluster(r.kube);
  const ClusterJob base = cluster.job(r.names[0]);
  const ClusterJob test = cluster.job(r.names[1]);
  const DiffFormat format = r.output.empty() ? DiffFormat::kText : parse_diff_format("--output", r.output);
  return print_diff(job_report(base), job_report(test), r.fail_threshold, std::cout, format);
}

int plugin_plot(const PluginRequest& r) {
  const PluginCluster cluster(r.kube);
  const ClusterJob job = cluster.job(r.names[0]);
  const std::string svg = scaling_plot_svg(job_report(job));
  if (r.output == "-") {
    std::cout << svg;
    return kExitOk;
  }
  write_file_atomically(r.output, svg);
  std::cerr << "kubectl-trainbench: wrote the scaling plot of BenchmarkJob " << job.name << " to " << r.output << "\n";
  return kExitOk;
}

int plugin_logs(const PluginRequest& r) {
  const PluginCluster cluster(r.kube);
  const ClusterJob job = cluster.job(r.names[0]);
  const std::optional<int> run = r.logs.run ? r.logs.run : default_log_run(job.status);
  if (!run) throw PluginError("no run of BenchmarkJob " + job.name + " has started yet", kExitNotYet);
  const RunConfig planned = planned_run(job, *run);
  const RunStatus* rs = run_status(job.status, *run);
  const int attempt = r.logs.attempt.value_or(rs != nullptr ? rs->attempt : 0);
  const RankPod pod = r.logs.master ? master_pod(planned, attempt) : checked_rank_pod(planned, attempt, r.logs.rank);
  std::cerr << "kubectl-trainbench: pod " << pod.pod << ", container " << pod.container << " (" << rank_words(pod)
            << " of run " << *run << " \"" << planned.devices_label() << " -- " << planned.label() << "\", attempt "
            << attempt << ")\n";
  try {
    cluster.pod_log(pod.pod, pod.container, r.logs.follow, [](const std::string& text) {
      std::cout << text;
      std::cout.flush();
    });
  } catch (const kube::NotFoundError&) {
    throw missing_pod(pod.pod, rs);
  }
  return kExitOk;
}

}  // namespace trainbench::cli
