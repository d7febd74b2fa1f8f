#include "heartbeat.hpp"

#include <cstdio>

#include "node_lease.hpp"

namespace nodeagent {

namespace {

std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

}  // namespace

Heartbeat::Heartbeat(std::shared_ptr<const kube::Client> client, NodeFacts facts, std::string node_uid,
                     double lease_interval_s, double status_interval_s)
    : client_(std::move(client)),
      facts_(std::move(facts)),
      node_uid_(std::move(node_uid)),
      lease_interval_(millis(lease_interval_s)),
      status_interval_(millis(status_interval_s)) {}

void Heartbeat::start() {
  thread_ = std::thread([this] { loop(); });
}

void Heartbeat::stop() {
  stop_.request_stop();
  if (thread_.joinable()) thread_.join();
}

void Heartbeat::loop() {
  const kube::StopToken stop = stop_.token();
  auto last_status = std::chrono::steady_clock::now();
  do {
    try {
      renew_node_lease(*client_, facts_.name, node_uid_);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "trainbench-nodeagent: renewing the node's Lease: %s\n", e.what());
    }
    if (std::chrono::steady_clock::now() - last_status >= status_interval_) {
      try {
        post_node_status(*client_, facts_);
        last_status = std::chrono::steady_clock::now();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "trainbench-nodeagent: posting the node's status: %s\n", e.what());
      }
    }
  } while (!stop.wait_for(lease_interval_));
}

}  // namespace nodeagent
