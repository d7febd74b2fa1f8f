#pragma once

// The agent's Node as a kubelet registers and reports it: labels (kubernetes.io/hostname, os,
// arch, and --label ones), capacity and allocatable (cpu, memory, pods, nvidia.com/gpu),
// conditions (Ready True KubeletReady; MemoryPressure, DiskPressure, PIDPressure False),
// addresses (InternalIP: the node's own loopback address, Hostname), the kubelet endpoint's port
// and nodeInfo.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/client.hpp"

namespace nodeagent {

namespace kube = trainbench::kube;

using json = nlohmann::json;

struct NodeFacts {
  std::string name;
  std::map<std::string, std::string> labels;
  std::vector<std::string> taints;  ///< KEY[=VALUE]:EFFECT, set when the Node is created
  std::string ip;
  int port = 10250;
  int cpus = 1;
  long long memory = 0;  ///< bytes
  int max_pods = 110;
  int gpus = 0;
  std::string runtime = "process";  ///< how containers run: "process" or "buildah"
};

/// This machine's CPUs and memory (bytes), for capacities not given.
int machine_cpus();
long long machine_memory();

/// The Node object a kubelet creates when it registers.
json node_object(const NodeFacts& facts);
/// The node's status now (conditions with lastHeartbeatTime now; lastTransitionTime kept from
/// `old_conditions` where the status is the same).
json node_status(const NodeFacts& facts, const json& old_conditions);

/// The Nodes collection (cluster-scoped).
kube::ResourceType nodes_resource();

/// Creates the Node, or when it exists already (a restarted agent) takes it over: its labels
/// merged, its status posted. Throws kube::KubeError.
json register_node(const kube::Client& client, const NodeFacts& facts);
/// Posts the node's status (PATCH nodes/NAME/status). Throws kube::KubeError.
void post_node_status(const kube::Client& client, const NodeFacts& facts);

}  // namespace nodeagent
