#include "core/spec/json_fields.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

#include "core/spec/spec_messages.hpp"

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

void fail_not_one_of(const std::string& path, const std::string& key, const std::string& text,
                     const std::vector<std::string>& allowed) {
  fail(child(path, key), spec_messages::one_of_message(allowed, text));
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

std::int64_t as_int(const nlohmann::json& j, const std::string& path) {
  if (!j.is_number_integer()) fail(path, "must be an integer");
  if (j.is_number_unsigned() &&
      j.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    fail(path, "must be a 64-bit integer, got " + j.dump());
  }
  return j.get<std::int64_t>();
}

int as_int32(const nlohmann::json& j, const std::string& path) {
  const std::int64_t v = as_int(j, path);
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) {
    fail(path, "must be a 32-bit integer, got " + std::to_string(v));
  }
  return static_cast<int>(v);
}

std::int64_t get_int(const nlohmann::json& obj, const std::string& key, const std::string& path) {
  return as_int(member(obj, key, path), child(path, key));
}

int get_int32(const nlohmann::json& obj, const std::string& key, const std::string& path) {
  return as_int32(member(obj, key, path), child(path, key));
}

std::vector<int> get_int32_list(const nlohmann::json& obj, const std::string& key, const std::string& path) {
  const auto& arr = get_array(obj, key, path);
  std::vector<int> out;
  for (std::size_t i = 0; i < arr.size(); ++i)
    out.push_back(as_int32(arr[i], child(path, key) + "[" + std::to_string(i) + "]"));
  return out;
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
