// kubectl-trainbench's pieces in process: its command line (cli/plugin_args), which pod holds a
// rank (cli/rank_pod, checked against the pods the operator's manifests make) and what it says
// of a job without a report. tests/operator/e2e/plugin_e2e.sh runs the real binary through kubectl.
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/args.hpp"
#include "cli/plugin_args.hpp"
#include "cli/plugin_cluster.hpp"
#include "cli/plugin_commands.hpp"
#include "cli/rank_pod.hpp"
#include "core/report/report_format.hpp"
#include "operator/controller/manifests.hpp"

namespace trainbench::cli {
namespace {

using Words = std::vector<std::string>;

std::string usage_error(PluginCommand c, const Words& words) {
  try {
    parse_plugin_args(c, words);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}

TEST(PluginArgs, KubectlConnectionFlagsAnywhereAfterTheCommand) {
  const PluginRequest r =
      parse_plugin_args(PluginCommand::kReport, {"-n", "team", "job1", "--context=lab", "--kubeconfig", "/k/config"});
  EXPECT_EQ(r.names, Words{"job1"});
  EXPECT_EQ(r.kube.namespace_, "team");
  EXPECT_EQ(r.kube.context, "lab");
  EXPECT_EQ(r.kube.kubeconfig, "/k/config");
  EXPECT_EQ(parse_plugin_args(PluginCommand::kReport, {"job1", "-nteam"}).kube.namespace_, "team");
  EXPECT_EQ(parse_plugin_args(PluginCommand::kReport, {"job1", "-n=team"}).kube.namespace_, "team");
  EXPECT_EQ(parse_plugin_args(PluginCommand::kReport, {"job1", "--namespace=team"}).kube.namespace_, "team");
  EXPECT_EQ(parse_plugin_args(PluginCommand::kReport, {"job1"}).kube.namespace_, "");  // the context's
  EXPECT_EQ(parse_plugin_args(PluginCommand::kReport, {"job1", "--json", "out.json"}).json_out, "out.json");
}

TEST(PluginArgs, EachCommandTakesItsNamesAndOptions) {
  const PluginRequest d = parse_plugin_args(PluginCommand::kDiff, {"base", "test", "--fail-on-regression", "5"});
  EXPECT_EQ(d.names, (Words{"base", "test"}));
  ASSERT_TRUE(d.fail_threshold);
  EXPECT_DOUBLE_EQ(*d.fail_threshold, 5);
  EXPECT_FALSE(parse_plugin_args(PluginCommand::kDiff, {"a", "b"}).fail_threshold);
  EXPECT_EQ(parse_plugin_args(PluginCommand::kDiff, {"a", "b", "-o", "json"}).output, "json");
  EXPECT_EQ(parse_plugin_args(PluginCommand::kPlot, {"j", "-o", "-"}).output, "-");
  EXPECT_EQ(parse_plugin_args(PluginCommand::kPlot, {"j", "--output=s.svg"}).output, "s.svg");
  EXPECT_TRUE(parse_plugin_args(PluginCommand::kLogs, {"--help"}).help);

  const PluginRequest l =
      parse_plugin_args(PluginCommand::kLogs, {"j", "--run", "2", "--rank=3", "--attempt", "1", "-f"});
  EXPECT_EQ(l.logs.run, 2);
  EXPECT_EQ(l.logs.rank, 3);
  EXPECT_EQ(l.logs.attempt, 1);
  EXPECT_TRUE(l.logs.follow);
  EXPECT_FALSE(l.logs.master);
  const PluginRequest def = parse_plugin_args(PluginCommand::kLogs, {"j"});
  EXPECT_FALSE(def.logs.run);
  EXPECT_FALSE(def.logs.attempt);
  EXPECT_EQ(def.logs.rank, 0);
  EXPECT_FALSE(def.logs.follow);
  EXPECT_TRUE(parse_plugin_args(PluginCommand::kLogs, {"j", "--master"}).logs.master);
}

TEST(PluginArgs, MistakesNameTheOptionOrArgument) {
  EXPECT_EQ(usage_error(PluginCommand::kReport, {}), "expected a BenchmarkJob name, got 0 argument(s)");
  EXPECT_EQ(usage_error(PluginCommand::kReport, {"a", "b"}), "expected a BenchmarkJob name, got 2 argument(s)");
  EXPECT_EQ(usage_error(PluginCommand::kDiff, {"a"}), "expected two BenchmarkJob names (BASE TEST), got 1 argument(s)");
  EXPECT_EQ(usage_error(PluginCommand::kReport, {"a", "--rank", "1"}), "unknown option --rank");
  EXPECT_EQ(usage_error(PluginCommand::kReport, {"a", "-n"}), "option --namespace needs a value");
  EXPECT_EQ(usage_error(PluginCommand::kPlot, {"a"}), "plot needs -o FILE.svg (\"-o -\": stdout)");
  EXPECT_EQ(usage_error(PluginCommand::kLogs, {"a", "--rank", "x"}), "--rank: expected a rank (0, 1, ...), got \"x\"");
  EXPECT_EQ(usage_error(PluginCommand::kLogs, {"a", "--run", "-1"}),
            "--run: expected a run index (0, 1, ...), got \"-1\"");
  EXPECT_EQ(usage_error(PluginCommand::kLogs, {"a", "--run=-1"}),
            "--run: expected a run index (0, 1, ...), got \"-1\"");
  EXPECT_EQ(usage_error(PluginCommand::kLogs, {"a", "--master", "--rank", "1"}),
            "--master and --rank name different pods: give one");
  EXPECT_EQ(usage_error(PluginCommand::kDiff, {"a", "b", "--fail-on-regression", "lots"}),
            "--fail-on-regression: expected a percentage between 0 and 100, got \"lots\"");
  EXPECT_EQ(usage_error(PluginCommand::kDiff, {"a", "b", "-o", "yaml"}),
            "--output: expected text or json, got \"yaml\"");
  EXPECT_EQ(usage_error(PluginCommand::kReport, {"a", "-o", "json"}), "unknown option --output");
  EXPECT_EQ(parse_plugin_command("logs"), PluginCommand::kLogs);
  EXPECT_FALSE(parse_plugin_command("log"));
}

/// The pods the operator creates for one attempt of `run`, by name (operator/controller/manifests).
std::map<std::string, nlohmann::json> operator_pods(const RunConfig& run, int attempt) {
  const op::JobContext job = op::job_context(
      {{"metadata", {{"name", run.job_name}, {"namespace", "ns"}, {"uid", "u1"}}}, {"spec", nlohmann::json::object()}});
  std::map<std::string, nlohmann::json> pods;
  for (int n = 0; n < run.nodes; ++n) {
    const nlohmann::json p = op::trainer_pod(job, run, attempt, n);
    pods[p["metadata"]["name"].get<std::string>()] = p;
  }
  for (int j = 0; j < run.parameter_servers; ++j) {
    const nlohmann::json p = op::parameter_server_pod(job, run, attempt, j);
    pods[p["metadata"]["name"].get<std::string>()] = p;
  }
  const nlohmann::json m = op::master_pod(job, run, attempt);
  pods[m["metadata"]["name"].get<std::string>()] = m;
  return pods;
}

int env_int(const nlohmann::json& container, const std::string& name) {
  for (const auto& e : container["env"]) {
    if (e["name"] == name) return std::stoi(e["value"].get<std::string>());
  }
  return -1;
}

/// Every rank's pod is a pod the operator makes, with that container, and that pod's environment
/// puts the rank there (trainers: NODE_RANK x NPROC_PER_NODE + local rank; servers: RANK).
void expect_every_rank_in_its_operator_pod(const RunConfig& run, int attempt) {
  const auto pods = operator_pods(run, attempt);
  for (int rank = 0; rank < run.process_count(); ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const RankPod rp = rank_pod(run, attempt, rank);
    ASSERT_EQ(pods.count(rp.pod), 1u) << rp.pod;
    const nlohmann::json& c = pods.at(rp.pod)["spec"]["containers"][0];
    EXPECT_EQ(c["name"], rp.container);
    EXPECT_LE(rp.first_rank, rank);
    EXPECT_GE(rp.last_rank, rank);
    if (rp.container == "parameter-server") {
      EXPECT_EQ(env_int(c, "RANK"), rank);
    } else {
      const int node = env_int(c, "NODE_RANK"), per_node = env_int(c, "NPROC_PER_NODE");
      EXPECT_EQ(node * per_node, rp.first_rank);
      EXPECT_EQ((node + 1) * per_node - 1, rp.last_rank);
    }
  }
  const RankPod m = master_pod(run, attempt);
  ASSERT_EQ(pods.count(m.pod), 1u);
  EXPECT_EQ(pods.at(m.pod)["spec"]["containers"][0]["name"], m.container);
}

TEST(RankPod, TrainersAreDevicesPerNodeToAPod) {
  RunConfig run;
  run.job_name = "bench";
  run.index = 2;
  run.nodes = 3;
  run.devices_per_node = 2;
  const RankPod p = rank_pod(run, 1, 3);
  EXPECT_EQ(p.pod, "bench-r2-a1-trainer-1");
  EXPECT_EQ(p.container, "trainer");
  EXPECT_EQ(p.first_rank, 2);
  EXPECT_EQ(p.last_rank, 3);
  EXPECT_EQ(rank_pod(run, 0, 0).pod, "bench-r2-a0-trainer-0");
  EXPECT_EQ(master_pod(run, 1).pod, "bench-r2-a1-master");
  expect_every_rank_in_its_operator_pod(run, 1);
  try {
    rank_pod(run, 0, 6);
    FAIL() << "rank 6 of 6 ranks";
  } catch (const std::out_of_range& e) {
    EXPECT_STREQ(e.what(), "run 2 (6 CPUs -- 3M/2G) has ranks 0..5, not 6");
  }
}

TEST(RankPod, ParameterServersFollowTheTrainersOneToAPod) {
  RunConfig run;
  run.job_name = "ps";
  run.nodes = 2;
  run.devices_per_node = 2;
  run.paradigm = Paradigm::kHybridPs;
  run.parameter_servers = 2;
  run.parameter_servers_own_pods = true;
  const RankPod s = rank_pod(run, 0, 5);
  EXPECT_EQ(s.pod, "ps-r0-a0-ps-1");
  EXPECT_EQ(s.container, "parameter-server");
  EXPECT_EQ(s.first_rank, 5);
  EXPECT_EQ(rank_pod(run, 0, 3).pod, "ps-r0-a0-trainer-1");
  expect_every_rank_in_its_operator_pod(run, 0);
}

RunStatus run_in(int index, RunPhase phase) {
  RunStatus r;
  r.index = index;
  r.phase = phase;
  r.label = "1 CPU -- no ddp";
  return r;
}

TEST(RankPod, DefaultRunIsTheRunningOneElseTheLastStarted) {
  BenchmarkJobStatus s;
  EXPECT_FALSE(default_log_run(s));
  s.runs = {run_in(0, RunPhase::kPending), run_in(1, RunPhase::kPending)};
  EXPECT_FALSE(default_log_run(s));
  s.runs = {run_in(0, RunPhase::kSucceeded), run_in(1, RunPhase::kRunning), run_in(2, RunPhase::kPending)};
  EXPECT_EQ(default_log_run(s), 1);
  s.runs[1].phase = RunPhase::kRestarting;
  EXPECT_EQ(default_log_run(s), 1);
  s.runs = {run_in(0, RunPhase::kSucceeded), run_in(1, RunPhase::kFailed), run_in(2, RunPhase::kPending)};
  EXPECT_EQ(default_log_run(s), 1);
}

int exit_code_of_report(const ClusterJob& job, std::string& message) {
  try {
    job_report(job);
  } catch (const PluginError& e) {
    message = e.what();
    return e.exit_code();
  }
  return 0;
}

TEST(PluginReport, AJobWithoutAReportSaysWhyAndWhetherOneWillCome) {
  ClusterJob job{"bench", "team", nullptr, {}};
  std::string msg;
  EXPECT_EQ(exit_code_of_report(job, msg), kExitNotYet);
  EXPECT_EQ(msg,
            "BenchmarkJob bench in namespace team has no report yet: the operator has not acted on it (no status): "
            "is trainbench-operator running?");

  job.status.phase = JobPhase::kRunning;
  job.status.runs_total = 2;
  job.status.runs_done = 0;
  job.status.runs = {run_in(0, RunPhase::kRestarting), run_in(1, RunPhase::kPending)};
  job.status.runs[0].attempt = 1;
  job.status.runs[0].message = "pod bench-r0-a0-trainer-0 failed";
  EXPECT_EQ(exit_code_of_report(job, msg), kExitNotYet);
  EXPECT_EQ(msg,
            "BenchmarkJob bench in namespace team has no report yet: phase Running, 0 of 2 runs done; run 0 "
            "(1 CPU -- no ddp) Restarting, attempt 1: pod bench-r0-a0-trainer-0 failed");

  job.status = {};
  job.status.phase = JobPhase::kInvalid;
  job.status.set_condition({ConditionType::kInvalid, ConditionStatus::kTrue, "InvalidSpec",
                            "spec.sweep[0].nodes: must be >= 1", "2026-01-01T00:00:00Z", std::nullopt});
  EXPECT_EQ(exit_code_of_report(job, msg), 1);  // it never will
  EXPECT_EQ(msg,
            "BenchmarkJob bench in namespace team has no report: phase Invalid; InvalidSpec: "
            "spec.sweep[0].nodes: must be >= 1");

  job.status.report = Report{};
  EXPECT_EQ(exit_code_of_report(job, msg), 0);
}

/// A job of three runs (1, 2 and 1 devices) whose status has run 1 Failed: status.report holds
/// runs 0 and 2 (baselineRun 1: the position of run 2, the paradigm-none run).
ClusterJob job_with_failed_run() {
  ClusterJob job{"bench", "default", nullptr, {}};
  job.object = {{"apiVersion", "trainbench.dev/v1alpha1"},
                {"kind", "BenchmarkJob"},
                {"metadata", {{"name", "bench"}}},
                {"spec",
                 {{"benchmark", {{"model", "mlp"}, {"batchSizePerDevice", 8}}},
                  {"sweep",
                   {{{"nodes", 1}, {"devicesPerNode", 1}},
                    {{"nodes", 2}, {"devicesPerNode", 1}},
                    {{"nodes", 1}, {"devicesPerNode", 1}, {"paradigm", "none"}}}}}}};
  job.status.phase = JobPhase::kFailed;
  job.status.runs = {run_in(0, RunPhase::kSucceeded), run_in(1, RunPhase::kFailed), run_in(2, RunPhase::kSucceeded)};
  job.status.runs[1].message = "pod bench-r1-a0-trainer-1 failed: trainbench-worker rank 1: out of memory";
  Report rep;
  rep.model = "mlp";
  for (int i : {0, 2}) {
    RunReport r;
    r.index = i;
    r.label = i == 0 ? "1M/1G" : "no ddp";
    r.devices_label = "1 CPU";
    r.examples_per_sec.p50 = 100;
    r.sec_per_iter.p50 = 0.08;
    job.status.runs[static_cast<std::size_t>(i)].summary = r;
    rep.runs.push_back(r);
  }
  rep.baseline_run = 1;
  job.status.report = rep;
  return job;
}

TEST(PluginReport, FailedRunsAreRowsWithTheirErrorAsTrainbenchRunPrintsThem) {
  const ClusterJob job = job_with_failed_run();
  const Report r = job_report(job);
  ASSERT_EQ(r.runs.size(), 3u);
  EXPECT_EQ(r.runs[1].index, 1);
  EXPECT_EQ(r.runs[1].phase, "Failed");
  EXPECT_EQ(r.runs[1].devices_label, "2 CPUs");
  EXPECT_EQ(r.runs[1].label, "2M/1G");
  EXPECT_EQ(r.runs[1].error, "pod bench-r1-a0-trainer-1 failed: trainbench-worker rank 1: out of memory");
  ASSERT_TRUE(r.baseline_run);
  EXPECT_EQ(r.runs[static_cast<std::size_t>(*r.baseline_run)].label, "no ddp");  // still the same run
  EXPECT_NE(format_report(r).find("2 CPUs -- 2M/1G:  FAILED: pod bench-r1-a0-trainer-1 failed: trainbench-worker"),
            std::string::npos)
      << format_report(r);

  // A job whose only run failed still gets the report trainbench run prints: the FAILED row.
  ClusterJob only_failed = job;
  only_failed.status.report.reset();
  only_failed.status.runs = {job.status.runs[1]};
  const Report f = job_report(only_failed);
  ASSERT_EQ(f.runs.size(), 1u);
  EXPECT_EQ(f.model, "mlp");
  EXPECT_FALSE(f.baseline_run);
  EXPECT_EQ(f.runs[0].phase, "Failed");

  // Today's operator puts the failed run in status.report itself: it is not added twice.
  ClusterJob with_row = job;
  with_row.status.report = r;
  const Report w = job_report(with_row);
  ASSERT_EQ(w.runs.size(), 3u);
  EXPECT_EQ(w.runs[1].phase, "Failed");
  EXPECT_EQ(format_report(w), format_report(r));
}

}  // namespace
}  // namespace trainbench::cli
