#pragma once

// Client-side rate limiting: a token bucket (QPS refill, burst capacity), as client-go's
// flowcontrol limiter. Thread-safe. The clock is injectable so tests need no wall clock.

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>

#include "kube/stop_token.hpp"

namespace trainbench::kube {

/// Monotonic time source; the default one is std::chrono::steady_clock.
class Clock {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  virtual ~Clock() = default;
  virtual time_point now() = 0;
  /// Sleeps `d` unless `stop` is requested first; returns true when stopped.
  virtual bool sleep_for(std::chrono::nanoseconds d, const StopToken& stop) = 0;

  static std::shared_ptr<Clock> steady();
};

class TokenBucket {
 public:
  /// `qps` <= 0 disables limiting. `burst` < 1 is treated as 1. The bucket starts full.
  TokenBucket(double qps, int burst, std::shared_ptr<Clock> clock = Clock::steady());

  /// Takes one token and returns how long the caller must wait before using it (zero when one
  /// was available). Tokens are reserved in call order, so waits of concurrent callers queue up.
  std::chrono::nanoseconds reserve();
  /// Takes a token only if one is available now.
  bool try_acquire();
  /// reserve() + sleep on the clock. Returns false (the token stays spent) when `stop` fired.
  bool acquire(const StopToken& stop = {});

  double qps() const { return qps_; }
  int burst() const { return burst_; }
  /// Tokens available now (may be negative while callers wait). For tests and metrics.
  double available();

 private:
  void refill(Clock::time_point now);  // requires mutex_

  const double qps_;
  const int burst_;
  std::shared_ptr<Clock> clock_;
  std::mutex mutex_;
  double tokens_;
  Clock::time_point last_;
};

}  // namespace trainbench::kube
