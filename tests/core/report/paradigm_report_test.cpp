// The report of a sweep mixing paradigms: labels, optimizer, per-rank optimizer state and
// parameters, the pipeline's split and bubble, pipeline throughput, JSON round trip, and the
// side-by-side table of the text report.
#include <gtest/gtest.h>

#include "core/report/report.hpp"
#include "core/report/report_format.hpp"

namespace trainbench {
namespace {

BenchmarkJob mixed_job() {
  return parse_benchmark_job(R"(apiVersion: trainbench.dev/v1alpha1
kind: BenchmarkJob
metadata: {name: paradigm-report-test}
spec:
  benchmark: {model: mlp, batchSizePerDevice: 10, measureSteps: 2, repeats: 1, warmupSteps: 0,
              optimizer: adam, pipeline: {microBatches: 4}}
  sweep:
    - {nodes: 1, devicesPerNode: 1, paradigm: none}
    - {nodes: 1, devicesPerNode: 2, paradigm: zero}
    - {nodes: 1, devicesPerNode: 2, paradigm: pipeline}
)");
}

RunResult fake(int world, bool staged, std::int64_t state_per_rank) {
  RunResult r;
  r.world_size = world;
  r.parameter_count = 1000;
  r.optimizer = "adam";
  r.micro_batches = staged ? 4 : 1;
  if (staged) {
    r.block_count = 3;
    r.stage_starts = {0, 2};
  }
  for (int k = 0; k < world; ++k) {
    RankResult rk;
    rk.rank = k;
    rk.local_rank = k;
    rk.step_seconds = {{0.5, 0.5}};
    rk.peak_memory_bytes = (200 - 10 * k) * 1024 * 1024;
    rk.initial_loss = 2.5;
    rk.final_loss = 1.5;
    rk.optimizer_state_bytes = state_per_rank;
    rk.parameter_count = staged ? (k == 0 ? 600 : 400) : 1000;
    rk.stage = staged ? k : -1;
    rk.bubble_fraction = staged ? 0.25 + 0.1 * k : 0;
    r.ranks.push_back(rk);
  }
  return r;
}

TEST(ParadigmReport, MixedSweepSideBySide) {
  const auto j = mixed_job();
  const auto runs = plan_runs(j, 2);
  ASSERT_EQ(runs[1].optimizer, Optimizer::kAdam);
  ASSERT_EQ(runs[2].pipeline.micro_batches, 4);
  ASSERT_EQ(runs[1].pipeline.micro_batches, 1);
  const Report built =
      build_report(j, runs, {{fake(1, false, 8000), ""}, {fake(2, false, 4000), ""}, {fake(2, true, 2400), ""}});
  const Report rep = report_from_json(to_json(built));  // what readers see
  ASSERT_EQ(rep.runs.size(), 3u);
  EXPECT_EQ(rep.runs[0].label, "no ddp");
  EXPECT_EQ(rep.runs[1].label, "1M/2G zero");
  EXPECT_EQ(rep.runs[2].label, "1M/2G pipeline");
  for (const auto& r : rep.runs) EXPECT_EQ(r.optimizer, "adam");
  // zero: data parallel, ex/sec counts both ranks; pipeline: one batch over both stages.
  EXPECT_NEAR(rep.runs[1].examples_per_sec.p50, 20 / 0.5, 1e-9);
  EXPECT_NEAR(rep.runs[2].examples_per_sec.p50, 10 / 0.5, 1e-9);
  EXPECT_FALSE(rep.runs[1].pipeline.has_value());
  ASSERT_TRUE(rep.runs[2].pipeline.has_value());
  EXPECT_EQ(rep.runs[2].pipeline->stages, 2);
  EXPECT_EQ(rep.runs[2].pipeline->micro_batches, 4);
  EXPECT_EQ(rep.runs[2].pipeline->block_count, 3);
  EXPECT_EQ(rep.runs[2].pipeline->stage_starts, (std::vector<int>{0, 2}));
  EXPECT_DOUBLE_EQ(rep.runs[2].pipeline->theoretical_bubble, 1.0 / 5.0);
  EXPECT_EQ(rep.runs[1].ranks[1].optimizer_state_bytes, 4000);
  EXPECT_FALSE(rep.runs[1].ranks[1].stage.has_value());
  EXPECT_EQ(rep.runs[2].ranks[1].stage.value_or(-1), 1);
  EXPECT_DOUBLE_EQ(rep.runs[2].ranks[1].bubble_fraction.value_or(-1), 0.35);
  EXPECT_EQ(rep.runs[2].ranks[0].parameter_count, 600);

  const std::string text = format_report(rep);
  EXPECT_NE(text.find("Paradigms side by side"), std::string::npos) << text;
  EXPECT_NE(text.find("2 CPUs -- 1M/2G pipeline:  pipeline x4"), std::string::npos) << text;
  EXPECT_NE(text.find("200.0 MiB / 190.0 MiB"), std::string::npos) << text;  // memory per device
  EXPECT_NE(text.find("25% / 35% (20%)"), std::string::npos) << text;          // bubble measured (GPipe)
  EXPECT_NE(text.find("2.5000 -> 1.5000"), std::string::npos) << text;
}

TEST(ParadigmReport, NoTableForAPlainDdpSweep) {
  const auto j = parse_benchmark_job(R"(apiVersion: trainbench.dev/v1alpha1
kind: BenchmarkJob
metadata: {name: plain}
spec:
  benchmark: {model: mlp, measureSteps: 2, repeats: 1}
  sweep:
    - {nodes: 1, devicesPerNode: 2}
)");
  const auto runs = plan_runs(j, 2);
  EXPECT_EQ(runs[0].optimizer, Optimizer::kSgd);
  const Report rep = build_report(j, runs, {{fake(2, false, 4000), ""}});
  EXPECT_EQ(format_report(rep).find("Paradigms side by side"), std::string::npos);
}

TEST(ParadigmReport, DefaultOptimizerPerParadigm) {
  EXPECT_EQ(default_optimizer(Paradigm::kZero), Optimizer::kAdam);
  EXPECT_EQ(default_optimizer(Paradigm::kDdp), Optimizer::kSgd);
  EXPECT_EQ(default_optimizer(Paradigm::kPipeline), Optimizer::kSgd);
}

}  // namespace
}  // namespace trainbench
