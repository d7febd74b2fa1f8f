// core/results/run_progress: position in the loop, the measured rate, the job's percent and time left,
// the sample a master serves, and the status block they become.
#include <gtest/gtest.h>

#include <stdexcept>

#include "core/api/job_status.hpp"
#include "core/plan/run_config.hpp"
#include "core/results/run_progress.hpp"

namespace trainbench {
namespace {

using nlohmann::json;

TEST(RunProgress, PositionCountsWarmupThenRepeats) {
  const RunSteps s{20, 5, 100};
  EXPECT_EQ(s.total(), 520);
  const LoopPosition starting = loop_position(s, -1);
  EXPECT_EQ(starting.stage, LoopStage::kStarting);
  const LoopPosition warm = loop_position(s, 3);
  EXPECT_EQ(warm.stage, LoopStage::kWarmup);
  EXPECT_EQ(warm.step, 3);
  EXPECT_EQ(warm.steps, 20);
  const LoopPosition m = loop_position(s, 20 + 100 + 17);  // repeat 2, 17 steps of it done
  EXPECT_EQ(m.stage, LoopStage::kMeasure);
  EXPECT_EQ(m.repeat, 2);
  EXPECT_EQ(m.step, 17);
  EXPECT_EQ(m.steps, 100);
  const LoopPosition first = loop_position(s, 20);
  EXPECT_EQ(first.stage, LoopStage::kMeasure);
  EXPECT_EQ(first.repeat, 1);
  EXPECT_EQ(first.step, 0);
  const LoopPosition end = loop_position(s, 520);
  EXPECT_EQ(end.stage, LoopStage::kFinishing);
  EXPECT_EQ(end.repeat, 5);
  EXPECT_EQ(end.step, 100);
  EXPECT_EQ(loop_position(RunSteps{0, 1, 4}, 0).stage, LoopStage::kMeasure);  // no warm-up
}

TEST(RunProgress, AllreduceRunsOneStepPerMessageSize) {
  RunConfig c;
  c.paradigm = Paradigm::kAllreduce;
  c.allreduce.min_bytes = 1024;
  c.allreduce.max_bytes = 8192;  // 1, 2, 4, 8 KiB
  const RunSteps s = run_steps(c);
  EXPECT_EQ(s.total(), 4);
  c.paradigm = Paradigm::kDdp;
  c.warmup_steps = 2;
  c.repeats = 3;
  c.measure_steps = 10;
  EXPECT_EQ(run_steps(c).total(), 32);
}

TEST(RunProgress, RateIsUnknownUntilAStepCompletesAfterTheFirstObservation) {
  StepRate r;
  EXPECT_FALSE(r.seconds_per_step());
  r.observe(-1, 100.0);  // setup: no anchor
  EXPECT_FALSE(r.seconds_per_step());
  r.observe(0, 101.0);  // the first step began: the anchor
  EXPECT_FALSE(r.seconds_per_step());
  r.observe(0, 102.0);  // still in it
  EXPECT_FALSE(r.seconds_per_step());
  r.observe(4, 103.0);
  ASSERT_TRUE(r.seconds_per_step());
  EXPECT_DOUBLE_EQ(*r.seconds_per_step(), 0.5);  // 2 s for 4 steps
  r.observe(4, 105.0);                           // stalled: the rate so far gets slower
  EXPECT_DOUBLE_EQ(*r.seconds_per_step(), 1.0);
  r.observe(2, 110.0);  // fewer steps: a new loop (a restarted attempt) anchors again
  EXPECT_FALSE(r.seconds_per_step());
}

TEST(RunProgress, EstimateBeforeAnyRateOrEndedRunIsUnknown) {
  JobEstimateInput in;
  in.runs_total = 4;
  in.current_total = 100;
  const JobEstimate e = estimate_job(in);
  EXPECT_EQ(e.percent, 0);
  EXPECT_FALSE(e.remaining_seconds);
  EXPECT_FALSE(e.run_remaining_seconds);
}

TEST(RunProgress, EstimateProjectsTheCurrentRunOntoTheOnesLeft) {
  JobEstimateInput in;
  in.runs_total = 4;
  in.current_total = 100;
  in.current_done = 25;
  in.seconds_per_step = 0.4;  // 75 steps left: 30 s
  in.current_elapsed = 15;    // so the run is projected at 45 s
  const JobEstimate e = estimate_job(in);
  EXPECT_EQ(e.percent, 6);  // (0 + 0.25) / 4
  EXPECT_DOUBLE_EQ(*e.run_remaining_seconds, 30);
  EXPECT_DOUBLE_EQ(*e.remaining_seconds, 30 + 3 * 45);
}

TEST(RunProgress, EstimateUsesTheEndedRunsMeanForTheRunsLeft) {
  JobEstimateInput in;
  in.runs_total = 4;
  in.runs_done = 2;
  in.ended_seconds = {40, 60};
  in.current_total = 100;
  in.current_done = 50;
  in.seconds_per_step = 0.2;
  const JobEstimate e = estimate_job(in);
  EXPECT_EQ(e.percent, 62);  // 2.5 / 4, rounded down
  EXPECT_DOUBLE_EQ(*e.remaining_seconds, 10 + 50);
  in.seconds_per_step.reset();  // no rate yet: the current run as long as the mean, less its time so far
  in.current_elapsed = 20;
  EXPECT_DOUBLE_EQ(*estimate_job(in).remaining_seconds, 30 + 50);
  in.current_elapsed = 80;  // longer than the mean already: nothing left of it, not less
  EXPECT_DOUBLE_EQ(*estimate_job(in).remaining_seconds, 50);
}

TEST(RunProgress, PercentStaysBelowHundredUntilEveryRunEnded) {
  JobEstimateInput in;
  in.runs_total = 2;
  in.runs_done = 1;
  in.current_total = 10;
  in.current_done = 10;
  EXPECT_EQ(estimate_job(in).percent, 99);
  in.runs_done = 2;
  in.current_done = -1;
  EXPECT_EQ(estimate_job(in).percent, 100);
  EXPECT_DOUBLE_EQ(*estimate_job(in).remaining_seconds, 0);
}

TEST(RunProgress, EtaIsFormattedAsKubectlPrintsAges) {
  EXPECT_EQ(format_eta(0), "0s");
  EXPECT_EQ(format_eta(44.6), "45s");
  EXPECT_EQ(format_eta(750), "12m30s");
  EXPECT_EQ(format_eta(7500), "2h05m");
  EXPECT_EQ(format_eta(-3), "0s");
}

TEST(RunProgress, SampleRoundTripsAndRejectsOutOfRange) {
  RunProgressSample s{2, 1, 37, 120, 0.125, 1.7e9};
  const json j = to_json(s);
  const RunProgressSample back = run_progress_sample_from_json(j);
  EXPECT_EQ(to_json(back), j);
  s.seconds_per_step.reset();
  EXPECT_FALSE(run_progress_sample_from_json(to_json(s)).seconds_per_step);
  auto with = [&](const char* key, json v) {
    json bad = j;
    bad[key] = std::move(v);
    return bad;
  };
  EXPECT_THROW(run_progress_sample_from_json(with("stepsDone", 121)), std::runtime_error);
  EXPECT_THROW(run_progress_sample_from_json(with("stepsDone", -2)), std::runtime_error);
  EXPECT_THROW(run_progress_sample_from_json(with("secondsPerStep", -1.0)), std::runtime_error);
  EXPECT_THROW(run_progress_sample_from_json(with("run", "2")), std::runtime_error);
  EXPECT_THROW(run_progress_sample_from_json(with("attempt", 1e12)), std::runtime_error);
  EXPECT_THROW(run_progress_sample_from_json(json::array()), std::runtime_error);
}

TEST(RunProgress, StatusBlockRoundTripsAndComparesWithoutItsTime) {
  ProgressDetail p;
  p.percent = 42;
  p.remaining_seconds = 130;
  p.last_update_time = "2026-11-24T17:00:00Z";
  CurrentRunProgress c;
  c.index = 1;
  c.label = "4 CPUs -- 2M/4G";
  c.position = loop_position(RunSteps{2, 2, 10}, 15);
  c.repeats = 2;
  c.seconds_per_step = 0.01;
  c.remaining_seconds = 1;
  p.current_run = c;
  BenchmarkJobStatus st;
  st.percent_complete = "42%";
  st.progress_detail = p;
  const json j = to_json(st);
  EXPECT_EQ(j["progressDetail"]["currentRun"]["stage"], "Measure");
  EXPECT_EQ(j["progressDetail"]["currentRun"]["repeat"], 2);
  EXPECT_EQ(j["progressDetail"]["currentRun"]["step"], 3);
  EXPECT_EQ(to_json(job_status_from_json(j)), j);
  ProgressDetail later = p;
  later.last_update_time = "2026-11-24T17:00:10Z";
  EXPECT_TRUE(same_progress(p, later));
  later.percent = 43;
  EXPECT_FALSE(same_progress(p, later));
}

}  // namespace
}  // namespace trainbench
