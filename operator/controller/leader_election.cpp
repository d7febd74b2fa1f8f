#include "operator/controller/leader_election.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <iostream>

#include "kube/errors.hpp"

namespace trainbench::op {
namespace {

using nlohmann::json;

/// metav1.MicroTime: RFC 3339 with microseconds.
std::string micro_time() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1000000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(us));
  return buf;
}

}  // namespace

LeaderElector::LeaderElector(std::shared_ptr<const kube::Client> client, LeaderElectionConfig config,
                             std::shared_ptr<kube::Clock> clock)
    : client_(std::move(client)), config_(std::move(config)), clock_(std::move(clock)) {}

LeaderElector::~LeaderElector() {
  stop_renewing_.request_stop();
  if (renewer_.joinable()) renewer_.join();
}

bool LeaderElector::try_acquire_or_renew() {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto type = kube::resources::leases();
  const auto now = clock_->now();
  const std::string stamp = micro_time();
  if (leader_ && held_.is_object() && renew_held(stamp, now)) return true;
  held_ = nullptr;
  try {
    auto lease = client_->try_get(type, config_.lease_namespace, config_.lease_name);
    if (!lease) {
      json obj = {{"apiVersion", "coordination.k8s.io/v1"},
                  {"kind", "Lease"},
                  {"metadata", {{"name", config_.lease_name}, {"namespace", config_.lease_namespace}}},
                  {"spec",
                   {{"holderIdentity", config_.identity},
                    {"leaseDurationSeconds", config_.lease_duration.count()},
                    {"acquireTime", stamp},
                    {"renewTime", stamp},
                    {"leaseTransitions", 0}}}};
      held_ = client_->create(type, config_.lease_namespace, obj);
      observed_spec_ = obj["spec"];
      observed_at_ = now;
      leader_ = true;
      return true;
    }
    json spec = lease->value("spec", json::object());
    if (spec != observed_spec_) {
      observed_spec_ = spec;
      observed_at_ = now;
    }
    const std::string holder = spec.value("holderIdentity", "");
    const bool mine = holder == config_.identity;
    const auto duration = std::chrono::seconds(spec.value("leaseDurationSeconds", config_.lease_duration.count()));
    if (!mine && !holder.empty() && now < observed_at_ + duration) {
      leader_ = false;
      return false;  // held by a live replica
    }
    json updated = *lease;
    updated["spec"]["holderIdentity"] = config_.identity;
    updated["spec"]["leaseDurationSeconds"] = config_.lease_duration.count();
    updated["spec"]["renewTime"] = stamp;
    if (!mine) {
      updated["spec"]["acquireTime"] = stamp;
      updated["spec"]["leaseTransitions"] = spec.value("leaseTransitions", 0) + 1;
    }
    const json written = client_->update(type, config_.lease_namespace, updated);  // resourceVersion checked
    held_ = written;
    observed_spec_ = written.value("spec", json::object());
    observed_at_ = now;
    leader_ = true;
    return true;
  } catch (const kube::ConflictError&) {
    // The lease changed since it was read: another replica wrote first, or our own write went
    // through but its answer was lost (a reset after the write; cpprestsdk then re-sends it on
    // a fresh connection and gets 409). Not a loss by itself, as with client-go: the next try
    // reads the lease again and sees whose it is; keep_renewing decides after renew_deadline.
    std::cerr << "trainbench-operator: leader election: the lease changed meanwhile; reading it again\n";
    return false;
  } catch (const kube::KubeError& e) {
    std::cerr << "trainbench-operator: leader election: " << e.what() << "\n";
    return false;  // leader_ unchanged: keep_renewing decides after renew_deadline
  }
}

bool LeaderElector::renew_held(const std::string& stamp, kube::Clock::time_point now) {
  json updated = held_;
  updated["spec"]["renewTime"] = stamp;
  try {
    held_ = client_->update(kube::resources::leases(), config_.lease_namespace, updated);  // resourceVersion checked
    observed_spec_ = held_.value("spec", json::object());
    observed_at_ = now;
    return true;
  } catch (const kube::KubeError& e) {
    std::cerr << "trainbench-operator: leader election: renewing the lease as last written: " << e.what()
              << "; reading it again\n";
    return false;
  }
}

bool LeaderElector::acquire(const std::atomic<bool>& stop) {
  const std::chrono::nanoseconds poll = std::chrono::milliseconds(50);  // how soon `stop` is seen
  while (!stop) {
    if (try_acquire_or_renew()) return true;
    const auto until = clock_->now() + config_.retry_period;
    for (auto now = clock_->now(); !stop && now < until; now = clock_->now()) {
      clock_->sleep_for(std::min(poll, until - now), {});
    }
  }
  return false;
}

void LeaderElector::keep_renewing(std::function<void()> on_lost) {
  renewer_ = std::thread([this, on_lost = std::move(on_lost)] {
    const kube::StopToken stop = stop_renewing_.token();
    auto last_renew = clock_->now();
    while (!clock_->sleep_for(config_.retry_period, stop)) {
      if (try_acquire_or_renew()) {
        last_renew = clock_->now();
      } else if (!leader_ || clock_->now() - last_renew > config_.renew_deadline) {
        leader_ = false;
        on_lost();
        return;
      }
    }
  });
}

void LeaderElector::release() {
  stop_renewing_.request_stop();
  if (renewer_.joinable()) renewer_.join();
  if (!leader_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    auto lease = client_->try_get(kube::resources::leases(), config_.lease_namespace, config_.lease_name);
    if (lease && lease->value("spec", json::object()).value("holderIdentity", "") == config_.identity) {
      json updated = *lease;
      updated["spec"]["holderIdentity"] = "";
      updated["spec"]["leaseDurationSeconds"] = 1;
      updated["spec"]["renewTime"] = micro_time();
      client_->update(kube::resources::leases(), config_.lease_namespace, updated);
    }
  } catch (const kube::KubeError& e) {
    std::cerr << "trainbench-operator: releasing the lease: " << e.what() << "\n";
  }
  leader_ = false;
}

}  // namespace trainbench::op
