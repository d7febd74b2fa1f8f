#pragma once

// Kubernetes' protobuf request bodies ("k8s\0" + runtime.Unknown), which kubectl's typed
// clients send for built-in kinds (kubectl create configmap/secret/serviceaccount/namespace/
// role/rolebinding/token, kubectl auth can-i/whoami). Decoded to JSON for the kinds below;
// others are answered 415. Responses are always JSON (clients accept it).
//
// Kinds: v1 ConfigMap, Secret, ServiceAccount, Namespace, DeleteOptions;
// rbac.authorization.k8s.io/v1 Role, ClusterRole, RoleBinding, ClusterRoleBinding;
// authentication.k8s.io/v1 TokenRequest, TokenReview, SelfSubjectReview;
// authorization.k8s.io/v1 SelfSubjectAccessReview, SubjectAccessReview, LocalSubjectAccessReview.

#include <string>

#include "util.hpp"

namespace kubesim {

bool is_protobuf_content_type(const std::string& content_type);
/// Throws ApiError 415 (unknown kind) or 400 (malformed).
json decode_k8s_protobuf(const std::string& body);

}  // namespace kubesim
