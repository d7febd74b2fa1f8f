#include "operator/controller/work_queue.hpp"

#include <algorithm>

namespace trainbench::op {

WorkQueue::WorkQueue(std::chrono::milliseconds base_delay, std::chrono::milliseconds max_delay,
                     std::shared_ptr<kube::Clock> clock)
    : base_delay_(base_delay), max_delay_(max_delay), clock_(std::move(clock)) {}

void WorkQueue::ready_locked(const std::string& key) {
  if (processing_.count(key) != 0) {
    dirty_.insert(key);
    return;
  }
  if (queued_.insert(key).second) cv_.notify_one();
}

void WorkQueue::add(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (shutting_down_) return;
  ready_locked(key);
}

void WorkQueue::add_after(const std::string& key, std::chrono::milliseconds delay) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (shutting_down_) return;
  if (delay.count() <= 0) {
    ready_locked(key);
    return;
  }
  delayed_.emplace(clock_->now() + delay, key);
  cv_.notify_one();
}

void WorkQueue::add_rate_limited(const std::string& key) {
  std::chrono::milliseconds delay;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const int n = std::min(failures_[key]++, 20);
    delay = std::min<std::chrono::milliseconds>(max_delay_, base_delay_ * (1LL << n));
  }
  add_after(key, delay);
}

void WorkQueue::forget(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  failures_.erase(key);
}

std::optional<std::string> WorkQueue::take_ready_locked(TimePoint now) {
  while (!delayed_.empty() && delayed_.begin()->first <= now) {
    const std::string key = delayed_.begin()->second;
    delayed_.erase(delayed_.begin());
    ready_locked(key);
  }
  if (queued_.empty()) return std::nullopt;
  std::string key = *queued_.begin();
  queued_.erase(queued_.begin());
  processing_.insert(key);
  return key;
}

std::optional<std::string> WorkQueue::get() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (shutting_down_) return std::nullopt;
    const TimePoint now = clock_->now();
    if (auto key = take_ready_locked(now)) return key;
    if (delayed_.empty()) {
      cv_.wait(lock);
    } else {
      // A duration, not a deadline: the clock may not be steady_clock (a test's fake one).
      cv_.wait_for(lock, delayed_.begin()->first - now);
    }
  }
}

std::optional<std::string> WorkQueue::try_get() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (shutting_down_) return std::nullopt;
  return take_ready_locked(clock_->now());
}

void WorkQueue::done(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  processing_.erase(key);
  if (dirty_.erase(key) != 0 && !shutting_down_) {
    queued_.insert(key);
    cv_.notify_one();
  }
}

void WorkQueue::shut_down() {
  std::lock_guard<std::mutex> lock(mutex_);
  shutting_down_ = true;
  cv_.notify_all();
}

std::size_t WorkQueue::depth() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queued_.size() + delayed_.size();
}

}  // namespace trainbench::op
