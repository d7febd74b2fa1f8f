#include "event_recorder.hpp"

#include <chrono>
#include <cstdio>
#include <sstream>

#include "runtime/util.hpp"

namespace nodeagent {

using json = nlohmann::json;

namespace {

constexpr std::size_t kMaxQueued = 1000;

std::string hex_nanos() {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  std::ostringstream out;
  out << std::hex << ns;
  return out.str();
}

}  // namespace

EventRecorder::EventRecorder(std::shared_ptr<const kube::Client> client, std::string node)
    : client_(std::move(client)), node_(std::move(node)) {}

void EventRecorder::start() {
  thread_ = std::thread([this] { loop(); });
}

void EventRecorder::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void EventRecorder::silence() {
  std::lock_guard<std::mutex> lock(mu_);
  silenced_ = true;
  queue_.clear();
}

json EventRecorder::event_of(const json& object, const std::string& type, const std::string& reason,
                             const std::string& message) const {
  const json& md = object.value("metadata", json::object());
  const std::string ns = md.value("namespace", "");
  const std::string now = noderuntime::now_rfc3339();
  json involved = {{"kind", object.value("kind", "Pod")},
                   {"apiVersion", object.value("apiVersion", "v1")},
                   {"name", md.value("name", "")},
                   {"uid", md.value("uid", "")},
                   {"resourceVersion", md.value("resourceVersion", "")}};
  if (!ns.empty()) involved["namespace"] = ns;
  const json meta = {{"name", md.value("name", "") + "." + hex_nanos()}, {"namespace", ns.empty() ? "default" : ns}};
  return {{"metadata", meta},
          {"involvedObject", involved},
          {"reason", reason},
          {"message", message},
          {"type", type},
          {"source", {{"component", "kubelet"}, {"host", node_}}},
          {"reportingComponent", "kubelet"},
          {"reportingInstance", node_},
          {"firstTimestamp", now},
          {"lastTimestamp", now},
          {"count", 1}};
}

void EventRecorder::record(const json& object, const std::string& type, const std::string& reason,
                           const std::string& message) {
  json event = event_of(object, type, reason, message);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (silenced_ || stopping_ || queue_.size() >= kMaxQueued) return;
    queue_.push_back(std::move(event));
  }
  cv_.notify_all();
}

void EventRecorder::loop() {
  std::chrono::steady_clock::time_point flush_deadline{};
  for (;;) {
    json event;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_ && flush_deadline == std::chrono::steady_clock::time_point{}) {
        flush_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      }
      if (queue_.empty() || (stopping_ && std::chrono::steady_clock::now() > flush_deadline)) return;
      event = std::move(queue_.front());
      queue_.pop_front();
    }
    try {
      client_->create(kube::resources::events(), event["metadata"]["namespace"], event);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "trainbench-nodeagent: event %s: %s\n", event.value("reason", "").c_str(), e.what());
    }
  }
}

}  // namespace nodeagent
