#pragma once
// This rank's progress record (core/results/rank_progress.hpp), kept where the steps update it at their
// phase boundaries, and the heartbeat thread that publishes it about once a second.
//
// Updating costs no system call: a few stores under an uncontended mutex (an atomic exchange)
// and a read of the monotonic clock (vDSO); the heartbeat thread, not the step, turns the
// record into JSON and writes it. A rank that is stopped (SIGSTOP) or wedged stops its heartbeat
// too, which is how the watcher tells it from the ranks waiting for it (core/analysis/hang.hpp).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "core/results/rank_progress.hpp"
#include "worker/rank_env.hpp"

namespace trainbench::worker {

class RankProgress {
 public:
  /// `identity`: rank, role, node/local rank, pod, node and pid (see progress_identity).
  explicit RankProgress(RankProgressRecord identity = {});

  /// Loop step `step` (0-based, warm-up included) begins, in phase `first`.
  void begin_step(std::int64_t step, ProgressPhase first = ProgressPhase::kForward);
  /// A phase of the current step; `peer`: the rank sent to / received from / asked.
  void enter(ProgressPhase phase, int peer = -1);
  /// Waiting in collective `seq` (from next_collective() when it was launched); DDP names the
  /// bucket (0-based) and the bucket count. During setup and the final gather the phase stays.
  void enter_collective(ProgressPhase phase, std::uint64_t seq, int bucket = -1, int buckets = 0);
  /// The next collective's sequence number (1-based); thread-safe (autograd hooks launch).
  std::uint64_t next_collective() { return collectives_.fetch_add(1, std::memory_order_relaxed) + 1; }

  /// The record as of now, "since" on the wall clock and "published" = now.
  RankProgressRecord snapshot() const;

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr std::int64_t kSameStep = -2;
  void set(std::int64_t step, ProgressPhase phase, std::uint64_t seq, int peer, int bucket, int buckets);

  mutable std::mutex mutex_;
  RankProgressRecord record_;  ///< identity and position; since / phase_seconds come from entered_
  Clock::time_point entered_;
  std::atomic<std::uint64_t> collectives_{0};
};

/// rank, role, node and local rank from `env`, pod and node from POD_NAME / NODE_NAME (the
/// downward API) where set, and this process's pid.
RankProgressRecord progress_identity(const RankEnv& env, Role role);

/// Publishes `progress` as JSON through `publish` every `interval` (and once more when
/// destroyed) on a thread of its own. A failing publish is reported once on stderr and retried
/// at the next beat: the watch must never fail the rank.
class ProgressHeartbeat {
 public:
  using Publish = std::function<void(const std::string& json)>;
  ProgressHeartbeat(const RankProgress& progress, Publish publish,
                    std::chrono::milliseconds interval = std::chrono::milliseconds(1000));
  ~ProgressHeartbeat();
  ProgressHeartbeat(const ProgressHeartbeat&) = delete;
  ProgressHeartbeat& operator=(const ProgressHeartbeat&) = delete;

  /// Publishes the record now (before the rank stops itself: the test option sigstopRank).
  void beat();

 private:
  const RankProgress& progress_;
  Publish publish_;
  std::chrono::milliseconds interval_;
  std::mutex publish_mutex_;  ///< one publication at a time (the thread, beat() from the rank)
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool warned_ = false;
  std::thread thread_;
};

}  // namespace trainbench::worker
