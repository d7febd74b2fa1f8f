#pragma once

// The node's heartbeats: its Lease renewed every lease interval (10 s, as a kubelet's
// nodeLeaseDuration / 4) and its status posted at least every status interval. stop() ends
// them at once: a lost node sends nothing more.

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "kube/client.hpp"
#include "kube/stop_token.hpp"
#include "node_status.hpp"

namespace nodeagent {

namespace kube = trainbench::kube;

class Heartbeat {
 public:
  Heartbeat(std::shared_ptr<const kube::Client> client, NodeFacts facts, std::string node_uid, double lease_interval_s,
            double status_interval_s);
  ~Heartbeat() { stop(); }
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  void start();
  /// Stops and joins (idempotent; a request under way is finished first).
  void stop();

 private:
  void loop();

  std::shared_ptr<const kube::Client> client_;
  NodeFacts facts_;
  std::string node_uid_;
  std::chrono::milliseconds lease_interval_;
  std::chrono::milliseconds status_interval_;
  kube::StopSource stop_;
  std::thread thread_;
};

}  // namespace nodeagent
