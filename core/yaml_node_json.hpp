#pragma once
// Internal to core/: the YAML node side of yaml_json.hpp (core links yaml-cpp privately).

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

namespace trainbench::detail {

/// What a scalar means under the YAML 1.2 core schema.
enum class ScalarKind { String, Null, Bool, Int, Float };

/// Quoted (or !!str-tagged) scalars are strings; plain ones are resolved by their text.
ScalarKind scalar_kind(const YAML::Node& scalar);

/// The JSON value of a YAML node (see yaml_to_json).
nlohmann::json yaml_node_to_json(const YAML::Node& node);

}  // namespace trainbench::detail
