#include "cli/rank_pod.hpp"

#include <stdexcept>

#include "operator/controller/naming.hpp"

namespace trainbench::cli {

RankPod rank_pod(const RunConfig& run, int attempt, int rank) {
  const int processes = run.process_count();
  if (rank < 0 || rank >= processes) {
    throw std::out_of_range("run " + std::to_string(run.index) + " (" + run.devices_label() + " -- " + run.label() +
                            ") has ranks 0.." + std::to_string(processes - 1) + ", not " + std::to_string(rank));
  }
  const RankPlacement p = placements(run).at(static_cast<std::size_t>(rank));
  if (p.role == Role::kParameterServer) {
    const int server = rank - run.world_size();
    return {op::parameter_server_pod_name(run.job_name, run.index, attempt, server), op::kParameterServerContainer,
            rank, rank};
  }
  const int first = p.node_rank * run.devices_per_node;
  if (run.program) {  // one container per rank (docs/workloads.md): its log is the rank's alone
    return {op::trainer_pod_name(run.job_name, run.index, attempt, p.node_rank),
            op::program_container_name(p.local_rank), rank, rank};
  }
  return {op::trainer_pod_name(run.job_name, run.index, attempt, p.node_rank), op::kTrainerContainer, first,
          first + run.devices_per_node - 1};
}

RankPod master_pod(const RunConfig& run, int attempt) {
  return {op::master_pod_name(run.job_name, run.index, attempt), op::kMasterContainer, -1, -1};
}

std::optional<int> default_log_run(const BenchmarkJobStatus& status) {
  std::optional<int> last_started;
  for (const auto& r : status.runs) {
    if (r.phase == RunPhase::kStarting || r.phase == RunPhase::kRunning || r.phase == RunPhase::kRestarting) {
      return r.index;
    }
    if (r.phase != RunPhase::kPending && (!last_started || r.index > *last_started)) last_started = r.index;
  }
  return last_started;
}

}  // namespace trainbench::cli
