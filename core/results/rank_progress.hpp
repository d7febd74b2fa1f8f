#pragma once
// One rank's progress record: where the rank stands (step, phase, its current collective) and
// since when, as its heartbeat publishes it about once a second (worker/rank_progress.hpp) to a
// file beside the run (trainbench run) or to the run's store (the operator's master pod). The
// run's watcher reads every rank's record and names the stuck ones (core/analysis/hang.hpp).

#include <array>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/spec/vocabulary.hpp"

namespace trainbench {

/// Where a rank stands. The waiting phases (is_waiting) wait for another rank; the others
/// compute (or are stuck computing).
enum class ProgressPhase {
  kStarting,   ///< rank setup and rendezvous
  kForward,    ///< a step's forward pass (also where a step starts: loading its batch)
  kBackward,   ///< backward pass (DDP launches bucket all-reduces meanwhile)
  kAllReduce,  ///< waiting for an all-reduce (DDP: bucket k of n)
  kAllGather,  ///< waiting for an all-gather (ZeRO's parameters)
  kBroadcast,  ///< waiting for a broadcast (DDP's buffers)
  kOptimizer,  ///< the optimizer's step
  kSend,       ///< waiting for a send to `peer` to complete (pipeline)
  kRecv,       ///< waiting for a receive from `peer` (pipeline)
  kPsRequest,  ///< a trainer waiting for parameter server `peer`'s lookup answer
  kPsServing,  ///< a parameter server serving a lookup or applying an update
  kPsWaiting,  ///< a parameter server waiting for the trainers' requests
  kGather,     ///< the end of the run: gathering the ranks' records
  kDone,       ///< finished; lingering or exiting
};
template <>
struct Spellings<ProgressPhase> {
  static constexpr std::array<Spelling<ProgressPhase>, 14> table{{{ProgressPhase::kStarting, "starting"},
                                                                  {ProgressPhase::kForward, "forward"},
                                                                  {ProgressPhase::kBackward, "backward"},
                                                                  {ProgressPhase::kAllReduce, "all-reduce"},
                                                                  {ProgressPhase::kAllGather, "all-gather"},
                                                                  {ProgressPhase::kBroadcast, "broadcast"},
                                                                  {ProgressPhase::kOptimizer, "optimizer"},
                                                                  {ProgressPhase::kSend, "send"},
                                                                  {ProgressPhase::kRecv, "recv"},
                                                                  {ProgressPhase::kPsRequest, "ps-request"},
                                                                  {ProgressPhase::kPsServing, "ps-serving"},
                                                                  {ProgressPhase::kPsWaiting, "ps-waiting"},
                                                                  {ProgressPhase::kGather, "gather"},
                                                                  {ProgressPhase::kDone, "done"}}};
};

/// True for the phases that wait on another rank (a collective, a peer, requests, the end).
bool is_waiting(ProgressPhase p);
/// True for the phases of a collective every member joins (their sequence numbers line up).
bool is_collective(ProgressPhase p);

/// One rank's record ("trainbench/progress/<rank>" in the store, rank-R.progress.json locally).
struct RankProgressRecord {
  int rank = 0;
  Role role = Role::kTrainer;
  int node_rank = 0;
  int local_rank = 0;
  std::string pod;   ///< POD_NAME ("" outside Kubernetes)
  std::string node;  ///< NODE_NAME ("" when the pod spec does not pass it)
  int pid = 0;
  std::int64_t step = -1;  ///< 0-based loop step (warm-up included); -1 before the first
  ProgressPhase phase = ProgressPhase::kStarting;
  std::uint64_t collective = 0;  ///< sequence number of the rank's current/last collective (1-based; 0: none)
  int peer = -1;                 ///< send/recv peer rank, or the parameter server asked (-1: none)
  int bucket = -1;               ///< all-reduce of DDP bucket `bucket` (0-based) of `buckets`
  int buckets = 0;
  double since = 0;          ///< wall clock (seconds since the epoch) when the phase began
  double phase_seconds = 0;  ///< monotonic seconds in the phase when published
  double published = 0;      ///< wall clock of this publication (the heartbeat)
};

nlohmann::json to_json(const RankProgressRecord& r);
/// Throws std::runtime_error naming the missing or mistyped field.
RankProgressRecord rank_progress_from_json(const nlohmann::json& j);

/// "backward of step 41", "all-reduce #412 (bucket 3 of 5)", "recv from rank 2",
/// "ps-request to parameter server 0 (rank 4)": where the record stands, 1-based steps and buckets.
std::string describe_position(const RankProgressRecord& r, int trainers);

}  // namespace trainbench
