#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "kube/rate_limiter.hpp"

namespace trainbench::op {

/// A rate-limited work queue of keys ("namespace/name"), like client-go's: a key is queued at
/// most once; a key being processed is not handed out again until done(), and if it was added
/// meanwhile it is queued again then; add_after() delays; add_rate_limited() delays by a
/// per-key exponential backoff (base * 2^failures, capped) that forget() resets.
/// Delays are measured on `clock` (tests inject a fake one). Thread-safe.
class WorkQueue {
 public:
  explicit WorkQueue(std::chrono::milliseconds base_delay = std::chrono::milliseconds(100),
                     std::chrono::milliseconds max_delay = std::chrono::seconds(60),
                     std::shared_ptr<kube::Clock> clock = kube::Clock::steady());

  void add(const std::string& key);
  void add_after(const std::string& key, std::chrono::milliseconds delay);
  void add_rate_limited(const std::string& key);
  void forget(const std::string& key);
  /// Blocks until a key is ready or shutdown(); nullopt after shutdown.
  std::optional<std::string> get();
  /// get() without waiting: a key that is ready now, else nullopt.
  std::optional<std::string> try_get();
  void done(const std::string& key);
  void shut_down();
  std::size_t depth() const;

 private:
  using TimePoint = kube::Clock::time_point;
  void ready_locked(const std::string& key);
  /// Moves the delayed keys that are due into the ready set, then takes the first ready key.
  std::optional<std::string> take_ready_locked(TimePoint now);

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::set<std::string> queued_;  ///< ready keys (set: de-duplicated)
  std::multimap<TimePoint, std::string> delayed_;
  std::set<std::string> processing_;
  std::set<std::string> dirty_;  ///< added while processing
  std::map<std::string, int> failures_;
  std::chrono::milliseconds base_delay_, max_delay_;
  std::shared_ptr<kube::Clock> clock_;
  bool shutting_down_ = false;
};

}  // namespace trainbench::op
