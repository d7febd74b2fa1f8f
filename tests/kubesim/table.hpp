#pragma once

// Server-side printing: meta.k8s.io Table responses (what `kubectl get` asks for), with the
// columns kube-apiserver prints for pods, services, namespaces, config maps, secrets, nodes,
// events, service accounts, CRDs, the additionalPrinterColumns of custom resources (simple
// JSONPath), and Name / Created At for the rest.

#include <string>
#include <vector>

#include "resource_types.hpp"

namespace kubesim {

enum class IncludeObject { None, Metadata, Object };

/// `list` is a List object (items without or with kind) or a single object (`single`).
json to_table(const ResourceType& t, const json& objects, bool single, IncludeObject include,
              const std::string& table_api_version);

/// Evaluates a printer-column JSONPath (".status.phase", ".spec.items[0].name",
/// ".status.conditions[?(@.type==\"Ready\")].status") on an object; null when absent.
json eval_jsonpath(const json& obj, const std::string& path);

}  // namespace kubesim
