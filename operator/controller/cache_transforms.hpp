#pragma once

#include <nlohmann/json.hpp>

namespace trainbench::op {

/// What the operator's informers keep of each object (kube::ReflectorOptions::transform): only
/// the fields reconcile() reads, so that the caches of thousands of pods stay small. A pod's
/// spec (containers, the RunConfig in its env, the merged template) is most of its size and is
/// never read back.

/// metadata: name, namespace, uid, resourceVersion, generation, labels, deletionTimestamp.
nlohmann::json slim_metadata(const nlohmann::json& object);
/// Metadata plus spec.nodeName and status (phase, reason, message, conditions, containerStatuses'
/// name and state).
nlohmann::json slim_pod(nlohmann::json pod);
/// Metadata plus the node's Ready condition (lost nodes: docs/operator.md).
nlohmann::json slim_node(nlohmann::json node);
/// Metadata plus data (the result ConfigMaps' data.result).
nlohmann::json slim_config_map(nlohmann::json config_map);
/// Metadata plus status.conditions and status.admission (a Kueue Workload: kueue_workload.hpp).
nlohmann::json slim_workload(nlohmann::json workload);
/// Metadata only (services, serviceaccounts, roles, rolebindings: reconcile checks existence).
nlohmann::json slim_object(nlohmann::json object);

}  // namespace trainbench::op
