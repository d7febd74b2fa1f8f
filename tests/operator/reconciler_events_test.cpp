// Events (operator/controller/reconciler_events.cpp): one per transition, stragglers and runs below
// target, a start recorded even when the run ended first.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "tests/operator/reconciler_test_support.hpp"

namespace trainbench::op::reconcile_test {
namespace {

TEST(Reconciler, FinishedJobFlagsRunsBelowTargetAndNoisyRunsWithEvents) {
  Observed o{job_object({{"benchmark", {{"repeats", 2}}}}), {}, {}, {}, false, false, false, t0()};
  // run 0: 0.1 s steps, 8 ex/step -> 80 ex/s. run 1: repeats at 0.2 and 0.3 s (spread 40%), 32
  // ex/step at the median 0.25 s -> 128 ex/s: speedup 1.6, efficiency 0.4.
  const Decision d = finish_two_runs(o, {{0.1, 0.1, 0.1}, {0.1, 0.1, 0.1}}, {{0.2, 0.2, 0.2}, {0.3, 0.3, 0.3}});
  const json st = o.job["status"];
  ASSERT_EQ(st["phase"], "Succeeded");
  EXPECT_EQ(st["lowestEfficiency"], 0.4);
  EXPECT_EQ(st["noisyRuns"], 1);
  EXPECT_EQ(st["bestSpeedup"], 1.6);
  const json& run1 = st["report"]["runs"][1];
  EXPECT_EQ(run1["belowTarget"], true);
  EXPECT_EQ(run1["noise"]["verdict"], "noisy");
  EXPECT_NEAR(run1["noise"]["repeatSpreadPercent"].get<double>(), 40, 1e-9);
  EXPECT_EQ(st["report"]["runs"][0]["belowTarget"], false);
  EXPECT_EQ(st["report"]["runs"][0]["noise"]["verdict"], "quiet");
  std::map<std::string, json> events;
  for (const auto* e : of(d, Action::Verb::Event)) events[e->body["reason"]] = e->body;
  ASSERT_TRUE(events.count("BelowTarget") && events.count("Noisy"));
  EXPECT_EQ(events["BelowTarget"]["type"], "Warning");
  EXPECT_EQ(events["BelowTarget"]["message"], "1 of 2 runs below the efficiency target 80%: 4 CPUs -- 1M/4G 40.0%");
  EXPECT_EQ(events["Noisy"]["type"], "Warning");
  const std::string noisy = events["Noisy"]["message"];
  EXPECT_EQ(noisy.rfind(
                "1 of 2 runs noisy (repeats' p50 spread above 10%): 4 CPUs -- 1M/4G (repeats differ by 40.0%; try ", 0),
            0u)
      << noisy;
  // Decided once: the finished job's next reconcile emits nothing.
  EXPECT_TRUE(of(reconcile(o), Action::Verb::Event).empty());
}

std::vector<std::string> event_names(const Decision& d) {
  std::vector<std::string> out;
  for (const auto* a : of(d, Action::Verb::Event)) out.push_back(a->body["metadata"]["name"]);
  return out;
}

/// A leader killed after recording a transition's Event but before the status write: the next
/// leader decides the same transition again and must name its Event the same (the create is
/// then AlreadyExists), while different transitions, attempts and jobs get different names.
TEST(Reconciler, TransitionEventsHaveOneNamePerTransition) {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  const Decision first = reconcile(o);
  o.now = t0() + std::chrono::seconds(7);  // another leader, later
  const Decision again = reconcile(o);
  ASSERT_EQ(event_names(first).size(), 1u);
  EXPECT_EQ(event_names(first), event_names(again));
  EXPECT_EQ(event_names(first)[0], "bj.runstarted.r0.a0.uid-1");
  EXPECT_EQ(of(first, Action::Verb::Event)[0]->body["count"], 1);

  apply(o, first);
  all_running(o);
  apply(o, reconcile(o));
  set_phase(o, trainer_pod_name("bj", 0, 0, 0), "Failed", 1);
  Decision d = reconcile(o);
  EXPECT_EQ(event_names(d), std::vector<std::string>{"bj.runrestarted.r0.a0.uid-1"});
  apply(o, d);
  d = reconcile(o);
  EXPECT_EQ(event_names(d), std::vector<std::string>{"bj.runstarted.r0.a1.uid-1"}) << "a new attempt, a new Event";

  Observed recreated{job_object(), {}, {}, {}, false, false, false, t0()};
  recreated.job["metadata"]["uid"] = "0123456789abcdef";
  EXPECT_EQ(event_names(reconcile(recreated)), std::vector<std::string>{"bj.runstarted.r0.a0.01234567"});
}

std::vector<const Action*> events_of(const Decision& d, const std::string& reason) {
  std::vector<const Action*> out;
  for (const auto* a : of(d, Action::Verb::Event)) {
    if (a->body["reason"] == reason) out.push_back(a);
  }
  return out;
}

// A run whose ranks' compute differs beyond spec.benchmark.stragglerThreshold ends with a
// Warning Event naming the slow rank (once), and its copy in status names it too.
TEST(Reconciler, ARunWithStragglersEndsWithAWarningNamingThem) {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  deliver_result(o, 0, 0, 1, {{0.1, 0.2, 0.3}}, {0.05});
  Decision d = reconcile(o);
  EXPECT_TRUE(events_of(d, "Stragglers").empty()) << "one rank: no straggler";
  apply(o, d);
  all_running(o);
  apply(o, reconcile(o));
  deliver_result(o, 1, 0, 4, {{0.1, 0.2, 0.3}}, {0.02, 0.021, 0.06, 0.02});
  d = reconcile(o);
  const auto warnings = events_of(d, "Stragglers");
  ASSERT_EQ(warnings.size(), 1u) << d.actions.size();
  EXPECT_EQ(warnings[0]->body["type"], "Warning");
  EXPECT_EQ(warnings[0]->body["metadata"]["name"], "bj.stragglers.r1.uid-1");
  EXPECT_EQ(warnings[0]->body["message"],
            "run 1 (4 CPUs -- 2M/2G): stragglers (score < 0.70): rank 2 (node 0, local 2) 0.33: compute 0.060s/step "
            "vs fastest "
            "0.020s (rank 0)");
  apply(o, d);
  const json& summary = o.job["status"]["runs"][1]["summary"];
  EXPECT_EQ(summary["stragglers"]["ranks"][0]["rank"], 2);
  EXPECT_EQ(o.job["status"]["report"]["runs"][1]["stragglers"]["count"], 1);
  EXPECT_TRUE(events_of(reconcile(o), "Stragglers").empty()) << "the run's end is recorded once";
}

TEST(Reconciler, ABalancedRunEndsWithoutAStragglersEvent) {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  deliver_result(o, 0, 0, 1, {{0.1, 0.2, 0.3}}, {0.05});
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  deliver_result(o, 1, 0, 4, {{0.1, 0.2, 0.3}}, {0.02, 0.021, 0.022, 0.02});
  const Decision d = reconcile(o);
  EXPECT_EQ(events_of(d, "RunSucceeded").size(), 1u);
  EXPECT_TRUE(events_of(d, "Stragglers").empty());
  apply(o, d);
  EXPECT_EQ(o.job["status"]["runs"][1]["summary"]["stragglers"]["count"], 0);
}

/// The chaos soak's one missing Event (issue 12, soak-015: no RunStarted for run 1 attempt 1): a
/// leader created an attempt's pods and died before its RunStarted Event and status write; a pod
/// of the attempt was killed before the next leader's first reconcile, which restarted the run
/// at once. The attempt did run: its RunStarted Event comes first, under its own name (a no-op
/// AlreadyExists had the dead leader recorded it), then the RunRestarted.
TEST(Reconciler, AnAttemptThatFailedBeforeItsStartWasRecordedStillGetsItsStartEvent) {
  for (const int backoff_limit : {1, 0}) {  // restarted, or failed for good
    Observed o{job_object({{"runPolicy", {{"backoffLimit", backoff_limit}}}}), {}, {}, {}, false, false, false, t0()};
    const Decision first = reconcile(o);
    for (const auto* a : of(first, Action::Verb::Create, "pods")) o.pods.push_back(a->body);  // no Event, no status
    all_running(o);
    set_phase(o, trainer_pod_name("bj", 0, 0, 0), "Failed", 137);
    o.now = t0() + std::chrono::seconds(4);  // the next leader
    const Decision d = reconcile(o);
    const std::string end = backoff_limit > 0 ? "bj.runrestarted.r0.a0.uid-1" : "bj.runfailed.r0.a0.uid-1";
    const std::vector<std::string> names = event_names(d);
    ASSERT_GE(names.size(), 2u) << "backoffLimit " << backoff_limit;
    EXPECT_EQ(names[0], "bj.runstarted.r0.a0.uid-1") << "backoffLimit " << backoff_limit;
    EXPECT_EQ(names[1], end);
    EXPECT_EQ(of(d, Action::Verb::Event)[0]->body["message"], "run 0 (1 CPUs -- no ddp) attempt 0: created 2 pods");
    EXPECT_EQ(status_of(d)["runs"][0]["startTime"], "2026-11-22T10:00:04Z");
  }
}

TEST(Reconciler, ARunThatEndedBeforeAnyReconcileRecordedItsStartGetsItsRunStarted) {
  // A leader created run 0's pods and died before its Event and status; the run ended (its result
  // delivered) before the next leader reconciled.
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  const Decision first = reconcile(o);
  const json job_before = o.job;
  apply(o, first);
  o.job = job_before;  // its objects landed, not its status
  all_running(o);
  deliver_result(o, 0, 0, 1);
  const Decision d = reconcile(o);
  const auto reasons = event_reasons(d);
  const auto started = std::find(reasons.begin(), reasons.end(), "RunStarted");
  const auto succeeded = std::find(reasons.begin(), reasons.end(), "RunSucceeded");
  ASSERT_NE(started, reasons.end()) << "the start is recorded";
  ASSERT_NE(succeeded, reasons.end());
  EXPECT_LT(started, succeeded) << "before the end";
  apply(o, d);
  EXPECT_TRUE(o.job["status"]["runs"][0].contains("startTime"));
}

}  // namespace
}  // namespace trainbench::op::reconcile_test
