#pragma once

// Lost nodes: what happens on a cluster when a node's machine dies or is cut off. Its kubelet
// stops posting status, so (after node-monitor-grace-period, 40 s on a real cluster) the node
// lifecycle controller sets the node's Ready condition to Unknown ("Kubelet stopped posting node
// status."), taints it node.kubernetes.io/unreachable (NoSchedule and NoExecute) and marks its
// pods' Ready condition False (MarkPodsNotReady). The pods' phase still reads Running, and a
// delete of one of them leaves it Terminating for ever: no kubelet confirms it. Only a forced
// delete (gracePeriodSeconds=0) removes it. Taint-based eviction (the NoExecute taint deleting
// pods after their 300 s default toleration) is not emulated.
//
// The kubelet simulator asks lost() before it touches a pod: it starts, stops, reports and
// finalizes nothing on a lost node. The pods' processes are frozen (SIGSTOP: they neither make
// progress nor answer, like a machine cut off the network) and killed when their pod objects
// are removed or kubesim exits.

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "api.hpp"

namespace kubesim {

class NodeLifecycle {
 public:
  NodeLifecycle(Api& api, double grace_s) : api_(api), grace_s_(grace_s) {}
  ~NodeLifecycle() { stop(); }
  NodeLifecycle(const NodeLifecycle&) = delete;
  NodeLifecycle& operator=(const NodeLifecycle&) = delete;

  /// Marks every node Ready (kubelet posting ready status) and starts the controller thread.
  void start();
  void stop();
  /// The node's kubelet stops from now on; false when no such node exists.
  bool lose(const std::string& node);
  bool lost(const std::string& node) const;

 private:
  void loop();
  /// Ready=Unknown, unreachable taints, the node's pods Ready=False.
  void mark_unreachable(const std::string& node);

  Api& api_;
  double grace_s_;
  mutable std::mutex mu_;
  std::map<std::string, std::chrono::steady_clock::time_point> lost_;  ///< node -> when its kubelet stopped
  std::map<std::string, bool> marked_;                                 ///< node -> Ready=Unknown written
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace kubesim
