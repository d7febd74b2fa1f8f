#include "node_lifecycle.hpp"

#include <cstdio>
#include <vector>

namespace kubesim {

namespace {

/// Sets (or adds) condition `type` with a fresh lastTransitionTime when its status changes.
void put_condition(json& conds, json cond) {
  if (!conds.is_array()) conds = json::array();
  for (auto& c : conds) {
    if (c.value("type", "") != cond.value("type", "")) continue;
    if (c.value("status", "") == cond.value("status", ""))
      cond["lastTransitionTime"] = c.value("lastTransitionTime", "");
    c = std::move(cond);
    return;
  }
  conds.push_back(std::move(cond));
}

}  // namespace

void NodeLifecycle::start() {
  std::vector<ObjPtr> nodes;
  {
    std::lock_guard<std::recursive_mutex> lock(api_.store().mu());
    nodes = api_.store().list("nodes", "");
  }
  const std::string now = now_rfc3339();
  for (const auto& n : nodes) {
    api_.mutate("nodes", "", (*n)["metadata"].value("name", ""), [&](json& node) {
      put_condition(node["status"]["conditions"], {{"type", "Ready"},
                                                   {"status", "True"},
                                                   {"reason", "KubeletReady"},
                                                   {"message", "kubelet is posting ready status"},
                                                   {"lastHeartbeatTime", now},
                                                   {"lastTransitionTime", now}});
      return true;
    });
  }
  thread_ = std::thread([this] { loop(); });
}

void NodeLifecycle::stop() {
  if (stopping_.exchange(true)) return;
  if (thread_.joinable()) thread_.join();
}

bool NodeLifecycle::lose(const std::string& node) {
  {
    std::lock_guard<std::recursive_mutex> lock(api_.store().mu());
    if (!api_.store().get("nodes", "", node)) return false;
  }
  std::lock_guard<std::mutex> lock(mu_);
  lost_.emplace(node, std::chrono::steady_clock::now());
  return true;
}

bool NodeLifecycle::lost(const std::string& node) const {
  std::lock_guard<std::mutex> lock(mu_);
  return lost_.count(node) > 0;
}

void NodeLifecycle::loop() {
  while (!stopping_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::vector<std::string> due;
    {
      std::lock_guard<std::mutex> lock(mu_);
      const auto now = std::chrono::steady_clock::now();
      for (const auto& [node, since] : lost_) {
        if (!marked_[node] && std::chrono::duration<double>(now - since).count() >= grace_s_) due.push_back(node);
      }
    }
    for (const auto& node : due) {
      try {
        mark_unreachable(node);
        std::lock_guard<std::mutex> lock(mu_);
        marked_[node] = true;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "kubesim node lifecycle: %s: %s\n", node.c_str(), e.what());
      }
    }
  }
}

void NodeLifecycle::mark_unreachable(const std::string& node) {
  const std::string now = now_rfc3339();
  ObjPtr updated = api_.mutate("nodes", "", node, [&](json& n) {
    const std::string message = "Kubelet stopped posting node status.";
    json cond = {{"type", "Ready"},    {"status", "Unknown"},          {"reason", "NodeStatusUnknown"},
                 {"message", message}, {"lastHeartbeatTime", nullptr}, {"lastTransitionTime", now}};
    for (const auto& c : n["status"].value("conditions", json::array())) {
      if (c.value("type", "") == "Ready") cond["lastHeartbeatTime"] = c.value("lastHeartbeatTime", "");
    }
    put_condition(n["status"]["conditions"], std::move(cond));
    json taints = n["spec"].value("taints", json::array());
    for (const char* effect : {"NoSchedule", "NoExecute"}) {
      taints.push_back({{"key", "node.kubernetes.io/unreachable"}, {"effect", effect}, {"timeAdded", now}});
    }
    n["spec"]["taints"] = taints;
    return true;
  });
  if (updated) {
    const json involved = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", (*updated)["metadata"]}};
    api_.record_event(involved, "Normal", "NodeNotReady", "Node " + node + " status is now: NodeNotReady",
                      "node-controller");
  }
  std::vector<ObjPtr> pods;
  {
    std::lock_guard<std::recursive_mutex> lock(api_.store().mu());
    pods = api_.store().list("pods", "");
  }
  for (const auto& p : pods) {
    const json& pod = *p;
    if (pod["spec"].value("nodeName", "") != node) continue;
    api_.mutate("pods", pod["metadata"].value("namespace", ""), pod["metadata"].value("name", ""), [&](json& q) {
      if (q["metadata"].value("uid", "") != pod["metadata"].value("uid", "")) return false;
      bool changed = false;
      for (auto& c : q["status"]["conditions"]) {
        if (c.value("type", "") == "Ready" && c.value("status", "") != "False") {
          c["status"] = "False";
          c["lastTransitionTime"] = now;
          changed = true;
        }
      }
      return changed;
    });
  }
}

}  // namespace kubesim
