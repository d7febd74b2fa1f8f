// The operator's data path without Kubernetes: a master (trainbench-worker --master) serves the
// run's store, two `trainbench node-launch` processes (the trainer pods' command) start 2 ranks
// each against it, rank 0 hands the result to the master, which summarises it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/local_executor.hpp"
#include "cli_test_util.hpp"
#include "core/plan/run_config.hpp"

namespace trainbench::test {
namespace {

RunConfig two_by_two() {
  RunConfig c;
  c.job_name = "nl";
  c.nodes = 2;
  c.devices_per_node = 2;
  c.paradigm = Paradigm::kDdp;
  c.model = "mlp";
  c.batch_size_per_device = 8;
  c.warmup_steps = 1;
  c.measure_steps = 4;
  c.repeats = 2;
  c.threads_per_process = 1;
  c.mlp = {32, {32}, 10};
  c.collective_timeout_seconds = 60;
  return c;
}

EnvChanges node_env(const RunConfig& c, int port, int node) {
  return {{"TRAINBENCH_RUN_CONFIG", to_json(c).dump()},
          {"MASTER_ADDR", "127.0.0.1"},
          {"MASTER_PORT", std::to_string(port)},
          {"WORLD_SIZE", std::to_string(c.world_size())},
          {"NPROC_PER_NODE", std::to_string(c.devices_per_node)},
          {"NODE_RANK", std::to_string(node)},
          {"TRAINBENCH_EXTERNAL_STORE", "1"},
          {"TRAINBENCH_WORKER", real_worker_exe()}};
}

TEST(NodeLaunch, MasterCollectsTheResultOfTwoNodes) {
  if (real_worker_exe().empty()) GTEST_SKIP() << "trainbench-worker not built";
  TempDir dir;
  const RunConfig c = two_by_two();
  const int port = pick_free_port();
  EnvChanges menv = node_env(c, port, 0);
  menv["TRAINBENCH_ATTEMPT"] = "2";
  menv["TRAINBENCH_RESULT_FILE"] = dir.file("payload.json");
  const Spawned master = spawn(real_worker_exe(), {"--master"}, menv, dir.path());
  const Spawned n1 = spawn(trainbench_exe(), {"node-launch"}, node_env(c, port, 1), dir.path());
  const Spawned n0 = spawn(trainbench_exe(), {"node-launch"}, node_env(c, port, 0), dir.path());
  EXPECT_EQ(wait_exit(n0.pid, 90, output_grows(n0)), 0) << read_file(n0.err_path);
  EXPECT_EQ(wait_exit(n1.pid, 90, output_grows(n1)), 0) << read_file(n1.err_path);
  ASSERT_EQ(wait_exit(master.pid, 90, output_grows(master)), 0) << read_file(master.err_path);
  const auto payload = nlohmann::json::parse(read_file(dir.file("payload.json")));
  EXPECT_EQ(payload["attempt"], 2);
  EXPECT_EQ(payload["run"]["label"], "2M/2G");
  EXPECT_EQ(payload["run"]["phase"], "Succeeded");
  ASSERT_EQ(payload["run"]["ranks"].size(), 4u);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(payload["run"]["ranks"][r]["rank"], r);
    EXPECT_EQ(payload["run"]["ranks"][r]["nodeRank"], r / 2);
  }
  EXPECT_GT(payload["run"]["secPerIter"]["p50"].get<double>(), 0);
  EXPECT_EQ(payload["environment"]["backend"], "gloo");
}

TEST(NodeLaunch, FailedRankFailsTheNodeWithATerminationMessage) {
  TempDir dir;
  write_file(dir.file("bad-worker"), "#!/bin/sh\n[ \"$RANK\" = 1 ] && { echo 'trainbench-worker rank 1: boom' >&2; exit 1; }\nsleep 30\n", true);
  EnvChanges env = node_env(two_by_two(), 1, 0);
  env["TRAINBENCH_WORKER"] = dir.file("bad-worker");
  env["TRAINBENCH_TERMINATION_LOG"] = dir.file("termination-log");
  const Spawned n0 = spawn(trainbench_exe(), {"node-launch"}, env, dir.path());
  EXPECT_EQ(wait_exit(n0.pid, 30), 1) << read_file(n0.err_path);
  EXPECT_NE(read_file(dir.file("termination-log")).find("rank 1"), std::string::npos) << read_file(n0.err_path);
}

TEST(NodeLaunch, BadEnvironmentNamesTheVariable) {
  TempDir dir;
  EnvChanges env = node_env(two_by_two(), 1, 0);
  env["NODE_RANK"] = "two";
  const Spawned n0 = spawn(trainbench_exe(), {"node-launch"}, env, dir.path());
  EXPECT_EQ(wait_exit(n0.pid, 30), 2);
  EXPECT_NE(read_file(n0.err_path).find("NODE_RANK must be an integer"), std::string::npos) << read_file(n0.err_path);
}

}  // namespace
}  // namespace trainbench::test
