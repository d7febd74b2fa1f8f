#pragma once

// Small helpers shared by kubesim: uids and random names, YAML -> JSON, durations; and, from
// the node runtime's util (tests/nodeagent/runtime/util.hpp, their one home), time stamps in the
// API's formats, base64, string splitting, JSON paths and files.

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/util.hpp"

namespace kubesim {

using json = nlohmann::json;
using Clock = std::chrono::system_clock;

using noderuntime::base64_decode;
using noderuntime::base64_encode;
using noderuntime::ends_with;
using noderuntime::json_path;
using noderuntime::now_rfc3339;
using noderuntime::now_rfc3339_micro;
using noderuntime::parse_rfc3339;
using noderuntime::read_file;
using noderuntime::rfc3339;
using noderuntime::split;
using noderuntime::starts_with;
using noderuntime::to_lower;
using noderuntime::trim;
using noderuntime::url_decode;
using noderuntime::write_file_atomic;

/// kubectl's HumanDuration ("45s", "3m20s", "5h", "2d3h").
std::string human_duration(double seconds);
/// Age of a timestamp as HumanDuration ("<unknown>" when empty).
std::string age_of(const std::string& timestamp);

/// A random version-4 UUID.
std::string new_uid();
/// The 5-character suffix generateName uses (consonants and digits, as Kubernetes).
std::string random_name_suffix(std::size_t n = 5);
std::string random_hex(std::size_t bytes);

std::string base64url_encode(const std::string& data);
std::string base64url_decode(const std::string& text);

/// YAML (one document) to JSON with YAML 1.2 core-schema typing of plain scalars.
json yaml_to_json(const std::string& text);
/// JSON first, YAML as a fallback; throws std::runtime_error with the parser's message.
json parse_json_or_yaml(const std::string& text);

}  // namespace kubesim
