#include "status_writer.hpp"

#include <cstdio>
#include <vector>

#include "kube/errors.hpp"

namespace nodeagent {

using json = nlohmann::json;

StatusWriter::StatusWriter(std::shared_ptr<const kube::Client> client, PodLookup cached_pod)
    : client_(std::move(client)), cached_pod_(std::move(cached_pod)) {}

void StatusWriter::start() {
  thread_ = std::thread([this] { loop(); });
}

void StatusWriter::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StatusWriter::silence() {
  std::lock_guard<std::mutex> lock(mu_);
  silenced_ = true;
  pending_.clear();
}

void StatusWriter::update(const std::string& ns, const std::string& name, const std::string& uid,
                          const noderuntime::PodStatusReport& report) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (silenced_) return;
    Pending& p = pending_[uid];  // a pending finish stays
    p.ns = ns, p.name = name, p.uid = uid;
    p.report = report;
    p.seq = next_seq_++;
  }
  cv_.notify_all();
}

void StatusWriter::finish(const std::string& ns, const std::string& name, const std::string& uid) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (silenced_) return;
    Pending& p = pending_[uid];
    p.ns = ns, p.name = name, p.uid = uid;
    p.finish = true;
  }
  cv_.notify_all();
}

void StatusWriter::report(const Pending& p, const std::string& what) {
  std::fprintf(stderr, "trainbench-nodeagent: status of %s/%s: %s\n", p.ns.c_str(), p.name.c_str(), what.c_str());
}

bool StatusWriter::write(Pending& p) {
  if (p.report) {
    if (!write_status(p)) return false;
    p.report.reset();
  }
  return !p.finish || remove(p);
}

bool StatusWriter::write_status(const Pending& p) {
  std::lock_guard<std::mutex> lock(write_mu_);
  auto& last = written_[p.uid];
  if (p.seq < last) return true;  // a later status went out already
  std::optional<json> pod = cached_pod_(p.ns, p.name);
  if (!pod || pod->value("metadata", json::object()).value("uid", "") != p.uid) return true;
  json status = pod->value("status", json::object());
  if (!noderuntime::apply_pod_status(status, *p.report)) return true;
  try {
    client_->patch(kube::resources::pods(), p.ns, p.name, kube::PatchType::kStrategic,
                   {{"metadata", {{"uid", p.uid}}}, {"status", status}}, {}, "status");
    last = p.seq;
    return true;
  } catch (const kube::ApiError& e) {
    const bool final = e.is_not_found() || e.is_conflict() || e.is_invalid();  // gone, another pod now, refused
    if (!e.is_not_found()) report(p, e.what());
    return final;
  } catch (const std::exception& e) {
    report(p, e.what());
  }
  return false;
}

bool StatusWriter::remove(const Pending& p) {
  kube::DeleteOptions o;
  o.grace_period_seconds = 0;
  o.precondition_uid = p.uid;
  try {
    client_->remove(kube::resources::pods(), p.ns, p.name, o);
    return true;
  } catch (const kube::ApiError& e) {
    if (e.is_not_found() || e.is_conflict()) return true;  // gone already, or another pod of that name now
    std::fprintf(stderr, "trainbench-nodeagent: deleting pod %s/%s: %s\n", p.ns.c_str(), p.name.c_str(), e.what());
    return e.code() < 500 && e.code() != 429;  // refused for good; a server error is tried again
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trainbench-nodeagent: deleting pod %s/%s: %s\n", p.ns.c_str(), p.name.c_str(), e.what());
  }
  return false;
}

void StatusWriter::requeue(Pending&& p) {
  std::lock_guard<std::mutex> lock(mu_);
  if (silenced_) return;
  auto [it, fresh] = pending_.emplace(p.uid, p);
  if (!fresh) it->second.finish = it->second.finish || p.finish;  // a newer status came: it goes first
}

void StatusWriter::loop() {
  for (;;) {
    std::map<std::string, Pending> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
      if (stopping_) return;
      batch.swap(pending_);
    }
    bool failed = false;
    for (auto& [uid, p] : batch) {
      if (write(p)) continue;
      failed = true;
      requeue(std::move(p));
    }
    if (failed) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::seconds(1), [&] { return stopping_; });
    }
  }
}

}  // namespace nodeagent
