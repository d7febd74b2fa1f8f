// trainbench node-launch's reading of its environment (cli/node_launch.hpp), in process; the
// e2e tests (node_launch_e2e_test.cpp) run the real binary with the real worker.
#include <map>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "cli/args.hpp"
#include "cli/node_launch.hpp"
#include "core/plan/run_config.hpp"

namespace trainbench {
namespace {

using Vars = std::map<std::string, std::string>;

/// 3 nodes of 2 ranks.
RunConfig three_nodes() {
  RunConfig c;
  c.nodes = 3;
  c.devices_per_node = 2;
  c.paradigm = Paradigm::kDdp;
  return c;
}

Vars pod_vars() {
  return {{"TRAINBENCH_RUN_CONFIG", to_json(three_nodes()).dump()},
          {"NODE_RANK", "1"},
          {"WORLD_SIZE", "6"},
          {"NPROC_PER_NODE", "2"},
          {"MASTER_ADDR", "nl-r0.ns.svc"},
          {"MASTER_PORT", "29500"}};
}

NodeLaunch read(const Vars& vars) {
  return node_launch_from_env([&vars](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  });
}

std::string usage_error(const Vars& vars) {
  try {
    read(vars);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}

TEST(NodeLaunchEnv, ReadsTheNodeAndTheMaster) {
  const NodeLaunch l = read(pod_vars());
  EXPECT_EQ(l.run.world_size(), 6);
  EXPECT_EQ(l.options.node_rank, 1);
  EXPECT_EQ(l.options.master_addr, "nl-r0.ns.svc");
  EXPECT_EQ(l.options.master_port, 29500);
  EXPECT_FALSE(l.options.expect_result);
  EXPECT_DOUBLE_EQ(l.options.grace_seconds, LocalExecutorOptions{}.grace_seconds);
}

TEST(NodeLaunchEnv, FallsBackToTorchrunsOtherNames) {
  Vars v = pod_vars();
  v.erase("NODE_RANK");
  v.erase("NPROC_PER_NODE");
  v["GROUP_RANK"] = "0";
  v["LOCAL_WORLD_SIZE"] = "2";
  EXPECT_EQ(read(v).options.node_rank, 0);
}

TEST(NodeLaunchEnv, MetricsLingerLengthensTheGrace) {
  Vars v = pod_vars();
  v["TRAINBENCH_METRICS_LINGER_SECONDS"] = "20";
  EXPECT_DOUBLE_EQ(read(v).options.grace_seconds, 22.0);
}

TEST(NodeLaunchEnv, NamesTheVariableThatIsWrong) {
  struct Case {
    std::string name;
    std::optional<std::string> value;  ///< nullopt: unset
    std::string error;
  };
  const Case cases[] = {
      {"NODE_RANK", "two", "NODE_RANK must be an integer, got \"two\""},
      {"WORLD_SIZE", "5", "WORLD_SIZE 5 disagrees with the run config (6)"},
      {"NPROC_PER_NODE", "3", "NPROC_PER_NODE 3 disagrees with the run config (2 devices per node)"},
      {"NODE_RANK", "3", "NODE_RANK must be in [0, 3), got 3"},
      {"MASTER_ADDR", std::nullopt, "environment variable MASTER_ADDR is not set"},
      {"TRAINBENCH_RUN_CONFIG", "{}", "TRAINBENCH_RUN_CONFIG: jobName: is required"},
  };
  for (const Case& c : cases) {
    Vars v = pod_vars();
    if (c.value) {
      v[c.name] = *c.value;
    } else {
      v.erase(c.name);
    }
    EXPECT_EQ(usage_error(v), c.error) << c.name;
  }
}

}  // namespace
}  // namespace trainbench
