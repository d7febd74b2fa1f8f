#include "kube/stop_token.hpp"

#include <thread>
#include <utility>
#include <vector>

namespace trainbench::kube {

bool StopToken::stop_requested() const {
  if (!state_) return false;
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->stopped;
}

bool StopToken::wait_for(std::chrono::nanoseconds d) const {
  if (d.count() <= 0) return stop_requested();
  if (!state_) {
    std::this_thread::sleep_for(d);  // a token without a source is never stopped
    return false;
  }
  std::unique_lock<std::mutex> lock(state_->mutex);
  return state_->cv.wait_for(lock, d, [this] { return state_->stopped; });
}

void StopSource::request_stop() {
  std::vector<std::function<void()>> to_run;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->stopped) return;
    state_->stopped = true;
    for (auto& entry : state_->callbacks) to_run.push_back(std::move(entry.second));
    state_->callbacks.clear();
  }
  state_->cv.notify_all();
  for (auto& fn : to_run) {
    if (fn) fn();
  }
}

bool StopSource::stop_requested() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->stopped;
}

StopCallback::StopCallback(const StopToken& token, std::function<void()> fn) : state_(token.state_) {
  if (!state_) return;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (!state_->stopped) {
      id_ = state_->next_id++;
      state_->callbacks.emplace(id_, std::move(fn));
      return;
    }
  }
  if (fn) fn();
}

StopCallback::~StopCallback() {
  if (!state_ || id_ == 0) return;
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->callbacks.erase(id_);
}

}  // namespace trainbench::kube
