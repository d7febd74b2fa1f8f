#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/spec/vocabulary.hpp"

namespace trainbench::json_fields {

/// Strict readers for JSON documents the project reads back (worker results, reports).
/// Each throws std::runtime_error "<path>: <problem>" so a bad file names the bad field.
const nlohmann::json& member(const nlohmann::json& obj, const std::string& key, const std::string& path);
bool has(const nlohmann::json& obj, const std::string& key);
std::string get_string(const nlohmann::json& obj, const std::string& key, const std::string& path);
double get_number(const nlohmann::json& obj, const std::string& key, const std::string& path);
/// An integer that fits in 64 bits (a JSON integer past INT64_MAX is refused, not wrapped).
std::int64_t get_int(const nlohmann::json& obj, const std::string& key, const std::string& path);
/// An integer that fits in an int: every 32-bit field read from untrusted JSON goes through
/// get_int32 / as_int32, so no out-of-range value is narrowed ("must be a 32-bit integer").
int get_int32(const nlohmann::json& obj, const std::string& key, const std::string& path);
/// An integer element of an array (path is the element's path), 64-bit / 32-bit.
std::int64_t as_int(const nlohmann::json& j, const std::string& path);
int as_int32(const nlohmann::json& j, const std::string& path);
/// An array of 32-bit integers (each element through as_int32).
std::vector<int> get_int32_list(const nlohmann::json& obj, const std::string& key, const std::string& path);
bool get_bool(const nlohmann::json& obj, const std::string& key, const std::string& path);
const nlohmann::json& get_array(const nlohmann::json& obj, const std::string& key, const std::string& path);
const nlohmann::json& get_object(const nlohmann::json& obj, const std::string& key, const std::string& path);
/// Checks that `j` itself is an object; `path` names it.
void require_object(const nlohmann::json& j, const std::string& path);
/// A number element of an array (path is the element's path).
double as_number(const nlohmann::json& j, const std::string& path);

/// Throws "<path>.<key>: must be one of [allowed...], got "<text>"".
[[noreturn]] void fail_not_one_of(const std::string& path, const std::string& key, const std::string& text,
                                  const std::vector<std::string>& allowed);

/// A string of a closed set (core/spec/vocabulary.hpp, core/spec/paradigm.hpp) as its enum.
template <typename E>
E get_enum(const nlohmann::json& obj, const std::string& key, const std::string& path) {
  const std::string text = get_string(obj, key, path);
  if (const auto v = parse_enum<E>(text)) return *v;
  fail_not_one_of(path, key, text, allowed_texts<E>());
}

}  // namespace trainbench::json_fields
