// Progress (operator/controller/reconciler_progress.cpp; docs/operator.md, "Progress").

#include <gtest/gtest.h>

#include "tests/operator/reconciler_test_support.hpp"

namespace trainbench::op::reconcile_test {
namespace {

/// A job of two runs (1 warm-up + 4 measured steps each) with progress written at most every 10 s.
Observed progress_job() {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  o.progress_interval = std::chrono::seconds(10);
  return o;
}

json detail(const Observed& o) { return o.job["status"].value("progressDetail", json()); }

TEST(Reconciler, ProgressShowsTheStartingRunBeforeItsMasterServesAnything) {
  Observed o = progress_job();
  const Decision d = reconcile(o);
  apply(o, d);
  const json p = detail(o);
  ASSERT_TRUE(p.is_object()) << o.job["status"];
  EXPECT_EQ(p["percent"], 0);
  EXPECT_FALSE(p.contains("estimatedRemainingSeconds")) << "no rate and no ended run: no estimate";
  EXPECT_EQ(p["currentRun"]["index"], 0);
  EXPECT_EQ(p["currentRun"]["stage"], "Starting");
  EXPECT_EQ(p["currentRun"]["label"], o.job["status"]["runs"][0]["label"]);
  EXPECT_EQ(o.job["status"]["percentComplete"], "0%");
  ASSERT_TRUE(d.requeue_after);
  EXPECT_LE(*d.requeue_after, std::chrono::milliseconds(10100)) << "requeued to poll again";
  // Due again, but nothing changed (the pods still wait): no write.
  o.now = t0() + std::chrono::seconds(30);
  EXPECT_TRUE(of(reconcile(o), Action::Verb::PatchStatus).empty());
}

TEST(Reconciler, ProgressFromTheMastersSampleIsWrittenAtMostOncePerInterval) {
  Observed o = progress_job();
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  // 3 of 5 steps done at 0.5 s a step; the attempt's pods were created at t0.
  o.now = t0() + std::chrono::seconds(12);
  o.progress = RunProgressSample{0, 0, 3, 5, 0.5, 0};
  Decision d = reconcile(o);
  apply(o, d);
  json p = detail(o);
  EXPECT_EQ(p["percent"], 30);  // (0 + 3/5) / 2
  EXPECT_EQ(p["currentRun"]["stage"], "Measure");
  EXPECT_EQ(p["currentRun"]["repeat"], 1);
  EXPECT_EQ(p["currentRun"]["step"], 2);
  EXPECT_EQ(p["currentRun"]["steps"], 4);
  EXPECT_EQ(p["currentRun"]["secondsPerStep"], 0.5);
  EXPECT_EQ(p["currentRun"]["estimatedRemainingSeconds"], 1);  // 2 steps at 0.5 s
  EXPECT_EQ(p["estimatedRemainingSeconds"], 1 + 13);           // the next run as long as this one: 12 + 1 s
  EXPECT_EQ(p["lastUpdateTime"], "2026-11-22T10:00:12Z");
  EXPECT_EQ(o.job["status"]["percentComplete"], "30%");

  // A step later, 4 s after the last write: nothing else changed, so no write, and a requeue
  // for when it is due.
  o.now = t0() + std::chrono::seconds(16);
  o.progress = RunProgressSample{0, 0, 4, 5, 0.5, 0};
  d = reconcile(o);
  EXPECT_TRUE(of(d, Action::Verb::PatchStatus).empty()) << status_of(d);
  ASSERT_TRUE(d.requeue_after);
  EXPECT_LE(*d.requeue_after, std::chrono::milliseconds(6100));
  // Due: written.
  o.now = t0() + std::chrono::seconds(22);
  d = reconcile(o);
  apply(o, d);
  EXPECT_EQ(detail(o)["percent"], 40);
  EXPECT_EQ(detail(o)["lastUpdateTime"], "2026-11-22T10:00:22Z");
}

TEST(Reconciler, ProgressRidesAlongAWriteThatHappensAnyway) {
  Observed o = progress_job();
  apply(o, reconcile(o));
  o.now = t0() + std::chrono::seconds(1);  // within the interval of the first write
  o.progress = RunProgressSample{0, 0, 2, 5, 0.25, 0};
  all_running(o);  // the run turns Running: status is written, with the new progress
  const Decision d = reconcile(o);
  apply(o, d);
  EXPECT_EQ(o.job["status"]["runs"][0]["phase"], "Running");
  EXPECT_EQ(detail(o)["percent"], 20);
  EXPECT_EQ(detail(o)["currentRun"]["stage"], "Measure");
}

TEST(Reconciler, ProgressOfAnotherAttemptOrRunIsIgnored) {
  Observed o = progress_job();
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  o.now = t0() + std::chrono::seconds(20);
  o.progress = RunProgressSample{0, 1, 3, 5, 0.5, 0};  // attempt 1: not this one's
  apply(o, reconcile(o));
  EXPECT_EQ(detail(o)["currentRun"]["stage"], "Starting");
  EXPECT_EQ(detail(o)["percent"], 0);
  o.now = t0() + std::chrono::seconds(40);
  o.progress = RunProgressSample{1, 0, 3, 5, 0.5, 0};  // run 1's, while run 0 runs
  apply(o, reconcile(o));
  EXPECT_EQ(detail(o)["percent"], 0);
}

TEST(Reconciler, ProgressNeverGoesBackAcrossRunsAndIsHundredWhenTheJobSucceeds) {
  Observed o = progress_job();
  int last = 0;
  auto step = [&](int seconds, std::optional<RunProgressSample> s) {
    o.now = t0() + std::chrono::seconds(seconds);
    o.progress = s;
    apply(o, reconcile(o));
    const int percent = detail(o)["percent"].get<int>();
    EXPECT_GE(percent, last) << "at " << seconds << " s: " << detail(o);
    last = percent;
  };
  step(0, std::nullopt);
  all_running(o);
  step(1, RunProgressSample{0, 0, 1, 5, 1.0, 0});
  step(12, RunProgressSample{0, 0, 5, 5, 1.0, 0});
  deliver_result(o, 0, 0, 1);
  step(13, RunProgressSample{0, 0, 5, 5, 1.0, 0});  // run 0's last sample after its result
  EXPECT_EQ(detail(o)["currentRun"]["index"], 1);
  EXPECT_EQ(last, 50);
  ASSERT_TRUE(detail(o).contains("estimatedRemainingSeconds")) << "an ended run gives an estimate";
  EXPECT_EQ(detail(o)["estimatedRemainingSeconds"], 13) << "run 1 as long as run 0 (t0 to 13 s)";
  all_running(o);
  step(30, RunProgressSample{1, 0, 4, 5, 1.0, 0});
  deliver_result(o, 1, 0, 4);
  step(31, std::nullopt);
  EXPECT_EQ(o.job["status"]["phase"], "Succeeded");
  EXPECT_EQ(detail(o)["percent"], 100);
  EXPECT_EQ(detail(o)["estimatedRemainingSeconds"], 0);
  EXPECT_FALSE(detail(o).contains("currentRun"));
  EXPECT_EQ(o.job["status"]["percentComplete"], "100%");
}

TEST(Reconciler, ProgressOfAFailedJobKeepsItsPercentWithoutAnEstimate) {
  Observed o = progress_job();
  o.job["spec"]["runPolicy"]["backoffLimit"] = 0;
  apply(o, reconcile(o));
  all_running(o);
  o.now = t0() + std::chrono::seconds(20);
  o.progress = RunProgressSample{0, 0, 3, 5, 0.5, 0};
  apply(o, reconcile(o));
  set_phase(o, "bj-r0-a0-trainer-0", "Failed", 1);
  o.now = t0() + std::chrono::seconds(21);
  apply(o, reconcile(o));
  EXPECT_EQ(o.job["status"]["phase"], "Failed");
  EXPECT_EQ(detail(o)["percent"], 30);
  EXPECT_FALSE(detail(o).contains("estimatedRemainingSeconds"));
  EXPECT_FALSE(detail(o).contains("currentRun"));
}

TEST(Reconciler, NoProgressWhenTheIntervalIsZero) {
  Observed o{job_object(), {}, {}, {}, false, false, false, t0()};
  o.progress = RunProgressSample{0, 0, 3, 5, 0.5, 0};
  apply(o, reconcile(o));
  EXPECT_FALSE(o.job["status"].contains("progressDetail"));
  EXPECT_FALSE(o.job["status"].contains("percentComplete"));
}

}  // namespace
}  // namespace trainbench::op::reconcile_test
