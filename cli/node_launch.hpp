#pragma once

#include <functional>
#include <optional>
#include <string>

#include "cli/local_executor.hpp"
#include "core/plan/run_config.hpp"

namespace trainbench {

/// The value of an environment variable, nullopt when it is not set.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

/// The process environment (getenv).
std::optional<std::string> process_environment(const std::string& name);

/// What `trainbench node-launch` runs: one node's trainers of a run.
struct NodeLaunch {
  RunConfig run;
  /// node_rank, master_addr, master_port, expect_result (false: rank 0 hands the result to the
  /// master pod) and grace_seconds; worker and runs_dir are the caller's.
  LocalExecutorOptions options;
};

/// Reads a node-launch from its environment (the operator's trainer pod): TRAINBENCH_RUN_CONFIG,
/// NODE_RANK (else GROUP_RANK), WORLD_SIZE and NPROC_PER_NODE (else LOCAL_WORLD_SIZE), which must
/// agree with the run config, MASTER_ADDR, MASTER_PORT, and TRAINBENCH_METRICS_LINGER_SECONDS
/// when set. Throws UsageError naming the variable that is missing, malformed or disagrees.
NodeLaunch node_launch_from_env(const EnvLookup& env);

}  // namespace trainbench
