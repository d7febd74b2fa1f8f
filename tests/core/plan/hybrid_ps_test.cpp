// paradigm hybrid-ps in core: the spec's fields (spec.benchmark.hybridPs.parameterServers and the
// sweep entries' parameterServers), the plan (trainers, then parameter servers: placements, the
// torchrun environment, threads) and the RunResult's "servers". The malformed cases live in
// tests/data/malformed-specs.yaml with the others.
#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>

#include "core/plan/run_config.hpp"
#include "core/report/report.hpp"
#include "core/results/run_result.hpp"
#include "core/spec/spec.hpp"

namespace trainbench {
namespace {

const char* kHybridJob = R"(apiVersion: trainbench.dev/v1alpha1
kind: BenchmarkJob
metadata: {name: ddp-rpc}
spec:
  benchmark:
    model: hybrid-embedding
    paradigm: hybrid-ps
    batchSizePerDevice: 16
    hybridEmbedding: {numTables: 4, numEmbeddings: 100, embeddingDim: 8}
    hybridPs: {parameterServers: 3}
  sweep:
    - {nodes: 1, devicesPerNode: 1, paradigm: none}
    - {nodes: 1, devicesPerNode: 2}
    - {nodes: 2, devicesPerNode: 4, parameterServers: 8}
)";

TEST(HybridPsSpec, ParsesServersAndOverrides) {
  const BenchmarkJob job = parse_benchmark_job(kHybridJob);
  EXPECT_EQ(job.benchmark.paradigm, Paradigm::kHybridPs);
  EXPECT_EQ(job.benchmark.hybrid_ps.parameter_servers, 3);
  ASSERT_EQ(job.sweep.size(), 3u);
  EXPECT_FALSE(job.sweep[1].parameter_servers.has_value());
  EXPECT_EQ(job.sweep[2].parameter_servers.value_or(0), 8);
}

TEST(HybridPsSpec, DefaultsToTheSeedsEightServers) {
  const BenchmarkJob job = parse_benchmark_job(R"(apiVersion: trainbench.dev/v1alpha1
kind: BenchmarkJob
metadata: {name: ddp-rpc}
spec:
  benchmark: {model: hybrid-embedding, paradigm: hybrid-ps}
  sweep: [{nodes: 1, devicesPerNode: 8}]
)");
  EXPECT_EQ(job.benchmark.hybrid_ps.parameter_servers, 8);
  EXPECT_EQ(plan_runs(job, 16)[0].parameter_servers, 8);
  EXPECT_EQ(plan_runs(job, 16)[0].optimizer, Optimizer::kSgd);
}

TEST(HybridPsSpec, ToJsonRoundTrips) {
  const BenchmarkJob job = parse_benchmark_job(kHybridJob);
  const nlohmann::json j = to_json(job);
  EXPECT_EQ(j.at("spec").at("benchmark").at("hybridPs").at("parameterServers"), 3);
  EXPECT_FALSE(j.at("spec").at("sweep")[1].contains("parameterServers"));
  EXPECT_EQ(j.at("spec").at("sweep")[2].at("parameterServers"), 8);
  EXPECT_EQ(to_json(parse_benchmark_job(j.dump())), j) << j.dump(2);
  // Every other job carries the default too (so the CRD's default agrees with core's).
  EXPECT_EQ(to_json(parse_benchmark_job(R"(apiVersion: trainbench.dev/v1alpha1
kind: BenchmarkJob
metadata: {name: plain}
spec: {benchmark: {model: mlp}, sweep: [{}]}
)"))
                .at("spec")
                .at("benchmark")
                .at("hybridPs")
                .at("parameterServers"),
            8);
}

TEST(HybridPsPlan, ServersPerRunAndThreads) {
  const auto runs = plan_runs(parse_benchmark_job(kHybridJob), 12);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].parameter_servers, 0);  // paradigm none
  EXPECT_EQ(runs[0].process_count(), 1);
  EXPECT_EQ(runs[0].threads_per_process, 12);
  EXPECT_EQ(runs[1].paradigm, Paradigm::kHybridPs);
  EXPECT_EQ(runs[1].label(), "1M/2G hybrid-ps");
  EXPECT_EQ(runs[1].world_size(), 2);
  EXPECT_EQ(runs[1].parameter_servers, 3);
  EXPECT_EQ(runs[1].process_count(), 5);
  EXPECT_EQ(runs[1].threads_per_process, 2);  // 12 cores / (2 trainers + 3 servers) on node 0
  EXPECT_EQ(runs[2].parameter_servers, 8);    // the entry's override
  EXPECT_EQ(runs[2].world_size(), 8);
  EXPECT_EQ(runs[2].process_count(), 16);
  EXPECT_EQ(runs[2].threads_per_process, 1);
  EXPECT_EQ(runs[1].devices_label(), "2 CPUs");  // devices = trainers
}

TEST(HybridPsPlan, PlacementsAreTrainersThenServers) {
  const RunConfig run = plan_runs(parse_benchmark_job(kHybridJob), 12)[2];  // 2 nodes x 4 + 8 servers
  const auto ps = placements(run);
  ASSERT_EQ(ps.size(), 16u);
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(ps[static_cast<std::size_t>(r)].rank, r);
    EXPECT_EQ(ps[static_cast<std::size_t>(r)].role, Role::kTrainer);
  }
  EXPECT_EQ(ps[5].node_rank, 1);
  EXPECT_EQ(ps[5].local_rank, 1);
  for (int j = 0; j < 8; ++j) {
    const RankPlacement& p = ps[static_cast<std::size_t>(8 + j)];
    EXPECT_EQ(p.rank, 8 + j);
    EXPECT_EQ(p.node_rank, 0);
    EXPECT_EQ(p.local_rank, 4 + j);
    EXPECT_EQ(p.role, Role::kParameterServer);
  }
  EXPECT_EQ(processes_on_node(run, 0), 12);
  EXPECT_EQ(processes_on_node(run, 1), 4);

  const auto server = rank_environment(run, ps[9], "127.0.0.1", 29500);
  EXPECT_EQ(server.at("WORLD_SIZE"), "16");  // the c10d world: trainers + servers
  EXPECT_EQ(server.at("RANK"), "9");
  EXPECT_EQ(server.at("LOCAL_RANK"), "5");
  EXPECT_EQ(server.at("LOCAL_WORLD_SIZE"), "12");
  EXPECT_EQ(server.at("NODE_RANK"), "0");
  EXPECT_EQ(server.at("TRAINBENCH_ROLE"), "parameter-server");
  const auto trainer = rank_environment(run, ps[5], "127.0.0.1", 29500);
  EXPECT_EQ(trainer.at("WORLD_SIZE"), "16");
  EXPECT_EQ(trainer.at("RANK"), "5");
  EXPECT_EQ(trainer.at("LOCAL_WORLD_SIZE"), "4");
  EXPECT_EQ(trainer.at("TRAINBENCH_ROLE"), "trainer");
  const RunConfig back = run_config_from_json(nlohmann::json::parse(server.at("TRAINBENCH_RUN_CONFIG")));
  EXPECT_EQ(back.parameter_servers, 8);
  EXPECT_EQ(back.process_count(), 16);
}

TEST(HybridPsPlan, OtherParadigmsKeepTheirEnvironment) {
  const RunConfig run = plan_runs(parse_benchmark_job(kHybridJob), 12)[0];
  const auto ps = placements(run);
  ASSERT_EQ(ps.size(), 1u);
  const auto env = rank_environment(run, ps[0], "127.0.0.1", 29500);
  EXPECT_EQ(env.at("WORLD_SIZE"), "1");
  EXPECT_EQ(env.at("LOCAL_WORLD_SIZE"), "1");
  EXPECT_EQ(env.at("TRAINBENCH_ROLE"), "trainer");
  EXPECT_EQ(to_json(run).at("parameterServers"), 0);
}

TEST(HybridPsPlan, RunConfigChecksParameterServers) {
  const auto runs = plan_runs(parse_benchmark_job(kHybridJob), 12);
  auto j = to_json(runs[1]);
  j["parameterServers"] = 0;
  EXPECT_THROW(run_config_from_json(j), std::runtime_error);
  j = to_json(runs[0]);
  j["parameterServers"] = 2;  // paradigm none
  EXPECT_THROW(run_config_from_json(j), std::runtime_error);
  j = to_json(runs[0]);
  j.erase("parameterServers");  // a config from before hybrid-ps
  EXPECT_EQ(run_config_from_json(j).parameter_servers, 0);
}

RunResult hybrid_result() {
  RunResult r;
  r.world_size = 2;
  r.parameter_count = 100;
  for (int k = 0; k < 2; ++k) {
    RankResult rk;
    rk.rank = k;
    rk.step_seconds = {{0.1, 0.2}};
    r.ranks.push_back(rk);
  }
  for (int j = 0; j < 2; ++j) {
    ServerResult s;
    s.rank = 2 + j;
    s.server = j;
    s.rows = 40;
    s.lookups = 4;
    s.lookup_service_seconds = {{0.001, 0.002, 0.003, 0.004}};
    s.lookup_queue_seconds = {{0.0, 0.01, 0.0, 0.02}};
    s.update_seconds = {{0.005, 0.006}};
    s.peak_memory_bytes = 1 << 20;
    r.servers.push_back(s);
  }
  return r;
}

TEST(HybridPsResult, JsonRoundTrips) {
  const RunResult r = hybrid_result();
  const nlohmann::json j = to_json(r);
  ASSERT_TRUE(j.contains("servers"));
  const auto& s = j.at("servers")[1];
  EXPECT_EQ(s.at("rank"), 3);
  EXPECT_EQ(s.at("server"), 1);
  EXPECT_EQ(s.at("rows"), 40);
  EXPECT_EQ(s.at("lookups"), 4);
  EXPECT_EQ(s.at("lookupServiceSeconds").size(), 1u);
  EXPECT_EQ(s.at("lookupQueueSeconds")[0].size(), 4u);
  EXPECT_EQ(s.at("updateSeconds")[0].size(), 2u);
  EXPECT_EQ(s.at("peakMemoryBytes"), 1 << 20);
  const RunResult back = run_result_from_json(j);
  ASSERT_EQ(back.servers.size(), 2u);
  EXPECT_EQ(to_json(back), j);
  // Other paradigms' results have no "servers".
  RunResult plain = r;
  plain.servers.clear();
  EXPECT_FALSE(to_json(plain).contains("servers"));
  EXPECT_TRUE(run_result_from_json(to_json(plain)).servers.empty());
}

void expect_error(nlohmann::json j, const std::string& fragment) {
  try {
    run_result_from_json(j);
    ADD_FAILURE() << "accepted: " << j.dump();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(HybridPsResult, BadServerFieldsAreNamed) {
  const nlohmann::json good = to_json(hybrid_result());
  nlohmann::json j = good;
  j["servers"][1].erase("rows");
  expect_error(j, "servers[1].rows");
  j = good;
  j["servers"][0]["lookupServiceSeconds"][0][2] = -1;
  expect_error(j, "servers[0].lookupServiceSeconds[0][2]: must be >= 0");
  j = good;
  j["servers"][0]["lookupQueueSeconds"][0].erase(0);
  expect_error(j, "servers[0].lookupQueueSeconds[0]");
  j = good;
  j["servers"][1]["lookups"] = 5;
  expect_error(j, "servers[1].lookups");
  j = good;
  j["servers"][1]["server"] = 0;
  expect_error(j, "servers[1].server");
  j = good;
  j["servers"][0]["updateSeconds"] = nlohmann::json::array();
  expect_error(j, "servers[0].updateSeconds");
  j = good;
  j["servers"] = "none";
  expect_error(j, "servers");
}

TEST(HybridPsResult, ReportOfAHybridRunCountsTheTrainers) {
  BenchmarkJob job = parse_benchmark_job(kHybridJob);
  const auto runs = plan_runs(job, 12);
  RunResult r = hybrid_result();
  r.run_index = 1;
  RunConfig run = runs[1];
  run.parameter_servers = static_cast<int>(r.servers.size());  // the fake result's 2 servers
  const RunReport report = summarize_run(run, r);
  EXPECT_EQ(report.world_size, 2);
  EXPECT_EQ(report.ranks.size(), 2u);
  // ex/sec: the trainers' global batch per step
  EXPECT_NEAR(report.examples_per_sec.p50 * report.sec_per_iter.p50, 2.0 * 16, 1e-9);
}

}  // namespace
}  // namespace trainbench

namespace trainbench {
namespace {

TEST(HybridPsPlan, ServersInTheirOwnPodsLeaveNodeZeroToTheTrainers) {
  const BenchmarkJob job = parse_benchmark_job(kHybridJob);
  // Run 1: 1 node x 2 trainers + 3 servers. Locally node 0 hosts 5 processes: 12 cores -> 2 threads.
  const RunConfig local = plan_runs(job, 12).at(1);
  EXPECT_FALSE(local.parameter_servers_own_pods);
  EXPECT_EQ(local.threads_per_process, 2);
  EXPECT_EQ(processes_on_node(local, 0), 5);
  EXPECT_FALSE(to_json(local).contains("parameterServersOwnPods"));
  // The operator: each server has a pod, the trainer pod's 12 cores go to its 2 trainers.
  const RunConfig pods = plan_runs(job, 12, ServerPlacement::OwnPods).at(1);
  EXPECT_TRUE(pods.parameter_servers_own_pods);
  EXPECT_EQ(pods.threads_per_process, 6);
  EXPECT_EQ(processes_on_node(pods, 0), 2);
  const auto env = rank_environment(pods, placements(pods).at(0), "m", 1);
  EXPECT_EQ(env.at("LOCAL_WORLD_SIZE"), "2");
  EXPECT_EQ(env.at("WORLD_SIZE"), "5");
  const RunConfig back = run_config_from_json(to_json(pods));
  EXPECT_TRUE(back.parameter_servers_own_pods);
  // Not a hybrid-ps run: nothing changes.
  const RunConfig none = plan_runs(job, 12, ServerPlacement::OwnPods).at(0);
  EXPECT_FALSE(none.parameter_servers_own_pods);
}

// torchrun's LOCAL_WORLD_SIZE counts the processes of the rank's host: a parameter server in a
// pod of its own is alone there (the operator's pods have always said so).
TEST(HybridPsPlan, AServerInItsOwnPodIsAloneThere) {
  const RunConfig pods = plan_runs(parse_benchmark_job(kHybridJob), 12, ServerPlacement::OwnPods).at(1);
  const auto ps = placements(pods);  // 2 trainers, then 3 servers
  ASSERT_EQ(ps.size(), 5u);
  for (std::size_t j = 2; j < 5; ++j) {
    EXPECT_EQ(ps[j].local_rank, 0);
    EXPECT_EQ(ps[j].node_rank, 0);
    EXPECT_EQ(local_world_size(pods, ps[j]), 1);
  }
  const auto server = rank_environment(pods, ps[3], "m", 1);
  const std::map<std::string, std::string> expected = {
      {"RANK", "3"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "1"}, {"NODE_RANK", "0"}, {"WORLD_SIZE", "5"}};
  for (const auto& [name, value] : expected) EXPECT_EQ(server.at(name), value) << name;
  EXPECT_EQ(local_world_size(pods, ps[1]), 2);
}

}  // namespace
}  // namespace trainbench
