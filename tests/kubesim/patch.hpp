#pragma once

// PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902), strategic merge patch for
// built-in kinds (lists merged by their Kubernetes merge keys, $patch / $setElementOrder /
// $deleteFromPrimitiveList / $retainKeys directives), and a simplified server-side apply.

#include <string>

#include "util.hpp"

namespace kubesim {

json apply_merge_patch(json target, const json& patch);
/// Throws std::runtime_error when an operation fails (missing path, failed test).
json apply_json_patch(const json& target, const json& patch);
/// Strategic merge patch with the merge keys of core/v1 types (containers by name, env by
/// name, volumeMounts by mountPath, ports by containerPort/port, ownerReferences by uid,
/// conditions by type; finalizers merged as a set).
json apply_strategic_merge_patch(json target, const json& patch);

/// Server-side apply, simplified: fields this manager applied last time and no longer applies
/// are removed, then the new configuration is merged in (lists by merge key for built-in kinds
/// when `builtin`, atomic otherwise). No field ownership conflicts are detected.
json apply_server_side(json current, const json& applied, const json* previous_applied, bool builtin);

}  // namespace kubesim
