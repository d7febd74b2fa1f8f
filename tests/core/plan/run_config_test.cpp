#include <gtest/gtest.h>

#include "core/plan/run_config.hpp"

namespace trainbench {
namespace {

BenchmarkJob job() {
  return parse_benchmark_job(R"(apiVersion: trainbench.dev/v1alpha1
kind: BenchmarkJob
metadata: {name: plan-test}
spec:
  benchmark: {model: mlp, batchSizePerDevice: 8, ddp: {bucketCapMB: 25}}
  sweep:
    - {nodes: 1, devicesPerNode: 1, paradigm: none}
    - {nodes: 2, devicesPerNode: 3, bucketCapMB: 1}
)");
}

TEST(Plan, OneRunPerSweepEntryWithOverrides) {
  const auto runs = plan_runs(job(), 8);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].label(), "no ddp");
  EXPECT_EQ(runs[0].devices_label(), "1 CPUs");
  EXPECT_EQ(runs[0].threads_per_process, 8);
  EXPECT_EQ(runs[1].label(), "2M/3G");
  EXPECT_EQ(runs[1].devices_label(), "6 CPUs");
  EXPECT_EQ(runs[1].paradigm, Paradigm::kDdp);
  EXPECT_DOUBLE_EQ(runs[1].ddp.bucket_cap_mb, 1.0);
  EXPECT_EQ(runs[1].threads_per_process, 2);  // 8 cores / 3 processes per node
  EXPECT_EQ(runs[1].world_size(), 6);
}

TEST(Plan, ThreadsNeverZero) {
  EXPECT_EQ(plan_runs(job(), 0)[1].threads_per_process, 1);
}

TEST(Plan, RankEnvironmentFollowsTorchrun) {
  const auto run = plan_runs(job(), 2)[1];
  const auto ps = placements(run);
  ASSERT_EQ(ps.size(), 6u);
  EXPECT_EQ(ps[4].node_rank, 1);
  EXPECT_EQ(ps[4].local_rank, 1);
  EXPECT_EQ(ps[4].rank, 4);
  const auto env = rank_environment(run, ps[4], "10.0.0.1", 29500);
  EXPECT_EQ(env.at("MASTER_ADDR"), "10.0.0.1");
  EXPECT_EQ(env.at("MASTER_PORT"), "29500");
  EXPECT_EQ(env.at("WORLD_SIZE"), "6");
  EXPECT_EQ(env.at("RANK"), "4");
  EXPECT_EQ(env.at("LOCAL_RANK"), "1");
  EXPECT_EQ(env.at("LOCAL_WORLD_SIZE"), "3");
  EXPECT_EQ(env.at("NODE_RANK"), "1");
  EXPECT_EQ(env.at("GROUP_RANK"), "1");
  EXPECT_EQ(env.at("OMP_NUM_THREADS"), "1");
  EXPECT_EQ(env.at("OPENBLAS_NUM_THREADS"), "1");
  const RunConfig back = run_config_from_json(nlohmann::json::parse(env.at("TRAINBENCH_RUN_CONFIG")));
  EXPECT_EQ(back.label(), "2M/3G");
  EXPECT_EQ(back.mlp.hidden_sizes, run.mlp.hidden_sizes);
  EXPECT_DOUBLE_EQ(back.ddp.bucket_cap_mb, 1.0);
  EXPECT_EQ(back.job_name, "plan-test");
}

TEST(Plan, RankVariablesAreOneOrderedList) {
  const auto run = plan_runs(job(), 2)[1];
  const RankPlacement p = placements(run)[4];
  const std::vector<EnvVar> vars = rank_variables(run, p, "10.0.0.1", 29500);
  std::vector<std::string> names;
  for (const auto& v : vars) names.push_back(v.name);
  EXPECT_EQ(names, (std::vector<std::string>{"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK",
                                             "LOCAL_WORLD_SIZE", "NODE_RANK", "GROUP_RANK", "OMP_NUM_THREADS",
                                             "OPENBLAS_NUM_THREADS", "TRAINBENCH_ROLE", "TRAINBENCH_RUN_CONFIG"}));
  const auto env = rank_environment(run, p, "10.0.0.1", 29500);
  ASSERT_EQ(env.size(), vars.size());
  for (const auto& v : vars) EXPECT_EQ(env.at(v.name), v.value) << v.name;
  for (const auto& v : vars) EXPECT_EQ(is_per_process_variable(v.name), v.name == "RANK" || v.name == "LOCAL_RANK");
}

TEST(Plan, RunConfigFromJsonNamesMissingField) {
  auto j = to_json(plan_runs(job(), 2)[0]);
  j.erase("measureSteps");
  try {
    run_config_from_json(j);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("measureSteps"), std::string::npos) << e.what();
  }
}

TEST(Plan, TestOptionsAreWrittenOnlyWhenSetAndRoundTrip) {
  RunConfig c = plan_runs(job(), 2)[0];
  EXPECT_FALSE(to_json(c).contains("testOptions"));  // a normal run's config is unchanged
  c.test.loss_scale = 1024;
  c.test.no_dropout = true;
  c.test.sigkill_rank_at_first_measured_step = 3;
  c.test.allreduce_fault_rank = 1;
  const nlohmann::json j = to_json(c);
  EXPECT_EQ(j["testOptions"],
            nlohmann::json::parse(
                R"({"lossScale":1024.0,"noDropout":true,"sigkillRankAtFirstMeasuredStep":3,"allreduceFaultRank":1})"));
  const RunConfig back = run_config_from_json(j);
  EXPECT_EQ(back.test.loss_scale, 1024);
  EXPECT_TRUE(back.test.no_dropout);
  EXPECT_EQ(back.test.sigkill_rank_at_first_measured_step, 3);
  EXPECT_EQ(back.test.allreduce_fault_rank, 1);
  EXPECT_FALSE(run_config_from_json(to_json(plan_runs(job(), 2)[0])).test.any());
}

}  // namespace
}  // namespace trainbench
