// reconcile(Observed) -> Decision through a whole job: an invalid or hostile spec, the first
// reconcile, the sweep to its report, deadlines, an operator restart. The other parts of the
// decision have their own files (reconciler_<part>_test.cpp, beside operator/controller/'s).

#include <gtest/gtest.h>

#include <set>

#include "core/api/crd.hpp"
#include "tests/operator/reconciler_test_support.hpp"

namespace trainbench::op::reconcile_test {
namespace {

TEST(Reconciler, InvalidSpecGetsConditionWithFieldAndNoPods) {
  Observed o{job_object({{"sweep", json::array({{{"nodes", 1}, {"devicesPerNode", 0}}})}}), {}, {}, {}, false, false, false, t0()};
  const Decision d = reconcile(o);
  EXPECT_TRUE(of(d, Action::Verb::Create, "pods").empty());
  const json st = status_of(d);
  EXPECT_EQ(st["phase"], "Invalid");
  EXPECT_EQ(st["observedGeneration"], 1);
  bool found = false;
  for (const auto& c : st["conditions"]) {
    if (c["type"] == "Invalid") {
      EXPECT_EQ(c["status"], "True");
      EXPECT_NE(c["message"].get<std::string>().find("spec.sweep[0].devicesPerNode"), std::string::npos);
      found = true;
    }
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(of(d, Action::Verb::Event).size(), 1u);
}

/// What any user with create rights on BenchmarkJobs can write (issue 11): huge strings, quoted
/// numbers, hundreds of bad keys. Each job gets condition Invalid with a message the CRD takes
/// and no pods; a good job reconciled after them (the same operator process) starts its run.
TEST(Reconciler, HostileSpecsAreInvalidAndOtherJobsStillRun) {
  json bad_labels = json::object();
  for (int i = 0; i < 64; ++i)
    bad_labels["bad key " + std::to_string(i) + std::string(300, 'k')] = std::string(300, 'v');
  const std::vector<json> hostile = {
      job_object({{"benchmark", {{"model", std::string(100000, 'm')}}}}),
      job_object({{"benchmark", {{"repeats", std::string(100000, '1')}}}}),
      job_object({{"benchmark", {{"repeats", "5"}}}}),
      job_object({{"template", {{"resources", {{"limits", {{"cpu", std::string(100000, '1')}}}}}}}}),
      job_object({{"template", {{"labels", bad_labels}, {"annotations", bad_labels}, {"nodeSelector", bad_labels}}},
                  {"nccl", {{"extraEnv", bad_labels}}}}),
      job_object({{"template", {{"image", "worker:\u00e9" + std::string(2000, 'i')}}}}),
  };
  for (const json& job : hostile) {
    Observed o{job, {}, {}, {}, false, false, false, t0()};
    Decision d;
    ASSERT_NO_THROW(d = reconcile(o));
    EXPECT_TRUE(of(d, Action::Verb::Create, "pods").empty());
    const json st = status_of(d);
    EXPECT_EQ(st["phase"], "Invalid");
    for (const auto& c : st["conditions"]) {
      EXPECT_LE(c["message"].get<std::string>().size(), static_cast<std::size_t>(kMaxConditionMessageLength));
    }
  }
  Observed good{job_object(), {}, {}, {}, false, false, false, t0()};
  const Decision d = reconcile(good);
  EXPECT_FALSE(of(d, Action::Verb::Create, "pods").empty());
  EXPECT_EQ(status_of(d)["phase"], "Running");
}

TEST(Reconciler, FirstReconcileCreatesTheFirstRunWithRanksAndOwners) {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  const Decision d = reconcile(o);
  const auto pods = of(d, Action::Verb::Create, "pods");
  ASSERT_EQ(pods.size(), 2u);  // run 0: master + one trainer
  EXPECT_EQ(of(d, Action::Verb::Create, "services").size(), 1u);
  EXPECT_EQ(of(d, Action::Verb::Create, "configmaps").size(), 1u);
  EXPECT_EQ(of(d, Action::Verb::Create, "roles").size(), 1u);
  for (const auto* a : pods) {
    EXPECT_EQ(a->body["metadata"]["ownerReferences"][0]["uid"], "uid-1");
    EXPECT_EQ(a->body["metadata"]["labels"]["app.kubernetes.io/managed-by"], "trainbench-operator");
    EXPECT_EQ(env(a->body, "MASTER_ADDR"), "bj-r0.ns1.svc");
    EXPECT_EQ(env(a->body, "WORLD_SIZE"), "1");
    EXPECT_EQ(a->body["spec"]["restartPolicy"], "Never");
    if (a->body["metadata"]["labels"]["trainbench.dev/role"] == "trainer") {
      // One metrics port per worker process of the node (run 0 has one device per node).
      EXPECT_EQ(env(a->body, "TRAINBENCH_METRICS_PORT"), "9400");
      const json ports = a->body["spec"]["containers"][0]["ports"];
      ASSERT_EQ(ports.size(), 1u);
      EXPECT_EQ(ports[0]["name"], "metrics-0");
      EXPECT_EQ(ports[0]["containerPort"], 9400);
    }
  }
  const json st = status_of(d);
  EXPECT_EQ(st["phase"], "Running");
  EXPECT_EQ(st["runsTotal"], 2);
  EXPECT_EQ(st["runs"][0]["phase"], "Starting");
  EXPECT_TRUE(d.requeue_after.has_value());
}

TEST(Reconciler, WholeSweepSucceedsWithReport) {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  EXPECT_EQ(o.job["status"]["runs"][0]["phase"], "Running");
  deliver_result(o, 0, 0, 1);
  Decision d = reconcile(o);
  apply(o, d);
  EXPECT_EQ(o.job["status"]["runsDone"], 1);
  EXPECT_EQ(o.job["status"]["progress"], "1/2");
  // run 1: 2 nodes x 2 devices -> master + 2 trainers with their NODE_RANK
  const auto pods = of(d, Action::Verb::Create, "pods");
  ASSERT_EQ(pods.size(), 3u);
  std::set<std::string> node_ranks;
  for (const auto* a : pods) {
    EXPECT_EQ(env(a->body, "WORLD_SIZE"), "4");
    EXPECT_EQ(env(a->body, "MASTER_ADDR"), "bj-r1.ns1.svc");
    if (a->body["metadata"]["labels"]["trainbench.dev/role"] == "trainer") {
      node_ranks.insert(env(a->body, "NODE_RANK"));
      EXPECT_EQ(env(a->body, "NPROC_PER_NODE"), "2");
    }
  }
  EXPECT_EQ(node_ranks, (std::set<std::string>{"0", "1"}));
  all_running(o);
  apply(o, reconcile(o));
  deliver_result(o, 1, 0, 4);
  d = reconcile(o);
  apply(o, d);
  const json st = o.job["status"];
  EXPECT_EQ(st["phase"], "Succeeded");
  EXPECT_EQ(st["report"]["runs"].size(), 2u);
  EXPECT_DOUBLE_EQ(st["report"]["runs"][0]["speedup"].get<double>(), 1.0);
  EXPECT_GT(st["bestExamplesPerSec"].get<double>(), 0);
  EXPECT_EQ(st["lowestEfficiency"], 1.0);
  EXPECT_EQ(st["noisyRuns"], 0);
  EXPECT_EQ(st["report"]["runs"][1]["noise"]["verdict"], "unjudged");  // one repeat
  for (const auto* e : of(d, Action::Verb::Event)) {
    EXPECT_NE(e->body["reason"], "BelowTarget");
    EXPECT_NE(e->body["reason"], "Noisy");
  }
  EXPECT_TRUE(o.pods.empty()) << "cleanPodPolicy All leaves no pod";
}

TEST(Reconciler, TargetAndThresholdAreTheSpecs) {
  Observed o{job_object({{"benchmark", {{"repeats", 2}, {"efficiencyTarget", 0.3}, {"noiseThresholdPercent", 50}}}}),
             {},
             {},
             {},
             false,
             false,
             false,
             t0()};
  const Decision d = finish_two_runs(o, {{0.1, 0.1, 0.1}, {0.1, 0.1, 0.1}}, {{0.2, 0.2, 0.2}, {0.3, 0.3, 0.3}});
  EXPECT_EQ(o.job["status"]["noisyRuns"], 0);
  EXPECT_EQ(o.job["status"]["report"]["runs"][1]["belowTarget"], false);
  for (const auto* e : of(d, Action::Verb::Event)) {
    EXPECT_NE(e->body["reason"], "BelowTarget");
    EXPECT_NE(e->body["reason"], "Noisy");
  }
}

TEST(Reconciler, OnlyTheSpecIsParsedNotTheStatus) {
  // A status beyond the spec's document bound (1 MiB; a report can be big) is not the spec's: the
  // job is not Invalid for it, and each reconcile parses the spec alone.
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  apply(o, reconcile(o));
  o.job["status"]["runs"][0]["message"] = std::string(1100000, 'x');
  const Decision d = reconcile(o);
  EXPECT_TRUE(of(d, Action::Verb::PatchStatus).empty() || status_of(d).value("phase", "") != "Invalid")
      << status_of(d).dump().substr(0, 300);
  EXPECT_NE(o.job["status"]["phase"], "Invalid");
}

TEST(Reconciler, ActiveDeadlineFailsTheJob) {
  Observed o{job_object({{"runPolicy", {{"activeDeadlineSeconds", 100}}}}), {}, {}, {}, false, false, false, t0()};
  apply(o, reconcile(o));
  all_running(o);
  o.now = t0() + std::chrono::seconds(101);
  apply(o, reconcile(o));
  EXPECT_EQ(o.job["status"]["phase"], "Failed");
  EXPECT_EQ(o.job["status"]["conditions"].back()["reason"], "DeadlineExceeded");
  EXPECT_TRUE(o.pods.empty());
}

TEST(Reconciler, RestartedOperatorCreatesNoDuplicates) {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  Decision d = reconcile(o);
  // The pods were created but the status patch was lost (the operator died in between).
  for (const auto& a : d.actions) {
    if (a.verb == Action::Verb::Create && a.resource == "pods") {
      o.pods.push_back(a.body);
      break;  // only the first pod made it
    }
  }
  o.services.push_back(json{{"metadata", {{"name", "bj-r0"}}}});
  d = reconcile(o);
  const auto creates = of(d, Action::Verb::Create, "pods");
  ASSERT_EQ(creates.size(), 1u);
  EXPECT_NE(creates[0]->name, o.pods[0]["metadata"]["name"]);
  EXPECT_TRUE(of(d, Action::Verb::Create, "services").empty());
}

TEST(Reconciler, FinishedJobKeepsNothingRunning) {
  Observed o{job_object({{"runPolicy", {{"cleanPodPolicy", "None"}}}}), {}, {}, {}, false, false, false, t0()};
  o.job["status"] = {{"phase", "Failed"}, {"observedGeneration", 1}};
  o.pods.push_back({{"metadata", {{"name", "bj-r0-a0-master"}, {"labels", {{"trainbench.dev/run", "0"}}}}}, {"status", {{"phase", "Running"}}}});
  o.pods.push_back({{"metadata", {{"name", "bj-r0-a0-trainer-0"}, {"labels", {{"trainbench.dev/run", "0"}}}}}, {"status", {{"phase", "Failed"}}}});
  const Decision d = reconcile(o);
  const auto dels = of(d, Action::Verb::Delete, "pods");
  ASSERT_EQ(dels.size(), 1u);
  EXPECT_EQ(dels[0]->name, "bj-r0-a0-master");
  EXPECT_TRUE(of(d, Action::Verb::PatchStatus).empty()) << "nothing changed";
}

TEST(Reconciler, TimesRoundTrip) {
  EXPECT_EQ(format_time(t0()), "2026-11-22T10:00:00Z");
  EXPECT_EQ(*parse_time("2026-11-22T11:00:00.123+01:00"), t0());
  EXPECT_FALSE(parse_time("yesterday").has_value());
}

}  // namespace
}  // namespace trainbench::op::reconcile_test
