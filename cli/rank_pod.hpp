#pragma once

// Which pod and container hold a rank of a BenchmarkJob's run on Kubernetes (`kubectl trainbench
// logs`): the operator's deterministic names (operator/controller/naming.hpp) and core's rank
// placement (placements() in core/plan/run_config.hpp), planned as the operator plans them.

#include <optional>
#include <string>

#include "core/api/job_status.hpp"
#include "core/plan/run_config.hpp"

namespace trainbench::cli {

struct RankPod {
  std::string pod;
  std::string container;
  int first_rank = 0;  ///< the ranks whose processes the pod runs (-1..-1: the master pod)
  int last_rank = 0;
};

/// The pod of rank `rank` in attempt `attempt` of `run` (planned with ServerPlacement::OwnPods):
/// trainer ranks live devicesPerNode to a trainer pod, node by node; paradigm hybrid-ps's
/// parameter servers (ranks world_size() ..) one to a pod. Throws std::out_of_range naming the
/// run's ranks when `rank` is not one of them.
RankPod rank_pod(const RunConfig& run, int attempt, int rank);

/// The master pod of an attempt (rendezvous store, hang watch, result hand-over).
RankPod master_pod(const RunConfig& run, int attempt);

/// The run whose pods `logs` reads without --run: the one starting or running, else the last
/// one that got past Pending; nullopt when no run has started.
std::optional<int> default_log_run(const BenchmarkJobStatus& status);

}  // namespace trainbench::cli
