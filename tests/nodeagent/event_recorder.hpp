#pragma once

// The kubelet's Events (Pulled, Created, Started, Killing, BackOff, Failed, ...) written through
// the real events API (core/v1 Events, source component "kubelet", host the node, reporting
// instance the node), as client-go's recorder names them (<object>.<hex nanoseconds>). Written
// from a thread of its own, so a pod's threads never wait for the API server; at most 1000
// wait (more are dropped, as a recorder's full channel drops them).

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "kube/client.hpp"

namespace nodeagent {

namespace kube = trainbench::kube;

class EventRecorder {
 public:
  EventRecorder(std::shared_ptr<const kube::Client> client, std::string node);
  ~EventRecorder() { stop(); }
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  void start();
  /// Writes what is queued (for at most 2 s more), then stops. Idempotent.
  void stop();
  /// Drops every queued and later Event (a lost node tells nothing).
  void silence();

  /// An Event about `object` (a Pod or the Node, as stored).
  void record(const nlohmann::json& object, const std::string& type, const std::string& reason,
              const std::string& message);

 private:
  void loop();
  nlohmann::json event_of(const nlohmann::json& object, const std::string& type, const std::string& reason,
                          const std::string& message) const;

  std::shared_ptr<const kube::Client> client_;
  std::string node_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<nlohmann::json> queue_;
  bool stopping_ = false;
  bool silenced_ = false;
  std::thread thread_;
};

}  // namespace nodeagent
