#pragma once

// One node agent: the node's address block, its credentials and serving certificate, its Node
// (registered, heartbeats), its pods, its log endpoint; lost on request, stopped on SIGTERM.

#include <memory>
#include <string>

#include "api_view.hpp"
#include "event_recorder.hpp"
#include "heartbeat.hpp"
#include "kube/client.hpp"
#include "log_server.hpp"
#include "node_pods.hpp"
#include "options.hpp"
#include "runtime/image_runtime.hpp"
#include "runtime/netblock.hpp"

namespace nodeagent {

namespace kube = trainbench::kube;

class Agent {
 public:
  explicit Agent(Options options);
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  /// Registers the node and starts everything; prints `nodeagent ready NAME IP:PORT`. Throws
  /// (std::runtime_error, kube::KubeError) when the node cannot start.
  void start();
  /// The node is lost (a dead or cut-off machine): no more Lease renewals, node or pod status,
  /// Events or answers; the pods' processes are frozen (SIGSTOP). Once.
  void lose();
  /// Kills every pod's processes, releases the images' root filesystems, stops. True when
  /// every pod's run ended in time.
  bool shutdown();

 private:
  noderuntime::RunnerOptions runner_options() const;
  NodeFacts node_facts() const;

  Options opts_;
  noderuntime::NetBlock block_;
  std::string node_ip_;
  std::shared_ptr<const kube::Client> client_;
  std::unique_ptr<noderuntime::ImageRuntime> images_;
  std::unique_ptr<ApiView> view_;
  std::unique_ptr<EventRecorder> events_;
  std::unique_ptr<NodePods> pods_;
  std::unique_ptr<LogServer> logs_;
  std::unique_ptr<Heartbeat> heartbeat_;
  bool lost_ = false;
};

}  // namespace nodeagent
