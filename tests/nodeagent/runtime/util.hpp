#pragma once

// Small helpers of the node runtime: time
// stamps in the API's formats, base64, string splitting, JSON paths, whole-file reads and
// atomic writes.

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace noderuntime {

using json = nlohmann::json;
using Clock = std::chrono::system_clock;

/// RFC 3339 with seconds, UTC ("2024-01-02T03:04:05Z"), as metav1.Time.
std::string rfc3339(Clock::time_point t);
std::string now_rfc3339();
/// RFC 3339 with microseconds, as metav1.MicroTime.
std::string now_rfc3339_micro();
/// Parses RFC 3339 (fractional seconds and offsets accepted); epoch on failure.
Clock::time_point parse_rfc3339(const std::string& s);

std::string base64_encode(const std::string& data);
/// Standard alphabet, padding optional, whitespace ignored; throws std::runtime_error if invalid.
std::string base64_decode(const std::string& text);

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

}  // namespace noderuntime
