#pragma once

#include <functional>
#include <optional>
#include <string>

namespace trainbench::worker {

/// Where this process sits in the job, as told by the launcher's environment.
struct RankEnv {
  std::string master_addr;
  int master_port = 0;
  int world_size = 1;
  int rank = 0;
  int local_rank = 0;
  int local_world_size = 1;
  int node_rank = 0;
  std::string source;  ///< "torchrun" or "slurm": which variables were used
};

/// Returns the value of an environment variable, or nullopt when it is unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

/// Parses the rank environment.
///
/// torchrun (used when RANK or WORLD_SIZE is set): MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE
/// are required; LOCAL_RANK (default RANK), LOCAL_WORLD_SIZE (default WORLD_SIZE) and
/// NODE_RANK (alias GROUP_RANK; default 0) are optional.
/// Slurm (otherwise, when SLURM_PROCID is set): SLURM_PROCID, SLURM_NTASKS are required;
/// SLURM_LOCALID (default 0), SLURM_NODEID (default 0) and SLURM_NTASKS_PER_NODE (leading
/// integer of e.g. "4(x2)"; default SLURM_NTASKS) are optional; MASTER_ADDR and MASTER_PORT
/// are still required.
///
/// Throws ConfigError naming the variable that is missing, not an integer, or out of range.
RankEnv parse_rank_env(const EnvLookup& lookup);

/// parse_rank_env over the process environment (getenv).
RankEnv rank_env_from_process();

/// Lookup over the process environment.
std::optional<std::string> process_env(const std::string& name);

/// Parses a whole string as a base-10 int (surrounding spaces allowed); nullopt otherwise.
std::optional<int> parse_int(const std::string& text);

}  // namespace trainbench::worker
