#pragma once

// The registry strategies of apps/v1 Deployments and ReplicaSets, as kube-apiserver's: defaults
// (replicas 1; a Deployment's RollingUpdate 25%/25%, revisionHistoryLimit 10,
// progressDeadlineSeconds 600; the pod template's spec defaults), validation with the real
// messages (a selector is required and must match the template's labels, restartPolicy Always,
// the strategy's rules, replicas >= 0), the immutable selector, an empty status on create, and
// a Deployment's generation bumped by annotation changes too.

#include <string>

#include "resource_types.hpp"

namespace kubesim {

void prepare_workload_create(const ResourceType& t, json& obj);
void prepare_workload_update(const ResourceType& t, const json& old, json& obj, const std::string& subresource);

}  // namespace kubesim
