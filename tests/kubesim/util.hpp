#pragma once

// Small helpers shared by kubesim: time stamps in the API's formats, uids and random names,
// base64, YAML -> JSON, string splitting.

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kubesim {

using json = nlohmann::json;
using Clock = std::chrono::system_clock;

/// RFC 3339 with seconds, UTC ("2024-01-02T03:04:05Z"), as metav1.Time.
std::string rfc3339(Clock::time_point t);
std::string now_rfc3339();
/// RFC 3339 with microseconds, as metav1.MicroTime.
std::string now_rfc3339_micro();
/// Parses RFC 3339 (fractional seconds and offsets accepted); epoch on failure.
Clock::time_point parse_rfc3339(const std::string& s);
/// kubectl's HumanDuration ("45s", "3m20s", "5h", "2d3h").
std::string human_duration(double seconds);
/// Age of a timestamp as HumanDuration ("<unknown>" when empty).
std::string age_of(const std::string& timestamp);

/// A random version-4 UUID.
std::string new_uid();
/// The 5-character suffix generateName uses (consonants and digits, as Kubernetes).
std::string random_name_suffix(std::size_t n = 5);
std::string random_hex(std::size_t bytes);

std::string base64_encode(const std::string& data);
/// Standard alphabet, padding optional, whitespace ignored; throws std::runtime_error if invalid.
std::string base64_decode(const std::string& text);
std::string base64url_encode(const std::string& data);
std::string base64url_decode(const std::string& text);

/// YAML (one document) to JSON with YAML 1.2 core-schema typing of plain scalars.
json yaml_to_json(const std::string& text);
/// JSON first, YAML as a fallback; throws std::runtime_error with the parser's message.
json parse_json_or_yaml(const std::string& text);

std::vector<std::string> split(const std::string& s, char sep);
bool starts_with(const std::string& s, const std::string& prefix);
bool ends_with(const std::string& s, const std::string& suffix);
std::string trim(const std::string& s);
std::string to_lower(std::string s);

/// Percent-decoding of a URL component ('+' as space when `plus_is_space`).
std::string url_decode(const std::string& s, bool plus_is_space);

/// The value at a dotted path ("status.phase"; "metadata.labels.app"), or nullptr.
const json* json_path(const json& obj, const std::string& dotted);

std::string read_file(const std::string& path);
/// Writes via a temporary file and rename; `mode` applies to the new file.
void write_file_atomic(const std::string& path, const std::string& data, unsigned mode = 0644);

}  // namespace kubesim
