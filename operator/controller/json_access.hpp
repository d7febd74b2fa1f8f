#pragma once

#include <nlohmann/json.hpp>

namespace trainbench::op {

/// j[key] when j is an object holding a non-null `key`, else `fallback`. Returns by value:
/// bind the result to a named variable before iterating its items().
inline nlohmann::json get_or(const nlohmann::json& j, const char* key, nlohmann::json fallback) {
  if (j.is_object() && j.contains(key) && !j.at(key).is_null()) return j.at(key);
  return fallback;
}

}  // namespace trainbench::op
