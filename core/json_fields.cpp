#include "core/json_fields.hpp"

#include <cmath>
#include <stdexcept>

namespace trainbench::json_fields {
namespace {

std::string child(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": " + what);
}

}  // namespace

void require_object(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) fail(path.empty() ? "<document>" : path, "must be an object");
}

bool has(const nlohmann::json& obj, const std::string& key) {
  return obj.is_object() && obj.contains(key) && !obj.at(key).is_null();
}

const nlohmann::json& member(const nlohmann::json& obj, const std::string& key, const std::string& path) {
  require_object(obj, path);
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) fail(child(path, key), "is required");
  return *it;
}

std::string get_string(const nlohmann::json& obj, const std::string& key, const std::string& path) {
  const auto& v = member(obj, key, path);
  if (!v.is_string()) fail(child(path, key), "must be a string");
  return v.get<std::string>();
}

double as_number(const nlohmann::json& j, const std::string& path) {
  if (!j.is_number()) fail(path, "must be a number");
  double d = j.get<double>();
  if (!std::isfinite(d)) fail(path, "must be finite");
  return d;
}

double get_number(const nlohmann::json& obj, const std::string& key, const std::string& path) {
  return as_number(member(obj, key, path), child(path, key));
}

std::int64_t get_int(const nlohmann::json& obj, const std::string& key, const std::string& path) {
  const auto& v = member(obj, key, path);
  if (!v.is_number_integer()) fail(child(path, key), "must be an integer");
  return v.get<std::int64_t>();
}

bool get_bool(const nlohmann::json& obj, const std::string& key, const std::string& path) {
  const auto& v = member(obj, key, path);
  if (!v.is_boolean()) fail(child(path, key), "must be a boolean");
  return v.get<bool>();
}

const nlohmann::json& get_array(const nlohmann::json& obj, const std::string& key, const std::string& path) {
  const auto& v = member(obj, key, path);
  if (!v.is_array()) fail(child(path, key), "must be an array");
  return v;
}

const nlohmann::json& get_object(const nlohmann::json& obj, const std::string& key, const std::string& path) {
  const auto& v = member(obj, key, path);
  if (!v.is_object()) fail(child(path, key), "must be an object");
  return v;
}

}  // namespace trainbench::json_fields
