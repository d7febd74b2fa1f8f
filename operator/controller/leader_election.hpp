#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "kube/client.hpp"
#include "kube/rate_limiter.hpp"
#include "kube/stop_token.hpp"

namespace trainbench::op {

struct LeaderElectionConfig {
  std::string lease_namespace = "default";
  std::string lease_name = "trainbench-operator";
  std::string identity;  ///< unique per replica (pod name + random suffix)
  std::chrono::seconds lease_duration{15};
  std::chrono::seconds renew_deadline{10};
  std::chrono::seconds retry_period{2};
};

/// Leader election on a coordination.k8s.io/v1 Lease, as client-go does it: a replica takes
/// the lease when it is free or its holder has not renewed it for lease_duration (measured on
/// this replica's clock from when it last saw the record change, so clock skew between
/// replicas does not matter); the leader renews every retry_period and gives up leadership if
/// it could not renew for renew_deadline. Writes use resourceVersion, so two replicas can
/// never both hold it. Durations are measured, and waits slept, on `clock` (tests inject a
/// fake one); the lease's timestamps are wall-clock time, for people reading it.
class LeaderElector {
 public:
  LeaderElector(std::shared_ptr<const kube::Client> client, LeaderElectionConfig config,
                std::shared_ptr<kube::Clock> clock = kube::Clock::steady());
  ~LeaderElector();
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  /// Blocks until this replica leads (true) or `stop` becomes true (false).
  bool acquire(const std::atomic<bool>& stop);
  /// Renews in the background; calls on_lost (from that thread) if leadership is lost.
  void keep_renewing(std::function<void()> on_lost);
  /// Stops renewing and, if still leader, releases the lease so another replica takes over
  /// at once.
  void release();
  bool is_leader() const { return leader_; }

  /// One attempt to acquire or renew; true when this replica holds the lease afterwards.
  bool try_acquire_or_renew();

 private:
  std::shared_ptr<const kube::Client> client_;
  LeaderElectionConfig config_;
  std::shared_ptr<kube::Clock> clock_;
  std::atomic<bool> leader_{false};
  kube::StopSource stop_renewing_;
  std::thread renewer_;
  std::mutex mutex_;
  nlohmann::json observed_spec_;
  kube::Clock::time_point observed_at_{};
  nlohmann::json held_;  ///< the lease as this replica last wrote it, while it leads

  /// The leader's fast path, as client-go's: renew by updating the lease it last wrote, without
  /// reading it first (one request instead of two); false when that failed (then read it).
  bool renew_held(const std::string& stamp, kube::Clock::time_point now);
};

}  // namespace trainbench::op
