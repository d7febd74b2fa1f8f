#pragma once

// A container's environment as the kubelet builds it: envFrom (ConfigMaps / Secrets, with
// prefix), env values with $(VAR) expansion, valueFrom fieldRef / resourceFieldRef /
// configMapKeyRef / secretKeyRef; and the DNS emulation, which rewrites host names
// <service>.<namespace>.svc[.cluster.local] (and <hostname>.<subdomain>.<namespace>.svc) in env
// values to the pod IP of a pod the Service selects (there is no cluster DNS: the pods' network
// is this machine's loopback). The objects come from a ClusterView (the API server, for the node
// agent).

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "runtime/cluster_view.hpp"
#include "runtime/util.hpp"

namespace noderuntime {

struct PodEnvContext {
  ClusterView& cluster;
  json pod;  ///< the pod as last seen (status.podIP set)
};

using EnvList = std::vector<std::pair<std::string, std::string>>;

/// The container's env (without DNS rewriting). Throws std::runtime_error with the kubelet's
/// message (`configmap "x" not found`, `couldn't find key k in Secret ns/s`) when a required
/// reference is missing.
EnvList container_env(const PodEnvContext& ctx, const json& container);

/// Sets `key` (in its place when present, else appended).
void put_env(EnvList& env, const std::string& key, const std::string& value);

/// Kubernetes $(VAR) expansion: $(NAME) replaced when NAME is defined, $$ -> $, else verbatim.
std::string expand_vars(const std::string& s, const std::map<std::string, std::string>& vars);

/// Rewrites service host names in `value`; false when some name has no pod address yet.
bool rewrite_service_names(ClusterView& cluster, std::string& value);

}  // namespace noderuntime
