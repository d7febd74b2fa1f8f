#pragma once

// The pods the real kube-scheduler binds to this node: watched (fieldSelector spec.nodeName,
// the only list a node may make), run by the node runtime (runtime/pod_runner.hpp) with this
// agent as its host: statuses through a StatusWriter, Events through the EventRecorder, tokens
// from TokenRequest, objects through ApiView. A pod being deleted is stopped (SIGTERM, SIGKILL
// after min(grace, --max-grace)) and then deleted with gracePeriodSeconds=0 and its uid as a
// precondition, as the kubelet's status manager finishes a deletion. With `simulated` nothing
// runs (runtime/simulated_run.hpp): a pod is reported Running and Ready when it is bound, its
// containers end on SIGTERM when it is deleted, with no thread, token, Event or log.

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "api_view.hpp"
#include "event_recorder.hpp"
#include "kube/reflector.hpp"
#include "runtime/pod_registry.hpp"
#include "runtime/pod_runner.hpp"
#include "status_writer.hpp"

namespace nodeagent {

namespace kube = trainbench::kube;

struct NodePodsConfig {
  std::string node;
  std::string node_ip;
  std::string pods_dir;   ///< each pod's directory goes here (NS_NAME_UID)
  std::string ip_prefix;  ///< the node's NetBlock ("127.K.")
  noderuntime::RunnerOptions runner;
  bool simulated = false;  ///< --pods simulated
};

class NodePods : public noderuntime::PodHost {
 public:
  NodePods(std::shared_ptr<const kube::Client> client, NodePodsConfig config, ApiView& view, EventRecorder& events);
  ~NodePods() override;
  NodePods(const NodePods&) = delete;
  NodePods& operator=(const NodePods&) = delete;

  void start();
  /// The node is lost: nothing is started, stopped, reported or deleted any more, and the
  /// pods' processes are frozen (SIGSTOP).
  void lose();
  /// SIGKILLs every pod's processes and waits (up to `wait`) for their runs to end; false when
  /// some did not.
  bool shutdown(std::chrono::milliseconds wait);

  /// The run of a pod by name (for the log endpoint); null when this node runs no such pod.
  noderuntime::RunPtr find(const std::string& ns, const std::string& name) const;

  // noderuntime::PodHost
  noderuntime::ClusterView& cluster() override { return view_; }
  nlohmann::json current_pod(const noderuntime::PodRun& run) override;
  void publish(const noderuntime::PodRun& run, const noderuntime::PodStatusReport& status) override;
  void event(const noderuntime::PodRun& run, const nlohmann::json& pod, const std::string& type,
             const std::string& reason, const std::string& message) override;
  std::optional<std::string> service_account_token(const noderuntime::PodRun& run, const nlohmann::json& pod) override;

 private:
  void handle(const nlohmann::json& pod);
  void removed(const nlohmann::json& pod);
  void start_run(const nlohmann::json& pod);
  void pod_main(const noderuntime::RunPtr& run);
  void finish_deletion(const std::string& ns, const std::string& name, const std::string& uid);
  std::optional<nlohmann::json> cached(const std::string& ns, const std::string& name) const;

  std::shared_ptr<const kube::Client> client_;
  NodePodsConfig config_;
  ApiView& view_;
  EventRecorder& events_;
  StatusWriter writer_;
  noderuntime::PodRegistry registry_;
  noderuntime::PodRunner runner_;
  std::unique_ptr<kube::Reflector> pods_;
  std::atomic<bool> lost_{false};
  std::atomic<bool> stopping_{false};
  std::mutex threads_mu_;
  std::condition_variable threads_cv_;
  int live_threads_ = 0;
};

}  // namespace nodeagent
