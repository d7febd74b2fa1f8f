#include "runtime/pod_registry.hpp"

#include "runtime/netblock.hpp"

namespace noderuntime {

std::string PodRegistry::allocate_ip() {
  std::lock_guard<std::mutex> lock(mu_);
  for (unsigned tries = 0; tries < 254u * 254u; ++tries) {
    std::string ip = pod_ip_in_block(ip_prefix_, next_ip_++);
    if (used_ips_.insert(ip).second) return ip;
  }
  return "127.0.0.1";
}

void PodRegistry::add(const RunPtr& run) {
  std::lock_guard<std::mutex> lock(mu_);
  runs_[run->uid] = run;
}

RunPtr PodRegistry::find(const std::string& uid) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = runs_.find(uid);
  return it == runs_.end() ? nullptr : it->second;
}

RunPtr PodRegistry::find(const std::string& ns, const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& kv : runs_) {
    if (kv.second->ns == ns && kv.second->name == name && !kv.second->removed) return kv.second;
  }
  return nullptr;
}

std::vector<RunPtr> PodRegistry::all() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<RunPtr> out;
  for (const auto& kv : runs_) out.push_back(kv.second);
  return out;
}

std::size_t PodRegistry::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return runs_.size();
}

std::size_t PodRegistry::ips_in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return used_ips_.size();
}

void PodRegistry::forget(const RunPtr& run) {
  std::lock_guard<std::mutex> lock(mu_);
  used_ips_.erase(run->ip);
  runs_.erase(run->uid);
}

bool PodRegistry::pod_removed(const RunPtr& run) {
  bool done;
  {
    std::lock_guard<std::mutex> lock(run->mu);
    run->removed = true;
    done = run->done || run->fake;
  }
  if (done) forget(run);
  return done;
}

PodRegistry::Ending PodRegistry::run_ended(const RunPtr& run) {
  bool removed;
  Ending e;
  {
    std::lock_guard<std::mutex> lock(run->mu);
    run->done = true;
    removed = run->removed;
    e.delete_pod = run->delete_when_done && !removed;
  }
  run->cv.notify_all();
  if (removed) forget(run);
  return e;
}

}  // namespace noderuntime
