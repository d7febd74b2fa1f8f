#pragma once

// Cooperative cancellation for blocking calls (requests, watches, backoff sleeps).
//
// A StopSource owns the state; StopTokens are cheap copies that observe it. A default-constructed
// StopToken is never stopped. Everything here is thread-safe. request_stop() is not
// async-signal-safe: call it from a normal thread (e.g. one that waits for SIGTERM with sigwait).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

namespace trainbench::kube {

namespace detail {
struct StopState {
  std::mutex mutex;
  std::condition_variable cv;
  bool stopped = false;
  std::uint64_t next_id = 1;
  std::map<std::uint64_t, std::function<void()>> callbacks;
};
}  // namespace detail

class StopToken;

/// Runs a callback when the token is stopped (at once if it already is), until destroyed.
/// The callback runs on the thread that calls request_stop(); the destructor waits for nothing,
/// so the callback must only touch state that outlives the registration or is shared-owned.
class StopCallback {
 public:
  StopCallback(const StopToken& token, std::function<void()> fn);
  ~StopCallback();
  StopCallback(const StopCallback&) = delete;
  StopCallback& operator=(const StopCallback&) = delete;

 private:
  std::shared_ptr<detail::StopState> state_;
  std::uint64_t id_ = 0;
};

class StopToken {
 public:
  StopToken() = default;
  bool stop_requested() const;
  /// Sleeps up to `d`; returns true (early) when stop was requested.
  bool wait_for(std::chrono::nanoseconds d) const;
  bool can_stop() const { return state_ != nullptr; }

 private:
  friend class StopSource;
  friend class StopCallback;
  explicit StopToken(std::shared_ptr<detail::StopState> s) : state_(std::move(s)) {}
  std::shared_ptr<detail::StopState> state_;
};

class StopSource {
 public:
  StopSource() : state_(std::make_shared<detail::StopState>()) {}
  StopToken token() const { return StopToken(state_); }
  /// Marks stopped, wakes every wait_for and runs the registered callbacks (once).
  void request_stop();
  bool stop_requested() const;

 private:
  std::shared_ptr<detail::StopState> state_;
};

}  // namespace trainbench::kube
