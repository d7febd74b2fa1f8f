#include "core/yaml_json.hpp"

#include <regex>
#include <stdexcept>

#include "core/yaml_node_json.hpp"

namespace trainbench {
namespace detail {

ScalarKind scalar_kind(const YAML::Node& scalar) {
  const std::string& tag = scalar.Tag();
  // yaml-cpp tags quoted scalars "!" and leaves plain ones "?".
  if (tag == "!" || tag == "tag:yaml.org,2002:str") return ScalarKind::String;
  static const std::regex kNull("~|null|Null|NULL");
  static const std::regex kBool("true|True|TRUE|false|False|FALSE");
  static const std::regex kInt("[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+");
  static const std::regex kFloat(
      R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN))");
  const std::string& s = scalar.Scalar();
  if (s.empty() || std::regex_match(s, kNull)) return ScalarKind::Null;
  if (std::regex_match(s, kBool)) return ScalarKind::Bool;
  if (std::regex_match(s, kInt)) return ScalarKind::Int;
  if (std::regex_match(s, kFloat)) return ScalarKind::Float;
  return ScalarKind::String;
}

namespace {

nlohmann::json scalar_to_json(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  switch (scalar_kind(n)) {
    case ScalarKind::Null:
      return nullptr;
    case ScalarKind::Bool:
      return s[0] == 't' || s[0] == 'T';
    case ScalarKind::Int:
      try {
        if (s.rfind("0o", 0) == 0) return std::stoll(s.substr(2), nullptr, 8);
        if (s.rfind("0x", 0) == 0) return std::stoll(s.substr(2), nullptr, 16);
        return std::stoll(s);
      } catch (const std::out_of_range&) {
        return std::stod(s);  // beyond 64 bits: a float, as a JSON decoder would make it
      }
    case ScalarKind::Float:
      return std::stod(s);
    case ScalarKind::String:
      break;
  }
  return s;
}

}  // namespace

nlohmann::json yaml_node_to_json(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return nullptr;
  if (node.IsScalar()) return scalar_to_json(node);
  if (node.IsSequence()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& item : node) out.push_back(yaml_node_to_json(item));
    return out;
  }
  nlohmann::json out = nlohmann::json::object();
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) throw std::runtime_error("a mapping key must be a scalar");
    out[kv.first.Scalar()] = yaml_node_to_json(kv.second);
  }
  return out;
}

}  // namespace detail

nlohmann::json yaml_to_json(const std::string& yaml_text) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(yaml_text);
  } catch (const YAML::Exception& e) {
    throw std::runtime_error("not valid YAML: " + e.msg + " at line " + std::to_string(e.mark.line + 1) +
                             ", column " + std::to_string(e.mark.column + 1));
  }
  if (docs.size() != 1) {
    throw std::runtime_error("expected exactly one document, got " + std::to_string(docs.size()));
  }
  return detail::yaml_node_to_json(docs[0]);
}

namespace {

bool plain_is_safe(const std::string& s) {
  static const std::regex kSafe(R"(\.?[A-Za-z][A-Za-z0-9_./-]*)");
  // Words YAML 1.1 or 1.2 readers (Kubernetes clients use 1.1) would not read as a string.
  static const std::regex kReserved(
      "y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|null|Null|NULL|"
      R"(\.(inf|Inf|INF|nan|NaN|NAN))");
  return std::regex_match(s, kSafe) && !std::regex_match(s, kReserved);
}

std::string scalar_text(const nlohmann::json& v) {
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    return plain_is_safe(s) ? s : v.dump();  // a JSON string is a YAML double-quoted scalar
  }
  if (v.is_object()) return "{}";
  if (v.is_array()) return "[]";
  return v.dump();  // numbers, booleans, null
}

bool is_block(const nlohmann::json& v) { return (v.is_object() || v.is_array()) && !v.empty(); }

void emit_object(std::string& out, const nlohmann::json& obj, int indent);
void emit_array(std::string& out, const nlohmann::json& arr, int indent);

void emit_after_key(std::string& out, const nlohmann::json& v, int indent) {
  if (v.is_object() && !v.empty()) {
    out += "\n";
    emit_object(out, v, indent + 2);
  } else if (v.is_array() && !v.empty()) {
    out += "\n";
    emit_array(out, v, indent);  // Kubernetes style: "- " at the key's indentation
  } else {
    out += " " + scalar_text(v) + "\n";
  }
}

void emit_object(std::string& out, const nlohmann::json& obj, int indent) {
  const std::string pad(static_cast<std::size_t>(indent), ' ');
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    out += pad + scalar_text(nlohmann::json(it.key())) + ":";
    emit_after_key(out, it.value(), indent);
  }
}

void emit_array(std::string& out, const nlohmann::json& arr, int indent) {
  const std::string pad(static_cast<std::size_t>(indent), ' ');
  for (const auto& item : arr) {
    if (item.is_object() && is_block(item)) {
      std::string inner;
      emit_object(inner, item, indent + 2);
      out += pad + "- " + inner.substr(static_cast<std::size_t>(indent) + 2);
    } else if (item.is_array() && is_block(item)) {
      out += pad + "-\n";
      emit_array(out, item, indent + 2);
    } else {
      out += pad + "- " + scalar_text(item) + "\n";
    }
  }
}

}  // namespace

std::string json_to_yaml(const nlohmann::json& value) {
  std::string out;
  if (value.is_object() && !value.empty()) {
    emit_object(out, value, 0);
  } else if (value.is_array() && !value.empty()) {
    emit_array(out, value, 0);
  } else {
    out = scalar_text(value) + "\n";
  }
  return out;
}

}  // namespace trainbench
