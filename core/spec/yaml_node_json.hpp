#pragma once
// Internal to core/: the YAML node side of yaml_json.hpp (core links yaml-cpp privately).

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace trainbench::detail {

/// The one document of `text`, parsed by yaml-cpp. Throws std::runtime_error "not valid YAML:
/// ... at line L, column C" or "expected exactly one document, got N". Documents are counted
/// with YAML::Parser one at a time, stopping when a document makes no progress: yaml-cpp 0.7.0's
/// LoadAll loops forever on such input (its issue #1040, e.g. the two bytes ",\n").
YAML::Node load_one_document(const std::string& text);

/// What a scalar means under the YAML 1.2 core schema.
enum class ScalarKind { String, Null, Bool, Int, Float };

/// Quoted (or !!str-tagged) scalars are strings; plain ones are resolved by their text (linear
/// scans, no regular expression: a 100,000-digit scalar is classified in microseconds).
ScalarKind scalar_kind(const YAML::Node& scalar);
/// What `text` would mean as a plain (unquoted) scalar.
ScalarKind plain_scalar_kind(const std::string& text);

/// The value of an integer scalar's text ([-+]digits, 0o octal, 0x hex); nullopt when it does
/// not fit in 64 bits.
std::optional<long long> parse_int64(const std::string& text);
/// The value of a number scalar's text; nullopt when it is not finite (1e999, .inf, .nan).
std::optional<double> parse_finite_double(const std::string& text);

/// The JSON value of a YAML node (see yaml_to_json). Throws std::runtime_error naming the line
/// for a number beyond a double's range, invalid UTF-8, a non-scalar key, a duplicate key, or a
/// tree that aliases expand past kMaxYamlNodes nodes.
nlohmann::json yaml_node_to_json(const YAML::Node& node);

/// Most nodes a document may expand to (aliases count each time they are used): bounds the
/// work on a "billion laughs" document.
inline constexpr std::size_t kMaxYamlNodes = 100000;

/// Calls `on_duplicate(path, key, first_line, second_line)` for every mapping key that appears
/// twice in the same mapping (lines are 1-based; path is the mapping's, "" for the root, in the
/// spec's field-path style). Throws std::runtime_error past kMaxYamlNodes nodes.
void find_duplicate_keys(const YAML::Node& root,
                         const std::function<void(const std::string& path, const std::string& key, int first_line,
                                                  int second_line)>& on_duplicate);

/// 1-based line of a node, for messages.
int line_of(const YAML::Node& node);

}  // namespace trainbench::detail
