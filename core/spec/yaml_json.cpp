#include "core/spec/yaml_json.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "core/spec/spec_error.hpp"
#include "core/spec/yaml_node_json.hpp"

#include <yaml-cpp/eventhandler.h>

namespace trainbench {
namespace detail {
namespace {

/// Counts a stream's documents and remembers where each one's first node starts.
class DocumentCounter : public YAML::EventHandler {
 public:
  bool first_is_null = false;
  YAML::Mark first_mark;

  void OnDocumentStart(const YAML::Mark&) override { seen_ = false; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { first(mark, true); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { first(mark, false); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t, const std::string&) override {
    first(mark, false);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    first(mark, false);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    first(mark, false);
  }
  void OnMapEnd() override {}

 private:
  void first(const YAML::Mark& mark, bool is_null) {
    if (seen_) return;
    seen_ = true;
    first_is_null = is_null;
    first_mark = mark;
  }
  bool seen_ = false;
};

std::string where(const YAML::Mark& mark) {
  return "line " + std::to_string(mark.line + 1) + ", column " + std::to_string(mark.column + 1);
}

/// Documents in `text`, counting at most two. A document whose root is a null at the position
/// where the previous one's started made no progress: yaml-cpp 0.7.0 would hand out the same
/// null document forever (issue #1040; upstream's PR #1319 stops LoadAll at it).
std::size_t count_documents(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  std::size_t docs = 0;
  std::optional<YAML::Mark> previous_null;
  for (;;) {
    DocumentCounter counter;
    if (!parser.HandleNextDocument(counter)) break;
    if (counter.first_is_null && previous_null && previous_null->pos == counter.first_mark.pos) {
      throw std::runtime_error("not valid YAML: the parser makes no progress at " + where(counter.first_mark) +
                               " (a stray ',', ']' or '}'?)");
    }
    previous_null = counter.first_is_null ? std::optional<YAML::Mark>(counter.first_mark) : std::nullopt;
    if (++docs > 2) break;  // one too many is enough to say so
  }
  return docs;
}

bool is_digit(char c, int base) {
  if (base == 8) return c >= '0' && c <= '7';
  if (base == 16) return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  return c >= '0' && c <= '9';
}

/// Digits of `base` from s[i]; returns the index after them.
std::size_t skip_digits(const std::string& s, std::size_t i, int base = 10) {
  while (i < s.size() && is_digit(s[i], base)) ++i;
  return i;
}

std::size_t skip_sign(const std::string& s, std::size_t i) {
  return i < s.size() && (s[i] == '+' || s[i] == '-') ? i + 1 : i;
}

/// [-+]?[0-9]+ | 0o[0-7]+ | 0x[0-9a-fA-F]+
bool is_int_text(const std::string& s) {
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'x')) {
    return skip_digits(s, 2, s[1] == 'o' ? 8 : 16) == s.size();
  }
  const std::size_t start = skip_sign(s, 0);
  const std::size_t end = skip_digits(s, start);
  return end > start && end == s.size();
}

/// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? | [-+]?\.(inf|Inf|INF) | \.(nan|NaN|NAN)
bool is_float_text(const std::string& s) {
  if (s == ".nan" || s == ".NaN" || s == ".NAN") return true;
  std::size_t i = skip_sign(s, 0);
  const std::string rest = s.substr(i, 4);
  if (rest == ".inf" || rest == ".Inf" || rest == ".INF") return i + 4 == s.size();
  const std::size_t int_end = skip_digits(s, i);
  std::size_t frac_end = int_end;
  if (int_end < s.size() && s[int_end] == '.') frac_end = skip_digits(s, int_end + 1);
  const bool has_int = int_end > i;
  const bool has_frac = frac_end > int_end + 1;
  if (!has_int && !has_frac) return false;  // "." or "" or "-"
  i = frac_end;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    const std::size_t exp_start = skip_sign(s, i + 1);
    const std::size_t exp_end = skip_digits(s, exp_start);
    if (exp_end == exp_start) return false;
    i = exp_end;
  }
  return i == s.size();
}

void check_utf8(const std::string& s, const YAML::Node& node) {
  if (const auto bad = invalid_utf8_offset(s)) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "%02X", static_cast<unsigned>(static_cast<unsigned char>(s[*bad])));
    throw std::runtime_error(std::string("invalid UTF-8 (byte \\x") + hex + ") at line " +
                             std::to_string(line_of(node)));
  }
}

nlohmann::json scalar_to_json(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  switch (scalar_kind(n)) {
    case ScalarKind::Null:
      return nullptr;
    case ScalarKind::Bool:
      return s[0] == 't' || s[0] == 'T';
    case ScalarKind::Int:
      if (const auto v = parse_int64(s)) return *v;
      if (s.rfind("0o", 0) != 0 && s.rfind("0x", 0) != 0) {
        if (const auto d = parse_finite_double(s)) return *d;  // beyond 64 bits: a float, as a JSON decoder makes it
      }
      throw std::runtime_error("number out of range at line " + std::to_string(line_of(n)) + ": " + printable(s, 40));
    case ScalarKind::Float:
      if (const auto d = parse_finite_double(s)) return *d;
      throw std::runtime_error("number out of range (JSON has no infinity or NaN) at line " +
                               std::to_string(line_of(n)) + ": " + printable(s, 40));
    case ScalarKind::String:
      break;
  }
  check_utf8(s, n);
  return s;
}

class Budget {
 public:
  void spend(const YAML::Node& n) {
    if (++used_ > kMaxYamlNodes) {
      throw std::runtime_error("the document expands to more than " + std::to_string(kMaxYamlNodes) +
                               " nodes (aliases?) at line " + std::to_string(line_of(n)));
    }
  }

 private:
  std::size_t used_ = 0;
};

nlohmann::json to_json_within(const YAML::Node& node, Budget& budget) {
  budget.spend(node);
  if (!node.IsDefined() || node.IsNull()) return nullptr;
  if (node.IsScalar()) return scalar_to_json(node);
  if (node.IsSequence()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& item : node) out.push_back(to_json_within(item, budget));
    return out;
  }
  nlohmann::json out = nlohmann::json::object();
  for (const auto& kv : node) {
    if (!kv.first.IsScalar())
      throw std::runtime_error("a mapping key must be a scalar, at line " + std::to_string(line_of(kv.first)));
    const std::string& key = kv.first.Scalar();
    check_utf8(key, kv.first);
    if (out.contains(key)) {
      throw std::runtime_error("duplicate key \"" + printable(key) + "\" at line " + std::to_string(line_of(kv.first)));
    }
    out[key] = to_json_within(kv.second, budget);
  }
  return out;
}

std::string child_path(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

void duplicates_within(const YAML::Node& node, const std::string& path, Budget& budget,
                       const std::function<void(const std::string&, const std::string&, int, int)>& on_duplicate) {
  budget.spend(node);
  if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i) {
      duplicates_within(node[i], path + "[" + std::to_string(i) + "]", budget, on_duplicate);
    }
  }
  if (!node.IsMap()) return;
  std::map<std::string, int> first_line;
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) continue;
    const std::string& key = kv.first.Scalar();
    const auto [it, inserted] = first_line.emplace(key, line_of(kv.first));
    if (!inserted) on_duplicate(path, key, it->second, line_of(kv.first));
    duplicates_within(kv.second, child_path(path, key), budget, on_duplicate);
  }
}

}  // namespace

int line_of(const YAML::Node& node) { return node.Mark().line + 1; }

YAML::Node load_one_document(const std::string& text) {
  try {
    const std::size_t docs = count_documents(text);
    if (docs != 1) {
      throw std::runtime_error("expected exactly one document, got " +
                               std::string(docs > 2 ? "more than 2" : std::to_string(docs)));
    }
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw std::runtime_error("not valid YAML: " + e.msg + " at " + where(e.mark));
  }
}

ScalarKind scalar_kind(const YAML::Node& scalar) {
  const std::string& tag = scalar.Tag();
  // yaml-cpp tags quoted scalars "!" and leaves plain ones "?".
  if (tag == "!" || tag == "tag:yaml.org,2002:str") return ScalarKind::String;
  return plain_scalar_kind(scalar.Scalar());
}

ScalarKind plain_scalar_kind(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return ScalarKind::Null;
  if (s == "true" || s == "True" || s == "TRUE" || s == "false" || s == "False" || s == "FALSE")
    return ScalarKind::Bool;
  if (is_int_text(s)) return ScalarKind::Int;
  if (is_float_text(s)) return ScalarKind::Float;
  return ScalarKind::String;
}

std::optional<long long> parse_int64(const std::string& text) {
  int base = 10;
  std::string digits = text;
  if (text.rfind("0o", 0) == 0 || text.rfind("0x", 0) == 0) {
    base = text[1] == 'o' ? 8 : 16;
    digits = text.substr(2);
  }
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(digits.c_str(), &end, base);
  if (errno == ERANGE || end == digits.c_str() || *end != '\0') return std::nullopt;
  return v;
}

std::optional<double> parse_finite_double(const std::string& text) {
  // .inf and .nan are YAML's spelling (strtod reads "inf" and "nan", not these): never finite.
  if (text.find("inf") != std::string::npos || text.find("Inf") != std::string::npos ||
      text.find("INF") != std::string::npos || text.find('n') != std::string::npos ||
      text.find('N') != std::string::npos) {
    return std::nullopt;
  }
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);  // underflow gives 0 or a subnormal, as JSON decoders do
  if (end == text.c_str() || *end != '\0' || !std::isfinite(v)) return std::nullopt;
  return v;
}

nlohmann::json yaml_node_to_json(const YAML::Node& node) {
  Budget budget;
  return to_json_within(node, budget);
}

void find_duplicate_keys(const YAML::Node& root,
                         const std::function<void(const std::string&, const std::string&, int, int)>& on_duplicate) {
  Budget budget;
  duplicates_within(root, "", budget, on_duplicate);
}

}  // namespace detail

nlohmann::json yaml_to_json(const std::string& yaml_text) {
  return detail::yaml_node_to_json(detail::load_one_document(yaml_text));
}

namespace {

bool plain_is_safe(const std::string& s) {
  static const std::regex kSafe(R"(\.?[A-Za-z][A-Za-z0-9_./-]*)");
  // Words YAML 1.1 or 1.2 readers (Kubernetes clients use 1.1) would not read as a string.
  static const std::regex kReserved(
      "y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|null|Null|NULL|"
      R"(\.(inf|Inf|INF|nan|NaN|NAN))");
  // Long strings are quoted without a look: no regular expression runs on unbounded text.
  return s.size() <= 256 && std::regex_match(s, kSafe) && !std::regex_match(s, kReserved);
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
