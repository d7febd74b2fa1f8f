#include "kube/rate_limiter.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace trainbench::kube {
namespace {

class SteadyClock final : public Clock {
 public:
  time_point now() override { return std::chrono::steady_clock::now(); }
  bool sleep_for(std::chrono::nanoseconds d, const StopToken& stop) override { return stop.wait_for(d); }
};

}  // namespace

std::shared_ptr<Clock> Clock::steady() {
  static const std::shared_ptr<Clock> clock = std::make_shared<SteadyClock>();
  return clock;
}

TokenBucket::TokenBucket(double qps, int burst, std::shared_ptr<Clock> clock)
    : qps_(qps), burst_(std::max(1, burst)), clock_(std::move(clock)), tokens_(burst_), last_(clock_->now()) {}

void TokenBucket::refill(Clock::time_point now) {
  if (now <= last_) return;
  const double elapsed = std::chrono::duration<double>(now - last_).count();
  tokens_ = std::min(static_cast<double>(burst_), tokens_ + elapsed * qps_);
  last_ = now;
}

std::chrono::nanoseconds TokenBucket::reserve() {
  if (qps_ <= 0) return std::chrono::nanoseconds(0);
  std::lock_guard<std::mutex> lock(mutex_);
  refill(clock_->now());
  tokens_ -= 1.0;
  if (tokens_ >= 0) return std::chrono::nanoseconds(0);
  const double wait_s = -tokens_ / qps_;
  return std::chrono::nanoseconds(static_cast<long long>(std::ceil(wait_s * 1e9)));
}

bool TokenBucket::try_acquire() {
  if (qps_ <= 0) return true;
  std::lock_guard<std::mutex> lock(mutex_);
  refill(clock_->now());
  if (tokens_ < 1.0) return false;
  tokens_ -= 1.0;
  return true;
}

bool TokenBucket::acquire(const StopToken& stop) {
  const auto wait = reserve();
  if (wait.count() == 0) return !stop.stop_requested();
  return !clock_->sleep_for(wait, stop);
}

double TokenBucket::available() {
  if (qps_ <= 0) return burst_;
  std::lock_guard<std::mutex> lock(mutex_);
  refill(clock_->now());
  return tokens_;
}

}  // namespace trainbench::kube
