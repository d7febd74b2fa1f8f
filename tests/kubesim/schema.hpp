#pragma once

// A CRD's structural openAPIV3Schema applied to a custom resource as kube-apiserver does:
// defaulting (`default`), pruning of unknown fields (unless x-kubernetes-preserve-unknown-fields)
// and of nulls in non-nullable fields, then validation (type, enum, required, minimum/maximum,
// exclusive bounds, multipleOf, min/maxLength, pattern, min/maxItems, uniqueItems,
// min/maxProperties, additionalProperties, allOf/anyOf/oneOf/not, x-kubernetes-int-or-string),
// with the real server's field paths and messages. CEL rules (x-kubernetes-validations) are not
// evaluated.

#include <string>
#include <vector>

#include "status.hpp"

namespace kubesim {

/// Applies defaults, then prunes; `unknown` receives the pruned field paths ("spec.foo").
void default_and_prune(const json& schema, json& object, std::vector<std::string>& unknown);
/// Validates the whole object (metadata excluded) and returns the errors.
std::vector<FieldError> validate_against_schema(const json& schema, const json& object);

}  // namespace kubesim
