#pragma once

// A pod's ServiceAccount token as a kubelet gets it: a TokenRequest (serviceaccounts/NAME/token)
// bound to the pod (boundObjectRef), for the pod's projected ServiceAccount volume (what the
// ServiceAccount admission plugin adds when the token is to be mounted: kube-api-access-*),
// with that source's audience and expirationSeconds. A node may request tokens only for pods
// bound to it (the Node authorizer).

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kube/client.hpp"

namespace nodeagent {

namespace kube = trainbench::kube;

/// The pod's projected serviceAccountToken source, or nullopt when the pod mounts no token.
std::optional<nlohmann::json> service_account_token_source(const nlohmann::json& pod);

/// A token for the pod's ServiceAccount bound to the pod; nullopt when it mounts none. Throws
/// kube::KubeError.
std::optional<std::string> request_service_account_token(const kube::Client& client, const nlohmann::json& pod);

}  // namespace nodeagent
