#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace trainbench {

/// Parses one YAML (or JSON) document into JSON with YAML 1.2 core-schema typing: quoted scalars
/// are strings; plain scalars become null, true/false, integers or floats when they look like
/// one, strings otherwise. This is how a Kubernetes client turns a manifest into the JSON the API
/// server sees. Throws std::runtime_error for invalid YAML or when the text holds more or fewer
/// than one document.
nlohmann::json yaml_to_json(const std::string& yaml_text);

/// Block-style YAML for a JSON value, deterministic (object keys sorted, as nlohmann::json keeps
/// them). Strings that YAML could read as anything but the same string are double-quoted, so
/// yaml_to_json(json_to_yaml(j)) == j.
std::string json_to_yaml(const nlohmann::json& value);

}  // namespace trainbench
