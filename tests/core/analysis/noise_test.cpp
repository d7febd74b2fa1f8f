// core/analysis/noise and the efficiency target: the verdicts of a report (issue 14 items 3 and 5), from
// known step times through summarize_run / assemble_report to JSON, text and Event summaries.
#include <gtest/gtest.h>

#include <cmath>

#include "core/analysis/noise.hpp"
#include "core/report/report.hpp"
#include "core/report/report_format.hpp"
#include "core/report/report_notes.hpp"

namespace trainbench {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

BenchmarkJob job(int repeats, const std::string& extra = "", int threads = 1) {
  return parse_benchmark_job(R"(apiVersion: trainbench.dev/v1alpha1
kind: BenchmarkJob
metadata: {name: noise-test}
spec:
  benchmark: {model: mlp, batchSizePerDevice: 10, measureSteps: 100, warmupSteps: 1,
              threadsPerProcess: )" +
                             std::to_string(threads) + ", repeats: " + std::to_string(repeats) + extra + R"(}
  sweep:
    - {nodes: 1, devicesPerNode: 1, paradigm: none}
    - {nodes: 1, devicesPerNode: 2}
)");
}

/// A result whose repeat r has 100 steps of `level[r]` seconds with a +-`jitter` sawtooth (every
/// rank alike), as measured on a host with `cores` CPUs.
RunResult result(int world, const std::vector<double>& level, double jitter, int cores = 16) {
  RunResult res;
  res.world_size = world;
  res.environment.cpu_cores = cores;
  for (int k = 0; k < world; ++k) {
    RankResult rk;
    rk.rank = k;
    rk.local_rank = k;
    for (double l : level) {
      std::vector<double> steps;
      for (int s = 0; s < 100; ++s) steps.push_back(l * (1 + jitter * (s % 2 == 0 ? 1 : -1)));
      rk.step_seconds.push_back(steps);
    }
    res.ranks.push_back(rk);
  }
  return res;
}

Report report(const BenchmarkJob& j, const RunResult& none, const RunResult& two) {
  return build_report(j, plan_runs(j, 2), {{none, ""}, {two, ""}});
}

TEST(NoiseStats, KnownValues) {
  // {1, 2, 3, 4}: mean 2.5, sample sd sqrt(5/3)
  EXPECT_NEAR(coefficient_of_variation_percent({1, 2, 3, 4}), std::sqrt(5.0 / 3.0) / 2.5 * 100, 1e-9);
  EXPECT_EQ(coefficient_of_variation_percent({5}), 0);
  EXPECT_EQ(coefficient_of_variation_percent({0, 0}), 0);
  // p50s 0.10, 0.11, 0.13: (0.13 - 0.10) / 0.11
  const auto spread = repeat_spread_percent({{0.10, 0, 0, 0}, {0.13, 0, 0, 0}, {0.11, 0, 0, 0}});
  ASSERT_TRUE(spread);
  EXPECT_NEAR(*spread, 0.03 / 0.11 * 100, 1e-9);
  EXPECT_FALSE(repeat_spread_percent({{0.1, 0, 0, 0}}));
  // d2(2) = 2 / sqrt(pi) = 1.1284, d2(5) = 2.3259: the expected range of 2 and 5 normals
  EXPECT_NEAR(jitter_spread_percent(10, 2, 100), 2 / std::sqrt(M_PI) * 1.2533 * 10 / 10, 1e-4);
  EXPECT_NEAR(jitter_spread_percent(10, 5, 100), 2.3259 * 1.2533, 1e-3);
  EXPECT_EQ(jitter_spread_percent(10, 1, 100), 0);
}

TEST(NoiseVerdict, CleanSweepIsQuiet) {
  const BenchmarkJob j = job(3);
  const Report rep = report(j, result(1, {0.100, 0.101, 0.102}, 0.01), result(2, {0.100, 0.100, 0.101}, 0.01));
  ASSERT_EQ(rep.noise_threshold_percent, 10);
  for (const auto& r : rep.runs) {
    ASSERT_TRUE(r.noise && r.noise->verdict) << r.label;
    EXPECT_EQ(*r.noise->verdict, NoiseVerdict::kQuiet) << r.label;
    EXPECT_TRUE(r.noise->advice.empty());
    EXPECT_NEAR(r.noise->step_cv_percent, 1.0, 0.01);  // +-1% sawtooth
    EXPECT_EQ(r.noise->threshold_percent, 10);
  }
  EXPECT_NEAR(*rep.runs[0].noise->repeat_spread_percent, 0.002 / 0.101 * 100, 1e-6);
  EXPECT_TRUE(contains(rep.runs[0].noise->reason, "differ by 2.0% (threshold 10%)")) << rep.runs[0].noise->reason;
  const std::string text = format_report(rep);
  EXPECT_TRUE(contains(text, "threshold 10%): every run's repeats agree within 2.0%")) << text;
  EXPECT_FALSE(contains(text, "noisy [")) << text;
  EXPECT_EQ(noisy_summary(rep), "");
}

TEST(NoiseVerdict, RepeatsThatDriftApartAreNoisyWithReasonAndAdvice) {
  // run 1: steady steps (1% jitter) but repeats at 0.10, 0.10, 0.13: drift, not jitter; its two
  // processes x 4 threads on 2 cores oversubscribe the host.
  const BenchmarkJob j = job(3, "", 4);
  const Report rep = report(j, result(1, {0.1, 0.1, 0.1}, 0.01), result(2, {0.10, 0.10, 0.13}, 0.01, 2));
  const NoiseReport& n = *rep.runs[1].noise;
  ASSERT_EQ(n.verdict, NoiseVerdict::kNoisy);
  EXPECT_NEAR(*n.repeat_spread_percent, 30, 1e-6);
  EXPECT_EQ(n.processes_per_host, 2);
  EXPECT_EQ(n.threads_per_process, 4);
  EXPECT_EQ(n.host_cores, 2);
  EXPECT_TRUE(contains(n.reason, "the repeats' p50 sec/iter differ by 30.0% (threshold 10%)")) << n.reason;
  ASSERT_EQ(n.advice.size(), 3u);
  EXPECT_TRUE(contains(n.advice[0], "fewer processes than cores: 2 processes x 4 threads share 2 cores"))
      << n.advice[0];
  EXPECT_TRUE(contains(n.advice[1], "a quieter machine")) << n.advice[1];
  EXPECT_TRUE(contains(n.advice[2], "more repeats (spec.benchmark.repeats, now 3")) << n.advice[2];
  EXPECT_EQ(*rep.runs[0].noise->verdict, NoiseVerdict::kQuiet);

  const std::string text = format_report(rep);
  EXPECT_TRUE(contains(text, "1 of 2 runs noisy, the others' repeats agree within 0.0%")) << text;
  // the row's mark, and its footnote with the reason and what would help
  EXPECT_TRUE(contains(text, "%  noisy [1]\n")) << text;
  EXPECT_TRUE(contains(text, "[1] 2 CPUs -- 1M/2G is noisy: the repeats' p50 sec/iter differ by 30.0%")) << text;
  EXPECT_TRUE(contains(text, "    what would help: fewer processes than cores")) << text;
  EXPECT_TRUE(contains(noisy_summary(rep),
                       "1 of 2 runs noisy (repeats' p50 spread above 10%): 2 CPUs -- 1M/2G "
                       "(repeats differ by 30.0%; try fewer processes than cores"))
      << noisy_summary(rep);

  // JSON: the typed verdict, and back
  const auto jr = to_json(rep);
  EXPECT_EQ(jr["runs"][1]["noise"]["verdict"], "noisy");
  EXPECT_EQ(jr["runs"][1]["noise"]["hostCores"], 2);
  EXPECT_EQ(jr["benchmark"]["noiseThresholdPercent"], 10);
  EXPECT_EQ(to_json(report_from_json(jr)), jr);
}

TEST(NoiseVerdict, JitterThatExplainsTheSpreadAsksForMoreSteps) {
  // 40% sawtooth over 100 steps: 3 repeats' medians move by ~1.69 x 1.2533 x 40 / 10 = 8.5%,
  // more than half the 10% threshold: more measured steps would help.
  const BenchmarkJob j = job(3, ", noiseThresholdPercent: 10");
  const Report rep = report(j, result(1, {0.1, 0.1, 0.1}, 0.01), result(2, {0.10, 0.10, 0.12}, 0.40));
  const NoiseReport& n = *rep.runs[1].noise;
  ASSERT_EQ(n.verdict, NoiseVerdict::kNoisy);
  EXPECT_NEAR(n.step_cv_percent, 40.2, 0.1);
  ASSERT_EQ(n.advice.size(), 2u);  // 16 cores: no oversubscription
  EXPECT_TRUE(contains(n.advice[0], "more measured steps (spec.benchmark.measureSteps, now 100)")) << n.advice[0];
  EXPECT_TRUE(contains(n.advice[0], "by about 8.5%")) << n.advice[0];
}

TEST(NoiseVerdict, ThresholdIsTheSpecs) {
  // a 30% spread is quiet under a 50% threshold
  const Report rep = report(job(3, ", noiseThresholdPercent: 50"), result(1, {0.1, 0.1, 0.1}, 0.01),
                            result(2, {0.10, 0.10, 0.13}, 0.01));
  EXPECT_EQ(*rep.runs[1].noise->verdict, NoiseVerdict::kQuiet);
  EXPECT_EQ(rep.runs[1].noise->threshold_percent, 50);
}

TEST(NoiseVerdict, OneRepeatSaysItCannotBeJudged) {
  const Report rep = report(job(1), result(1, {0.1}, 0.05), result(2, {0.1}, 0.05));
  for (const auto& r : rep.runs) {
    const NoiseReport& n = *r.noise;
    EXPECT_EQ(n.verdict, NoiseVerdict::kUnjudged);
    EXPECT_FALSE(n.repeat_spread_percent);
    EXPECT_TRUE(contains(n.reason, "one repeat: the spread between repeats cannot be judged")) << n.reason;
    ASSERT_EQ(n.advice.size(), 1u);
    EXPECT_TRUE(contains(n.advice[0], "spec.benchmark.repeats >= 2"));
  }
  const std::string text = format_report(rep);
  EXPECT_TRUE(contains(text, "noise: not judged for 2 runs with one repeat (set spec.benchmark.repeats >= 2")) << text;
  EXPECT_EQ(noisy_summary(rep), "");  // nothing to warn about: the text says why
  EXPECT_EQ(to_json(rep)["runs"][0]["noise"]["verdict"], "unjudged");
  EXPECT_FALSE(to_json(rep)["runs"][0]["noise"].contains("repeatSpreadPercent"));
}

TEST(EfficiencyTarget, BelowAboveAndEqual) {
  // Run 1 takes 0.1 / e s per step on 2 devices: speedup 2e, efficiency e.
  for (const auto& [efficiency, below] :
       std::vector<std::pair<double, bool>>{{0.5, true}, {0.9, false}, {0.8, false}}) {
    const Report rep =
        report(job(3), result(1, {0.1, 0.1, 0.1}, 0), result(2, std::vector<double>(3, 0.1 / efficiency), 0));
    ASSERT_EQ(rep.efficiency_target, 0.8);
    ASSERT_TRUE(rep.runs[1].efficiency);
    EXPECT_NEAR(*rep.runs[1].efficiency, efficiency, 1e-12);
    EXPECT_EQ(rep.runs[1].below_target, below) << efficiency;
    EXPECT_EQ(rep.runs[0].below_target, false);  // the baseline: 100%
    const std::string text = format_report(rep);
    EXPECT_EQ(contains(text, "below target [1]"), below) << text;
    EXPECT_EQ(contains(text, "efficiency target 80%: every run meets it"), !below) << text;
    EXPECT_EQ(to_json(rep)["runs"][1]["belowTarget"], below);
    if (below) {
      EXPECT_TRUE(contains(text,
                           "[1] 2 CPUs -- 1M/2G: scaling efficiency 50.0% is below the target 80% "
                           "(spec.benchmark.efficiencyTarget)"))
          << text;
      EXPECT_EQ(below_target_summary(rep), "1 of 2 runs below the efficiency target 80%: 2 CPUs -- 1M/2G 50.0%");
    } else {
      EXPECT_EQ(below_target_summary(rep), "");
    }
  }
  // the spec's target: 0.4 lets 50% pass
  const Report rep = report(job(3, ", efficiencyTarget: 0.4"), result(1, {0.1, 0.1, 0.1}, 0),
                            result(2, std::vector<double>(3, 0.2), 0));
  EXPECT_EQ(rep.runs[1].below_target, false);
  EXPECT_EQ(to_json(rep)["benchmark"]["efficiencyTarget"], 0.4);
}

TEST(Verdicts, OldReportsWithoutThemStillRead) {
  const Report rep = report(job(3), result(1, {0.1, 0.1, 0.12}, 0), result(2, std::vector<double>(3, 0.2), 0));
  nlohmann::json j = to_json(rep);
  j["benchmark"].erase("efficiencyTarget");
  j["benchmark"].erase("noiseThresholdPercent");
  for (auto& r : j["runs"]) {
    r.erase("noise");
    r.erase("belowTarget");
  }
  const Report old = report_from_json(j);
  EXPECT_FALSE(old.efficiency_target || old.noise_threshold_percent);
  EXPECT_FALSE(old.runs[1].noise || old.runs[1].below_target);
  EXPECT_EQ(to_json(old), j);
  const std::string text = format_report(old);
  EXPECT_FALSE(contains(text, "noise")) << text;
  EXPECT_FALSE(contains(text, "target")) << text;
  EXPECT_TRUE(contains(text, "2 CPUs -- 1M/2G:  p50:")) << text;
}

TEST(Verdicts, BadNoiseNamesTheField) {
  const nlohmann::json good = to_json(report(job(3), result(1, {0.1, 0.1, 0.1}, 0), result(2, {0.1, 0.1, 0.1}, 0)));
  const auto error = [&](const std::function<void(nlohmann::json&)>& edit) -> std::string {
    nlohmann::json j = good;
    edit(j);
    try {
      report_from_json(j);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "<read>";
  };
  EXPECT_EQ(error([](nlohmann::json& j) { j["runs"][1]["noise"]["stepCvPercent"] = "low"; }),
            "runs[1].noise.stepCvPercent: must be a number");
  EXPECT_EQ(error([](nlohmann::json& j) { j["runs"][1]["noise"].erase("repeatSpreadPercent"); }),
            "runs[1].noise.repeatSpreadPercent: is required with verdict quiet");
  EXPECT_EQ(error([](nlohmann::json& j) { j["runs"][1]["noise"]["advice"] = {1}; }),
            "runs[1].noise.advice[0]: must be a string");
  EXPECT_EQ(error([](nlohmann::json& j) { j["runs"][0]["belowTarget"] = "no"; }),
            "runs[0].belowTarget: must be a boolean");
}

}  // namespace
}  // namespace trainbench
