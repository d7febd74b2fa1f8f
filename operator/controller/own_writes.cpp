#include "operator/controller/own_writes.hpp"

#include <algorithm>

#include "operator/controller/reconciler.hpp"

namespace trainbench::op {
namespace {

constexpr std::size_t kSeenVersions = 4;

std::string name_of(const nlohmann::json& obj) {
  const auto md = obj.find("metadata");
  if (md == obj.end() || !md->is_object()) return "";
  const auto n = md->find("name");
  return n != md->end() && n->is_string() ? n->get<std::string>() : "";
}

bool being_deleted(const nlohmann::json& obj) {
  const auto md = obj.find("metadata");
  return md != obj.end() && md->is_object() && md->contains("deletionTimestamp");
}

}  // namespace

OwnWrites::OwnWrites(std::chrono::milliseconds ttl) : ttl_(ttl) {}

void OwnWrites::observe_job(const std::string& key, const std::string& resource_version) {
  std::lock_guard<std::mutex> lock(mutex_);
  JobWrites& j = jobs_[key];
  j.seen.push_back(resource_version);
  while (j.seen.size() > kSeenVersions) j.seen.pop_front();
  if (j.status_version == resource_version) j.status_version.clear();
}

void OwnWrites::wrote_status(const std::string& key, const std::string& resource_version, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  JobWrites& j = jobs_[key];
  // The watch may already have delivered it (the handler ran before this call).
  if (std::find(j.seen.begin(), j.seen.end(), resource_version) != j.seen.end()) {
    j.status_version.clear();
    return;
  }
  j.status_version = resource_version;
  j.status_at = now;
}

OwnWrites::Freshness OwnWrites::job_freshness(const std::string& key, const std::string& cached_version,
                                              Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = jobs_.find(key);
  if (it == jobs_.end() || it->second.status_version.empty()) return Freshness::kCurrent;
  JobWrites& j = it->second;
  if (j.status_version == cached_version) {
    j.status_version.clear();
    return Freshness::kCurrent;
  }
  if (now - j.status_at >= ttl_) {
    j.status_version.clear();
    return Freshness::kExpired;
  }
  return Freshness::kWaiting;
}

void OwnWrites::created(const std::string& key, const std::string& resource, nlohmann::json object,
                        Clock::time_point now) {
  const std::string name = name_of(object);
  if (name.empty()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  jobs_[key].objects[resource][name] = Written{std::move(object), now};
}

void OwnWrites::deleted(const std::string& key, const std::string& resource, const std::string& name,
                        Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  jobs_[key].objects[resource][name] = Written{nullptr, now};
}

std::vector<nlohmann::json> OwnWrites::overlay(const std::string& key, const std::string& resource,
                                               std::vector<nlohmann::json> cached, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto job = jobs_.find(key);
  if (job == jobs_.end()) return cached;
  auto res = job->second.objects.find(resource);
  if (res == job->second.objects.end()) return cached;
  auto& writes = res->second;

  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < cached.size(); ++i) index[name_of(cached[i])] = i;
  for (auto it = writes.begin(); it != writes.end();) {
    const auto& [name, w] = *it;
    const auto found = index.find(name);
    bool settled = now - w.at >= ttl_;
    if (w.object.is_null()) {  // our delete
      if (found == index.end() || being_deleted(cached[found->second])) {
        settled = true;
      } else if (!settled) {
        cached[found->second]["metadata"]["deletionTimestamp"] = format_time(std::chrono::system_clock::now());
      }
    } else {  // our create
      if (found != index.end()) {
        settled = true;
      } else if (!settled) {
        cached.push_back(w.object);
      }
    }
    it = settled ? writes.erase(it) : std::next(it);
  }
  if (writes.empty()) job->second.objects.erase(res);
  return cached;
}

std::optional<OwnWrites::Clock::time_point> OwnWrites::unconfirmed_deletes_expire(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto job = jobs_.find(key);
  if (job == jobs_.end()) return std::nullopt;
  std::optional<Clock::time_point> first;
  for (const auto& [resource, writes] : job->second.objects) {
    for (const auto& [name, w] : writes) {
      if (w.object.is_null() && (!first || w.at + ttl_ < *first)) first = w.at + ttl_;
    }
  }
  return first;
}

void OwnWrites::forget(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  jobs_.erase(key);
}

std::size_t OwnWrites::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::size_t n = 0;
  for (const auto& [key, j] : jobs_) {
    if (!j.status_version.empty()) ++n;
    for (const auto& [res, writes] : j.objects) n += writes.size();
  }
  return n;
}

}  // namespace trainbench::op
