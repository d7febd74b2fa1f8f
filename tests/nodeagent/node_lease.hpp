#pragma once

// The node's Lease in kube-node-lease, as a kubelet keeps it: holderIdentity the node,
// leaseDurationSeconds 40, renewTime moved on every renewal, owned by the Node. The node
// lifecycle controller counts a node alive while its Lease is renewed.

#include <string>

#include <nlohmann/json.hpp>

#include "kube/client.hpp"

namespace nodeagent {

namespace kube = trainbench::kube;

constexpr const char* kNodeLeaseNamespace = "kube-node-lease";
constexpr int kLeaseDurationSeconds = 40;

/// Renews the node's Lease (creating it first when it is missing). `node_uid` names the Node
/// that owns it. Throws kube::KubeError.
void renew_node_lease(const kube::Client& client, const std::string& node, const std::string& node_uid);

}  // namespace nodeagent
