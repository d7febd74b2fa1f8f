// core/report/straggler: each rank's compute / exposed-communication split, its straggler score
// (fastest rank's compute / its compute) and the ranks named below the threshold, through the
// report, its JSON, the text report and the copy in status.
#include <gtest/gtest.h>

#include "core/report/rank_summary.hpp"
#include "core/report/report.hpp"
#include "core/report/report_format.hpp"
#include "core/report/straggler.hpp"

namespace trainbench {
namespace {

RunConfig ddp_config(int world, double threshold = 0.7) {
  RunConfig c;
  c.index = 1;
  c.nodes = 1;
  c.devices_per_node = world;
  c.paradigm = Paradigm::kDdp;
  c.batch_size_per_device = 8;
  c.straggler_threshold = threshold;
  return c;
}

/// `compute[k]` is rank k's compute per step: two repeats of three steps around it (the repeat
/// p50s compute[k] - 0.001 and compute[k] + 0.003, their median compute[k] + 0.001); every step
/// lasts 0.1 s, the rest waiting in the all-reduce.
RunResult result(const std::vector<double>& compute) {
  RunResult r;
  r.world_size = static_cast<int>(compute.size());
  for (std::size_t k = 0; k < compute.size(); ++k) {
    RankResult rk;
    rk.rank = static_cast<int>(k);
    rk.node_rank = 0;
    rk.local_rank = static_cast<int>(k);
    const double c = compute[k];
    rk.compute_seconds = {{c - 0.004, c - 0.001, c + 0.01}, {c + 0.003, c + 0.02, c}};
    rk.step_seconds = {{0.1, 0.1, 0.1}, {0.1, 0.1, 0.1}};
    for (const auto& rep : rk.compute_seconds) {
      std::vector<double> waits;
      for (double x : rep) waits.push_back(0.1 - x);
      rk.communication_seconds.push_back(waits);
    }
    r.ranks.push_back(rk);
  }
  return r;
}

TEST(Straggler, ScoresAreTheFastestComputeOverEachRanksAndTheSlowRankIsNamed) {
  const RunReport run = summarize_run(ddp_config(4), result({0.020, 0.021, 0.050, 0.023}));
  ASSERT_EQ(run.ranks.size(), 4u);
  // compute per rank: median over repeats of each repeat's p50 = compute + 0.001
  EXPECT_NEAR(*run.ranks[2].compute_seconds, 0.051, 1e-12);
  EXPECT_NEAR(*run.ranks[2].communication_seconds, 0.1 - 0.051, 1e-12);
  EXPECT_NEAR(*run.ranks[0].straggler_score, 1.0, 1e-12);
  EXPECT_NEAR(*run.ranks[1].straggler_score, 0.021 / 0.022, 1e-12);
  EXPECT_NEAR(*run.ranks[2].straggler_score, 0.021 / 0.051, 1e-12);
  ASSERT_TRUE(run.stragglers.has_value());
  const StragglerReport& s = *run.stragglers;
  EXPECT_DOUBLE_EQ(s.threshold, 0.7);
  EXPECT_EQ(s.fastest_rank, 0);
  EXPECT_NEAR(s.fastest_compute_seconds, 0.021, 1e-12);
  EXPECT_EQ(s.count, 1);
  ASSERT_EQ(s.stragglers.size(), 1u);
  EXPECT_EQ(s.stragglers[0].rank, 2);
  EXPECT_EQ(s.stragglers[0].local_rank, 2);
  EXPECT_NEAR(s.stragglers[0].score, 0.021 / 0.051, 1e-12);
  EXPECT_EQ(straggler_line(s, 8),
            "stragglers (score < 0.70): rank 2 (node 0, local 2) 0.41: compute 0.051s/step vs fastest 0.021s (rank 0)");
}

TEST(Straggler, ABalancedRunNamesNone) {
  const RunReport run = summarize_run(ddp_config(4), result({0.020, 0.021, 0.022, 0.0205}));
  ASSERT_TRUE(run.stragglers.has_value());
  EXPECT_EQ(run.stragglers->count, 0);
  EXPECT_TRUE(run.stragglers->stragglers.empty());
  EXPECT_EQ(straggler_line(*run.stragglers, 8), "");
  for (const auto& rk : run.ranks) EXPECT_GT(*rk.straggler_score, 0.9);
}

TEST(Straggler, TheThresholdComesFromTheSpecAndIsStrict) {
  // rank 2 scores 0.021 / 0.051 = 0.41: named under 0.5, not under 0.4
  EXPECT_EQ(summarize_run(ddp_config(4, 0.5), result({0.020, 0.021, 0.050, 0.023})).stragglers->count, 1);
  EXPECT_EQ(summarize_run(ddp_config(4, 0.4), result({0.020, 0.021, 0.050, 0.023})).stragglers->count, 0);
  // a threshold of 1 names every rank but the fastest, slowest first
  const RunReport all = summarize_run(ddp_config(4, 1.0), result({0.020, 0.030, 0.050, 0.023}));
  ASSERT_EQ(all.stragglers->count, 3);
  EXPECT_EQ(all.stragglers->stragglers[0].rank, 2);
  EXPECT_EQ(all.stragglers->stragglers[1].rank, 1);
  EXPECT_EQ(all.stragglers->stragglers[2].rank, 3);
  const BenchmarkJob job = parse_benchmark_job(
      "apiVersion: trainbench.dev/v1alpha1\nkind: BenchmarkJob\nmetadata: {name: t}\n"
      "spec:\n  benchmark: {model: mlp, stragglerThreshold: 0.55}\n  sweep: [{nodes: 1, devicesPerNode: 2}]\n");
  EXPECT_DOUBLE_EQ(plan_runs(job, 2)[0].straggler_threshold, 0.55);
  EXPECT_DOUBLE_EQ(run_config_from_json(to_json(plan_runs(job, 2)[0])).straggler_threshold, 0.55);
  EXPECT_DOUBLE_EQ(BenchmarkSpec{}.straggler_threshold, 0.7);
}

TEST(Straggler, ResultsWithoutComputeTimesAndPipelinesNameNone) {
  RunResult old = result({0.02, 0.05});
  for (auto& rk : old.ranks) {
    rk.compute_seconds.clear();
    rk.communication_seconds.clear();
  }
  const RunReport plain = summarize_run(ddp_config(2), old);
  EXPECT_FALSE(plain.stragglers.has_value());
  EXPECT_FALSE(plain.ranks[1].compute_seconds.has_value());
  EXPECT_FALSE(plain.ranks[1].straggler_score.has_value());
  EXPECT_FALSE(to_json(plain)["ranks"][1].contains("stragglerScore"));
  // A pipeline's stages do different work: their split is reported, not scored.
  RunConfig pipe = ddp_config(2);
  pipe.paradigm = Paradigm::kPipeline;
  const RunReport staged = summarize_run(pipe, result({0.02, 0.05}));
  EXPECT_FALSE(staged.stragglers.has_value());
  EXPECT_NEAR(*staged.ranks[1].compute_seconds, 0.051, 1e-12);
  EXPECT_FALSE(staged.ranks[1].straggler_score.has_value());
  // No measurable compute: no scores (rather than every other rank at 0).
  std::vector<RankReport> ranks(2);
  ranks[0].compute_seconds = 0.0;
  ranks[1].compute_seconds = 0.1;
  EXPECT_FALSE(score_stragglers(ranks, 0.7).has_value());
}

TEST(Straggler, RoundTripsThroughTheReportJsonAndTheRunResult) {
  const RunResult raw = result({0.020, 0.021, 0.050, 0.023});
  const RunResult back = run_result_from_json(to_json(raw));
  EXPECT_EQ(back.ranks[2].compute_seconds, raw.ranks[2].compute_seconds);
  EXPECT_EQ(back.ranks[2].communication_seconds, raw.ranks[2].communication_seconds);
  const RunReport run = summarize_run(ddp_config(4), raw);
  const nlohmann::json j = to_json(run);
  EXPECT_EQ(j["stragglers"]["ranks"][0]["rank"], 2);
  EXPECT_EQ(j["stragglers"]["count"], 1);
  EXPECT_TRUE(j["ranks"][2].contains("computeSeconds"));
  EXPECT_TRUE(j["ranks"][2].contains("communicationSeconds"));
  EXPECT_EQ(to_json(run_report_from_json(j, "runs[1]")), j);
}

TEST(Straggler, ReadersNameTheBadField) {
  nlohmann::json raw = to_json(result({0.02, 0.05}));
  raw["ranks"][1]["computeSeconds"][1].erase(0);
  try {
    run_result_from_json(raw);
    ADD_FAILURE() << "accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("ranks[1].computeSeconds: must have the shape of stepSeconds"),
              std::string::npos)
        << e.what();
  }
  nlohmann::json run = to_json(summarize_run(ddp_config(2), result({0.02, 0.05})));
  auto expect_error = [](const nlohmann::json& doc, const std::string& field) {
    try {
      run_report_from_json(doc, "runs[1]");
      ADD_FAILURE() << "accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  auto a = run;
  a["stragglers"]["threshold"] = 0;
  expect_error(a, "runs[1].stragglers.threshold");
  auto b = run;
  b["stragglers"]["count"] = 0;  // fewer than it names
  expect_error(b, "runs[1].stragglers.count");
  auto c = run;
  c["ranks"][0]["stragglerScore"] = -1;
  expect_error(c, "runs[1].ranks[0].stragglerScore");
}

TEST(Straggler, TheTextReportNamesThemUnderTheirRunAndScoresEveryRank) {
  const BenchmarkJob job = parse_benchmark_job(
      "apiVersion: trainbench.dev/v1alpha1\nkind: BenchmarkJob\nmetadata: {name: t}\n"
      "spec:\n  benchmark: {model: mlp}\n  sweep: [{nodes: 1, devicesPerNode: 4}]\n");
  const Report rep = build_report(job, plan_runs(job, 4), {{result({0.020, 0.021, 0.050, 0.023}), ""}});
  const std::string text = format_report(rep);
  const std::string row = "4 CPUs -- 1M/4G:  p50:";
  const auto at = text.find(row);
  ASSERT_NE(at, std::string::npos) << text;
  const std::size_t begin = text.find('\n', at) + 1;
  const std::string next_line = text.substr(begin, text.find('\n', begin) - begin);
  // under the row, where its cells begin
  EXPECT_EQ(
      next_line.rfind(std::string(row.size() - 4, ' ') + "stragglers (score < 0.70): rank 2 (node 0, local 2) 0.41", 0),
      0u)
      << text;
  EXPECT_NE(text.find("compute 0.051s  comm 0.049s  score 0.41"), std::string::npos) << text;
  EXPECT_NE(text.find("compute 0.021s  comm 0.079s  score 1.00"), std::string::npos) << text;
}

TEST(Straggler, StatusKeepsThemForRunsOfEverySize) {
  std::vector<double> compute(kMaxRanksInStatus * 2, 0.02);
  for (std::size_t k = 10; k < 10 + kStragglersInStatus + 4; ++k) compute[k] = 0.04 + 0.001 * static_cast<double>(k);
  const RunReport full = summarize_run(ddp_config(static_cast<int>(compute.size())), result(compute));
  ASSERT_EQ(full.stragglers->count, kStragglersInStatus + 4);
  const RunReport compact = compact_for_status(full, "bj-r1-result");
  EXPECT_TRUE(compact.ranks.empty());
  ASSERT_TRUE(compact.stragglers.has_value());
  EXPECT_EQ(compact.stragglers->count, kStragglersInStatus + 4) << "the count of all";
  ASSERT_EQ(compact.stragglers->stragglers.size(), static_cast<std::size_t>(kStragglersInStatus));
  EXPECT_EQ(compact.stragglers->stragglers[0].rank, 10 + kStragglersInStatus + 3) << "the lowest score first";
  const std::string line = straggler_line(*compact.stragglers, 2);
  EXPECT_NE(line.find("; and " + std::to_string(kStragglersInStatus + 2) + " more"), std::string::npos) << line;
  const RunReport back = run_report_from_json(to_json(compact), "runs[1]");
  EXPECT_EQ(back.stragglers->stragglers.size(), static_cast<std::size_t>(kStragglersInStatus));
}

}  // namespace
}  // namespace trainbench
