// End-to-end behaviour of trainbench-worker: result/progress files, errors and exit codes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/results/run_result.hpp"
#include "worker/topology_probe.hpp"
#include "worker_launcher.hpp"

namespace {

using trainbench::GradientCompression;
using trainbench::RunConfig;
using trainbench::test::read_file;
using trainbench::test::run_process;
using trainbench::test::run_ranks;
using trainbench::test::TempDir;
using trainbench::test::worker_path;

RunConfig tiny(const std::string& paradigm, int world) {
  return trainbench::test::tiny_mlp_run("worker-run-test", paradigm, world);
}

TEST(WorkerRun, ResultAndProgressFiles) {
  TempDir dir;
  const auto outs = run_ranks(tiny("none", 1), {{"TRAINBENCH_RESULT_FILE", dir.file("r.json")},
                                                {"TRAINBENCH_PROGRESS_FILE", dir.file("p.json")}});
  ASSERT_EQ(outs[0].exit_code, 0) << outs[0].output;
  const auto r = trainbench::run_result_from_json(nlohmann::json::parse(read_file(dir.file("r.json"))));
  EXPECT_EQ(r.world_size, 1);
  EXPECT_EQ(r.ddp_bucket_count, 0);
  EXPECT_EQ(r.parameter_count, 16 * 32 + 32 + 32 * 4 + 4);
  ASSERT_EQ(r.ranks.size(), 1U);
  ASSERT_EQ(r.ranks[0].step_seconds.size(), 2U);
  for (const auto& rep : r.ranks[0].step_seconds) {
    ASSERT_EQ(rep.size(), 3U);
    for (double s : rep) EXPECT_GT(s, 0);
  }
  EXPECT_GT(r.ranks[0].peak_memory_bytes, 1 << 20);
  EXPECT_GT(r.ranks[0].final_loss, 0);
  EXPECT_EQ(r.environment.libtorch_version.rfind("2.", 0), 0U) << r.environment.libtorch_version;
  EXPECT_EQ(r.environment.trainbench_version, "0.1.0");
  EXPECT_EQ(r.environment.device, "cpu");
  EXPECT_FALSE(r.environment.device_name.empty());
  EXPECT_FALSE(r.environment.hostname.empty());
  EXPECT_NE(r.environment.blas.find("MKL"), std::string::npos) << r.environment.blas;  // the wheel's, in libtorch_cpu

  const auto p = nlohmann::json::parse(read_file(dir.file("p.json")));
  EXPECT_EQ(p.at("phase"), "measure");
  EXPECT_EQ(p.at("repeat"), 2);
  EXPECT_EQ(p.at("repeats"), 2);
  EXPECT_EQ(p.at("step"), 3);
  EXPECT_EQ(p.at("steps"), 3);
  EXPECT_GT(p.at("secPerIter").get<double>(), 0);
}

// The result's topology: every rank's reading gathered on rank 0 (two all-gathers), each rank on
// the host NODE_NAME names, with this process's CPU affinity (ranks inherit it), the NUMA nodes
// of those CPUs, no GPU; the host once, with the NUMA nodes sysfs lists.
TEST(WorkerRun, ResultSaysWhereEveryRankRan) {
  TempDir dir;
  const auto outs =
      run_ranks(tiny("ddp", 2), {{"TRAINBENCH_RESULT_FILE", dir.file("r.json")}, {"NODE_NAME", "node-t"}});
  for (const auto& o : outs) ASSERT_EQ(o.exit_code, 0) << o.output;
  const auto r = trainbench::run_result_from_json(nlohmann::json::parse(read_file(dir.file("r.json"))));
  ASSERT_TRUE(r.topology);
  const trainbench::HostTopology host = trainbench::worker::read_host_topology("node-t");
  ASSERT_EQ(r.topology->hosts.size(), 1U);
  EXPECT_EQ(to_json(r.topology->hosts[0]), to_json(host));
  ASSERT_EQ(r.topology->ranks.size(), 2U);
  for (int k = 0; k < 2; ++k) {
    const trainbench::RankLocation& at = r.topology->ranks[static_cast<std::size_t>(k)];
    EXPECT_EQ(at.rank, k);
    EXPECT_EQ(at.host, "node-t");
    EXPECT_EQ(at.cpus, trainbench::worker::affinity_cpus());
    EXPECT_EQ(at.numa_nodes, trainbench::numa_nodes_of(at.cpus, host.numa_nodes));
    EXPECT_EQ(at.gpu, -1);
  }
}

TEST(WorkerRun, ResultGoesToStdoutWithoutResultFile) {
  const auto outs = run_ranks(tiny("ddp", 1), {});
  ASSERT_EQ(outs[0].exit_code, 0) << outs[0].output;
  const auto r = trainbench::run_result_from_json(nlohmann::json::parse(outs[0].output));
  EXPECT_EQ(r.ddp_bucket_count, 1);
}

TEST(WorkerRun, MissingRankEnvironmentExits2) {
  const auto out = run_process({worker_path()}, {{"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "1"},
                                                 {"WORLD_SIZE", "2"}});
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("trainbench-worker rank ?: "), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("RANK"), std::string::npos) << out.output;
}

TEST(WorkerRun, GarbageWorldSizeExits2) {
  const auto out = run_process({worker_path()}, {{"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "1"},
                                                 {"WORLD_SIZE", "two"}, {"RANK", "0"}});
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("WORLD_SIZE must be an integer"), std::string::npos) << out.output;
}

TEST(WorkerRun, BadConfigExits2) {
  RunConfig c = tiny("ddp", 2);
  c.model = "alexnet";
  const auto outs = run_ranks(c, {});
  for (const auto& o : outs) {
    EXPECT_EQ(o.exit_code, 2) << o.output;
    EXPECT_NE(o.output.find("alexnet"), std::string::npos) << o.output;
  }
  const auto no_config = run_process({worker_path()}, {{"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "1"},
                                                       {"WORLD_SIZE", "1"}, {"RANK", "0"},
                                                       {"TRAINBENCH_RUN_CONFIG", "{not json"}});
  EXPECT_EQ(no_config.exit_code, 2) << no_config.output;
  EXPECT_NE(no_config.output.find("TRAINBENCH_RUN_CONFIG"), std::string::npos) << no_config.output;
}

TEST(WorkerRun, WorldSizeMismatchExits2) {
  RunConfig c = tiny("ddp", 2);
  auto env = trainbench::rank_environment(c, {0, 0, 0}, "127.0.0.1", 1);
  env["WORLD_SIZE"] = "3";
  const auto out = run_process({worker_path()}, env);
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("world size 3"), std::string::npos) << out.output;
}

TEST(WorkerRun, NonFiniteLossExits1) {
  RunConfig c = tiny("none", 1);
  c.learning_rate = 1e30;
  const auto outs = run_ranks(c, {});
  EXPECT_EQ(outs[0].exit_code, 1) << outs[0].output;
  EXPECT_NE(outs[0].output.find("trainbench-worker rank 0: loss is not finite"), std::string::npos)
      << outs[0].output;
}

// gloo in libtorch 1.13 had no bfloat16 all-reduce (the worker refused naming the field); the
// pinned libtorch 2.15's has.
TEST(WorkerRun, Bf16CompressionWorksOnGloo) {
  RunConfig c = tiny("ddp", 2);
  c.ddp.gradient_compression = GradientCompression::kBf16;
  const auto outs = run_ranks(c, {});
  for (const auto& o : outs) EXPECT_EQ(o.exit_code, 0) << o.output;
}

TEST(WorkerRun, ResNetTrainsAtSmallImageSizeWithTwoRanks) {
  RunConfig c = tiny("ddp", 2);
  c.model = "resnet18";
  c.image_size = 32;
  c.batch_size_per_device = 2;
  c.warmup_steps = 0;
  c.measure_steps = 2;
  c.repeats = 1;
  TempDir dir;
  const auto outs = run_ranks(c, {{"TRAINBENCH_RESULT_FILE", dir.file("r.json")}});
  for (const auto& o : outs) ASSERT_EQ(o.exit_code, 0) << o.output;
  const auto r = trainbench::run_result_from_json(nlohmann::json::parse(read_file(dir.file("r.json"))));
  EXPECT_EQ(r.parameter_count, 11689512);
  EXPECT_GT(r.ddp_bucket_count, 0);
  ASSERT_EQ(r.ranks.size(), 2U);
  EXPECT_EQ(r.ranks[1].rank, 1);
}

}  // namespace
