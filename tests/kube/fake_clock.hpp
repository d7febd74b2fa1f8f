#pragma once

// A kube::Clock for tests: time moves only when advanced, and sleep_for() returns at once having
// advanced it by the duration asked for (and recorded it), so code that waits runs at full speed.

#include <chrono>
#include <mutex>
#include <vector>

#include "kube/rate_limiter.hpp"
#include "kube/stop_token.hpp"

namespace kubetest {

class FakeClock : public trainbench::kube::Clock {
 public:
  time_point now() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return now_;
  }
  bool sleep_for(std::chrono::nanoseconds d, const trainbench::kube::StopToken& stop) override {
    if (stop.stop_requested()) return true;
    std::lock_guard<std::mutex> lock(mutex_);
    sleeps_.push_back(d);
    now_ += d;
    return false;
  }
  void advance(std::chrono::nanoseconds d) {
    std::lock_guard<std::mutex> lock(mutex_);
    now_ += d;
  }
  std::vector<std::chrono::nanoseconds> sleeps() {
    std::lock_guard<std::mutex> lock(mutex_);
    return sleeps_;
  }

 private:
  std::mutex mutex_;
  time_point now_{std::chrono::hours(1000)};
  std::vector<std::chrono::nanoseconds> sleeps_;
};

}  // namespace kubetest
