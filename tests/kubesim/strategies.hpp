#pragma once

// Kind-specific rules that kube-apiserver's registry strategies and admission plugins apply:
// defaults, validation (422 with field causes), immutable fields, ServiceAccount admission for
// pods, RBAC escalation prevention, Secret stringData, Service cluster IPs, CRD validation and
// status, and custom resources checked against their CRD schema.

#include <string>
#include <vector>

#include "api.hpp"

namespace kubesim {

struct StrategyContext {
  Api& api;
  const UserInfo& user;
  FieldValidation validation;
  std::vector<std::string>& warnings;
};

/// Defaults and validates a new object of type `t` (metadata.name and namespace already set).
void prepare_create(StrategyContext& ctx, const ResourceType& t, json& obj);
/// Validates an update (`obj` is the new state with the status rules already applied) and
/// applies kind-specific carry-overs from `old`.
void prepare_update(StrategyContext& ctx, const ResourceType& t, const json& old, json& obj,
                    const std::string& subresource);
/// Name validation error for the type, if any.
std::vector<FieldError> validate_name(const ResourceType& t, const std::string& name);
/// Label and annotation validation.
std::vector<FieldError> validate_metadata(const json& metadata);
/// The defaults a pod template's spec gets (SetDefaults_PodSpec: restartPolicy, dnsPolicy,
/// schedulerName, terminationGracePeriodSeconds, securityContext, the containers'); not the
/// pod-only ones (serviceAccountName, tolerations, priority, enableServiceLinks).
void default_pod_template_spec(json& spec);
/// A pod template's spec: containers (names, images, env), restartPolicy; fields under `field`.
std::vector<FieldError> validate_pod_template_spec(const json& spec, const std::string& field);
/// Custom resources: defaulting, pruning, unknown-field policy, schema validation.
void apply_crd_schema(StrategyContext& ctx, const ResourceType& t, json& obj);

}  // namespace kubesim
