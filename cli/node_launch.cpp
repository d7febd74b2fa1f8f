#include "cli/node_launch.hpp"

#include <algorithm>
#include <cstdlib>
#include <exception>

#include <nlohmann/json.hpp>

#include "cli/args.hpp"

namespace trainbench {
namespace {

std::string required_env(const EnvLookup& env, const std::string& name) {
  const std::optional<std::string> v = env(name);
  if (!v || v->empty()) throw UsageError("environment variable " + name + " is not set");
  return *v;
}

int int_env(const std::string& name, const std::string& value) {
  try {
    std::size_t used = 0;
    const int v = std::stoi(value, &used);
    if (used == value.size()) return v;
  } catch (const std::exception&) {
  }
  throw UsageError(name + " must be an integer, got \"" + value + "\"");
}

RunConfig run_from_env(const EnvLookup& env) {
  try {
    return run_config_from_json(nlohmann::json::parse(required_env(env, "TRAINBENCH_RUN_CONFIG")));
  } catch (const UsageError&) {
    throw;
  } catch (const std::exception& e) {
    throw UsageError(std::string("TRAINBENCH_RUN_CONFIG: ") + e.what());
  }
}

/// The node's rank, checked against the run with WORLD_SIZE and the node's process count.
int node_rank_from_env(const EnvLookup& env, const RunConfig& run) {
  const std::string node_var = env("NODE_RANK") ? "NODE_RANK" : "GROUP_RANK";
  const int node = int_env(node_var, required_env(env, node_var));
  const int world = int_env("WORLD_SIZE", required_env(env, "WORLD_SIZE"));
  const std::string nproc_var = env("NPROC_PER_NODE") ? "NPROC_PER_NODE" : "LOCAL_WORLD_SIZE";
  const int nproc = int_env(nproc_var, required_env(env, nproc_var));
  if (world != run.process_count()) {
    throw UsageError("WORLD_SIZE " + std::to_string(world) + " disagrees with the run config (" +
                     std::to_string(run.process_count()) +
                     (run.parameter_servers > 0 ? " processes: trainers and parameter servers)" : ")"));
  }
  if (nproc != run.devices_per_node) {
    throw UsageError(nproc_var + " " + std::to_string(nproc) + " disagrees with the run config (" +
                     std::to_string(run.devices_per_node) + " devices per node)");
  }
  if (node < 0 || node >= run.nodes) {
    throw UsageError(node_var + " must be in [0, " + std::to_string(run.nodes) + "), got " + std::to_string(node));
  }
  return node;
}

}  // namespace

std::optional<std::string> process_environment(const std::string& name) {
  const char* v = std::getenv(name.c_str());  // NOLINT(concurrency-mt-unsafe): single-threaded here
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

NodeLaunch node_launch_from_env(const EnvLookup& env) {
  NodeLaunch launch;
  launch.run = run_from_env(env);
  LocalExecutorOptions& opts = launch.options;
  opts.node_rank = node_rank_from_env(env, launch.run);
  opts.master_addr = required_env(env, "MASTER_ADDR");
  opts.master_port = int_env("MASTER_PORT", required_env(env, "MASTER_PORT"));
  opts.expect_result = false;
  // Ranks that finished their run serve their last metrics for TRAINBENCH_METRICS_LINGER_SECONDS,
  // through the SIGTERM of the run's cleanup: give them that long before SIGKILL. A rank still
  // training stops at the SIGTERM itself, so this does not slow down a cancelled run.
  if (env("TRAINBENCH_METRICS_LINGER_SECONDS")) {
    const int linger =
        int_env("TRAINBENCH_METRICS_LINGER_SECONDS", required_env(env, "TRAINBENCH_METRICS_LINGER_SECONDS"));
    opts.grace_seconds = std::max(opts.grace_seconds, linger + 2.0);
  }
  return launch;
}

}  // namespace trainbench
