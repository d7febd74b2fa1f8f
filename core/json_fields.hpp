#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace trainbench::json_fields {

/// Strict readers for JSON documents the project reads back (worker results, reports).
/// Each throws std::runtime_error "<path>: <problem>" so a bad file names the bad field.
const nlohmann::json& member(const nlohmann::json& obj, const std::string& key, const std::string& path);
bool has(const nlohmann::json& obj, const std::string& key);
std::string get_string(const nlohmann::json& obj, const std::string& key, const std::string& path);
double get_number(const nlohmann::json& obj, const std::string& key, const std::string& path);
std::int64_t get_int(const nlohmann::json& obj, const std::string& key, const std::string& path);
bool get_bool(const nlohmann::json& obj, const std::string& key, const std::string& path);
const nlohmann::json& get_array(const nlohmann::json& obj, const std::string& key, const std::string& path);
const nlohmann::json& get_object(const nlohmann::json& obj, const std::string& key, const std::string& path);
/// Checks that `j` itself is an object; `path` names it.
void require_object(const nlohmann::json& j, const std::string& path);
/// A number element of an array (path is the element's path).
double as_number(const nlohmann::json& j, const std::string& path);

}  // namespace trainbench::json_fields
