// spec.suspend (operator/controller/reconciler_suspend.cpp; docs/operator.md, "Suspend and queueing").

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/operator/reconciler_test_support.hpp"

namespace trainbench::op::reconcile_test {
namespace {

/// Sets spec.suspend as a user or Kueue would (a spec change: a new generation).
void set_suspend(Observed& o, bool suspend) {
  o.job["spec"]["suspend"] = suspend;
  o.job["metadata"]["generation"] = o.job["metadata"]["generation"].get<int>() + 1;
}

TEST(Reconciler, AJobCreatedSuspendedCreatesNothingAndSaysSo) {
  Observed o{job_object({{"suspend", true}}), {}, {}, {}, false, false, false, t0()};
  Decision d = reconcile(o);
  for (const auto& a : d.actions) {
    EXPECT_NE(a.verb, Action::Verb::Create) << a.resource << " " << a.name;  // no pod, service, role
  }
  EXPECT_EQ(event_reasons(d), std::vector<std::string>{"Suspended"});
  apply(o, d);
  const json st = o.job["status"];
  EXPECT_EQ(st["phase"], "Suspended");
  ASSERT_NE(condition_of(st, "Suspended"), nullptr);
  EXPECT_EQ((*condition_of(st, "Suspended"))["status"], "True");
  EXPECT_EQ((*condition_of(st, "Suspended"))["reason"], "Suspended");
  EXPECT_EQ((*condition_of(st, "Running"))["status"], "False");
  EXPECT_EQ(st["progress"], "0/2");
  EXPECT_FALSE(st.contains("startTime")) << "nothing started";
  // Reconciled again (a resync): nothing to do, nothing to write, no second Event.
  o.now += std::chrono::minutes(5);
  EXPECT_TRUE(reconcile(o).actions.empty());
}

TEST(Reconciler, ResumingAJobCreatedSuspendedStartsItThen) {
  Observed o{job_object({{"suspend", true}, {"runPolicy", {{"activeDeadlineSeconds", 100}}}}),
             {},
             {},
             {},
             false,
             false,
             false,
             t0()};
  apply(o, reconcile(o));
  o.now = t0() + std::chrono::hours(2);  // queued for two hours (longer than every timeout)
  set_suspend(o, false);
  Decision d = reconcile(o);
  apply(o, d);
  EXPECT_EQ(of(d, Action::Verb::Create, "pods").size(), 2u);  // run 0: master + one trainer
  const auto reasons = event_reasons(d);
  EXPECT_NE(std::find(reasons.begin(), reasons.end(), "Resumed"), reasons.end());
  const json st = o.job["status"];
  EXPECT_EQ(st["phase"], "Running");
  EXPECT_EQ((*condition_of(st, "Suspended"))["status"], "False");
  EXPECT_EQ((*condition_of(st, "Suspended"))["reason"], "Resumed");
  EXPECT_EQ(st["startTime"], format_time(o.now)) << "activeDeadlineSeconds counts from the resume";
  // Neither activeDeadlineSeconds (100 s) nor schedulingTimeoutSeconds (60 s) counted the queueing.
  o.now += std::chrono::seconds(30);
  apply(o, reconcile(o));
  EXPECT_EQ(o.job["status"]["phase"], "Running");
  EXPECT_EQ(o.job["status"]["runs"][0]["phase"], "Starting");
}

TEST(Reconciler, SuspendingARunningJobInterruptsItsRunWithoutARestartAndResumeRunsItAgain) {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  deliver_result(o, 0, 0, 1);
  apply(o, reconcile(o));  // run 0 done; run 1's 3 pods
  all_running(o);
  apply(o, reconcile(o));
  ASSERT_EQ(o.pods.size(), 3u);

  // Suspended mid-run (Kueue preempts it): run 1's pods go, the run is interrupted, not failed.
  o.now += std::chrono::seconds(10);
  set_suspend(o, true);
  Decision d = reconcile(o);
  EXPECT_TRUE(of(d, Action::Verb::Create, "pods").empty());
  EXPECT_EQ(deleted_pods(d).size(), 3u);
  const auto reasons = event_reasons(d);
  EXPECT_NE(std::find(reasons.begin(), reasons.end(), "RunInterrupted"), reasons.end());
  EXPECT_NE(std::find(reasons.begin(), reasons.end(), "Suspended"), reasons.end());
  EXPECT_EQ(std::find(reasons.begin(), reasons.end(), "RunRestarted"), reasons.end());
  apply(o, d);
  EXPECT_TRUE(o.pods.empty());
  json st = o.job["status"];
  EXPECT_EQ(st["phase"], "Suspended");
  EXPECT_EQ(st["runs"][0]["phase"], "Succeeded") << "a finished run keeps its result";
  const json run1 = st["runs"][1];
  EXPECT_EQ(run1["phase"], "Pending");
  EXPECT_EQ(run1["restarts"], 0) << "no backoff used";
  EXPECT_EQ(run1["interruptions"], 1);
  EXPECT_EQ(run1["attempt"], 1);
  EXPECT_EQ(run1["podsCreated"], false);
  EXPECT_NE(run1["message"].get<std::string>().find("interrupted by spec.suspend"), std::string::npos);
  // The interrupted attempt's master delivers late: ignored, the run starts again on resume.
  deliver_result(o, 1, 0, 4);
  o.now += std::chrono::minutes(10);
  EXPECT_TRUE(reconcile(o).actions.empty()) << "nothing runs, nothing changes while suspended";

  set_suspend(o, false);
  d = reconcile(o);
  apply(o, d);
  const auto created = of(d, Action::Verb::Create, "pods");
  ASSERT_EQ(created.size(), 3u);
  for (const auto* a : created) EXPECT_EQ(a->body["metadata"]["labels"]["trainbench.dev/attempt"], "1");
  EXPECT_EQ(o.job["status"]["runsDone"], 1);
  all_running(o);
  apply(o, reconcile(o));
  deliver_result(o, 1, 1, 4);
  apply(o, reconcile(o));
  st = o.job["status"];
  EXPECT_EQ(st["phase"], "Succeeded");
  EXPECT_EQ(st["report"]["runs"].size(), 2u);
  EXPECT_EQ(st["runs"][1]["restarts"], 0);
  EXPECT_EQ(st["runs"][1]["interruptions"], 1);
}

TEST(Reconciler, ASuspendThatFindsTheRunsResultCountsTheRun) {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  deliver_result(o, 0, 0, 1);  // arrives in the same reconcile as the suspend
  set_suspend(o, true);
  apply(o, reconcile(o));
  EXPECT_EQ(o.job["status"]["runs"][0]["phase"], "Succeeded");
  EXPECT_FALSE(o.job["status"]["runs"][0].contains("interruptions"));
  EXPECT_EQ(o.job["status"]["phase"], "Suspended");
  EXPECT_TRUE(o.pods.empty());
}

TEST(Reconciler, SuspendingAFinishedJobChangesNothing) {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  finish_two_runs(o, {{0.1, 0.2}}, {{0.1, 0.2}});
  ASSERT_EQ(o.job["status"]["phase"], "Succeeded");
  set_suspend(o, true);
  const Decision d = reconcile(o);
  EXPECT_TRUE(of(d, Action::Verb::Event).empty());
  const json st = status_of(d);
  EXPECT_TRUE(st.is_null() || st["phase"] == "Succeeded") << st;
}

}  // namespace
}  // namespace trainbench::op::reconcile_test
