// The status (operator/controller/reconciler_status.cpp): a 1,024-rank sweep's fits etcd, and the
// status reads back typed (core/api/job_status.hpp).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>

#include "core/api/job_status.hpp"
#include "core/report/rank_summary.hpp"
#include "core/report/report_format.hpp"
#include "tests/operator/reconciler_test_support.hpp"

namespace trainbench::op::reconcile_test {
namespace {

/// Seed 004's sweep: one device without DDP, then 1, 2, 4, 8 devices on one node and 2 .. 128
/// nodes of 8, repeats and steps as the evaluation plan (skip 20, measure 100, 5 repeats).
json seed004_job() {
  json sweep = json::array({{{"nodes", 1}, {"devicesPerNode", 1}, {"paradigm", "none"}}});
  for (int world = 1; world <= 1024; world *= 2) {
    sweep.push_back({{"nodes", std::max(1, world / 8)}, {"devicesPerNode", std::min(world, 8)}});
  }
  return job_object({{"sweep", sweep}, {"benchmark", {{"warmupSteps", 20}, {"measureSteps", 100}, {"repeats", 5}}}});
}

/// A run's result as its master writes it: every rank with full-precision timings (rank 7 of
/// each run is the slowest), summarised as the master does.
json synthetic_result(const RunConfig& cfg, int attempt) {
  RunResult r;
  r.world_size = cfg.world_size();
  r.environment.backend = "gloo";
  for (int k = 0; k < r.world_size; ++k) {
    RankResult rk{k, k / cfg.devices_per_node, k % cfg.devices_per_node, {}, 9'876'543'210 + k, 6.1 + 1e-3 * k, 6.9};
    for (int rep = 0; rep < 5; ++rep) {
      std::vector<double> steps;
      std::vector<double> compute, communication;
      for (int s = 0; s < 100; ++s) {
        const double noise = 1e-4 * std::sin(k * 131.0 + s + rep);
        steps.push_back(0.2 + noise + (k == 7 ? 0.05 : 0));
        compute.push_back(0.08 + noise + (k == 7 ? 0.05 : 0));  // rank 7 scores 0.08 / 0.13
        communication.push_back(steps.back() - compute.back());
      }
      rk.step_seconds.push_back(steps);
      rk.compute_seconds.push_back(compute);
      rk.communication_seconds.push_back(communication);
    }
    rk.optimizer_state_bytes = 102'228'128;
    rk.parameter_count = 25'557'032;
    r.ranks.push_back(rk);
  }
  return {{"attempt", attempt}, {"run", to_json(summarize_run(cfg, r))}, {"environment", to_json(r.environment)}};
}

TEST(Reconciler, StatusOfA1024RankSweepFitsEtcdWithRoomToSpare) {
  Observed o{seed004_job(), {}, {}, {}, false, false, false, t0()};
  const std::vector<RunConfig> runs = plan_runs(parse_benchmark_job(o.job.dump()), 1, ServerPlacement::OwnPods);
  ASSERT_EQ(runs.size(), 12u);
  std::size_t largest_result = 0;
  for (const auto& run : runs) {
    apply(o, reconcile(o));
    all_running(o);
    apply(o, reconcile(o));
    for (auto& cm : o.configmaps) {
      if (cm["metadata"]["name"] != result_configmap_name("bj", run.index)) continue;
      cm["data"]["result"] = synthetic_result(run, 0).dump();
      largest_result = std::max(largest_result, cm.dump().size());
    }
  }
  apply(o, reconcile(o));
  const json st = o.job["status"];
  ASSERT_EQ(st["phase"], "Succeeded") << st.dump(1).substr(0, 2000);
  const std::size_t status_bytes = st.dump().size();
  std::cout << "status of the 1..1024-rank sweep: " << status_bytes
            << " bytes; largest result ConfigMap: " << largest_result << " bytes\n";
  // etcd refuses objects over 1.5 MiB; a ConfigMap holds at most 1 MiB.
  EXPECT_LT(status_bytes, 512u * 1024) << "a third of etcd's limit";
  EXPECT_LT(largest_result, 1024u * 1024 / 2) << "half a ConfigMap's limit";
  for (const auto& run : runs) {
    const json& summary = st["runs"][static_cast<std::size_t>(run.index)]["summary"];
    const json& in_report = st["report"]["runs"][static_cast<std::size_t>(run.index)];
    for (const json* r : {&summary, &in_report}) {
      if (run.world_size() <= kMaxRanksInStatus) {
        EXPECT_EQ((*r)["ranks"].size(), static_cast<std::size_t>(run.world_size()));
        EXPECT_FALSE(r->contains("rankSummary"));
        continue;
      }
      EXPECT_TRUE((*r)["ranks"].empty());
      const json& rs = (*r)["rankSummary"];
      EXPECT_EQ(rs["count"], run.world_size());
      EXPECT_EQ(rs["slowest"].size(), static_cast<std::size_t>(kSlowestRanksKept));
      EXPECT_EQ(rs["slowest"][0]["rank"], 7) << "the slow rank comes first";
      EXPECT_GT(rs["secPerIterP50"]["max"].get<double>(), rs["secPerIterP50"]["median"].get<double>() + 0.04);
      EXPECT_EQ(rs["detail"]["configMap"], result_configmap_name("bj", run.index));
    }
    for (const json* r : {&summary, &in_report}) {
      if (run.world_size() < 8) continue;  // rank 7 is the straggler
      EXPECT_EQ((*r)["stragglers"]["count"], 1) << run.index;
      EXPECT_EQ((*r)["stragglers"]["ranks"][0]["rank"], 7) << run.index;
    }
  }
  // The report in status still reads back and prints, naming the slow rank of the largest run.
  const std::string text = format_report(report_from_json(st["report"]));
  EXPECT_NE(text.find("1024 ranks, p50"), std::string::npos) << text.substr(text.size() - 3000);
  EXPECT_NE(text.find("ConfigMap " + result_configmap_name("bj", 11)), std::string::npos);
  EXPECT_NE(text.find("stragglers (score < 0.70): rank 7 (node 0, local 7) 0.62"), std::string::npos);
  EXPECT_TRUE(o.pods.empty());
}

/// Reads the job's status as the next reconcile will, and checks it writes back the same JSON.
BenchmarkJobStatus typed_status(const Observed& o) {
  const BenchmarkJobStatus st = job_status_from_json(o.job["status"]);
  EXPECT_EQ(to_json(st), o.job["status"]) << "the status reads back typed and serialises unchanged";
  return st;
}

TEST(Reconciler, StatusReadsBackTypedAndUnchanged) {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  apply(o, reconcile(o));
  EXPECT_EQ(typed_status(o).runs.at(0).phase, RunPhase::kStarting);
  all_running(o);
  apply(o, reconcile(o));
  set_phase(o, trainer_pod_name("bj", 0, 0, 0), "Failed", 1);
  apply(o, reconcile(o));
  BenchmarkJobStatus st = typed_status(o);
  EXPECT_EQ(st.runs.at(0).phase, RunPhase::kRestarting);
  EXPECT_EQ(st.runs.at(0).pods_created, false);
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  EXPECT_TRUE(of(reconcile(o), Action::Verb::PatchStatus).empty()) << "nothing changed: no status write";
  deliver_result(o, 0, 1, 1);
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  deliver_result(o, 1, 0, 4);
  apply(o, reconcile(o));
  st = typed_status(o);
  EXPECT_EQ(st.phase, JobPhase::kSucceeded);
  EXPECT_EQ(st.runs_done, 2);
  ASSERT_NE(st.condition(ConditionType::kSucceeded), nullptr);
  EXPECT_EQ(st.condition(ConditionType::kSucceeded)->status, ConditionStatus::kTrue);
  ASSERT_TRUE(st.report.has_value());
  EXPECT_EQ(st.report->runs.size(), 2u);
  EXPECT_EQ(st.runs.at(0).restarts, 1);
  ASSERT_TRUE(st.runs.at(1).environment.has_value());
  EXPECT_EQ(st.runs.at(1).environment->backend, "gloo");
}

// A status only another program could have written (the CRD's schema refuses it) is not acted
// on: the reconcile fails naming the field and is retried, and the status is left as it is.
TEST(Reconciler, UnreadableStatusFailsTheReconcileNamingTheField) {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  apply(o, reconcile(o));
  o.job["status"]["runs"][1]["phase"] = "Done";
  try {
    reconcile(o);
    ADD_FAILURE() << "reconciled a status it cannot read";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "status.runs[1].phase: unknown run phase \"Done\"");
  }
  o.job["metadata"]["deletionTimestamp"] = "2026-11-22T10:00:05Z";
  EXPECT_TRUE(reconcile(o).actions.empty()) << "a job being deleted is left to garbage collection";
}

// The master's result is the run's; an environment this operator cannot read is left out of
// status (the report takes another run's), and the run still succeeds.
TEST(Reconciler, ResultWithAnUnreadableEnvironmentStillSucceeds) {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  deliver_result(o, 0, 0, 1);
  for (auto& cm : o.configmaps) {
    if (cm["metadata"]["name"] != result_configmap_name("bj", 0)) continue;
    json result = json::parse(cm["data"]["result"].get<std::string>());
    result["environment"] = "gloo on cpu";
    cm["data"]["result"] = result.dump();
  }
  apply(o, reconcile(o));
  const BenchmarkJobStatus st = typed_status(o);
  EXPECT_EQ(st.runs.at(0).phase, RunPhase::kSucceeded);
  EXPECT_FALSE(st.runs.at(0).environment.has_value());
  EXPECT_EQ(st.runs_done, 1);
}

}  // namespace
}  // namespace trainbench::op::reconcile_test
