#include "selectors.hpp"

#include <cctype>

#include "status.hpp"

namespace kubesim {

namespace {

bool valid_label_key(const std::string& key) {
  if (key.empty()) return false;
  for (char c : key) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '/')) return false;
  }
  return true;
}

[[noreturn]] void parse_fail(const std::string& text, const std::string& why) {
  throw bad_request("unable to parse requirement: " + why + " in \"" + text + "\"");
}

// Splits at commas that are not inside parentheses.
std::vector<std::string> split_requirements(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : text) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::vector<std::string> parse_set(const std::string& whole, const std::string& rest) {
  std::string r = trim(rest);
  if (r.size() < 2 || r.front() != '(' || r.back() != ')') parse_fail(whole, "found '" + r + "', expected: '('");
  std::vector<std::string> vals;
  for (const auto& v : split(r.substr(1, r.size() - 2), ',')) vals.push_back(trim(v));
  return vals;
}

}  // namespace

LabelSelector LabelSelector::parse(const std::string& text) {
  LabelSelector sel;
  if (trim(text).empty()) return sel;
  for (const auto& raw : split_requirements(text)) {
    std::string r = trim(raw);
    if (r.empty()) parse_fail(text, "found '', expected: !, identifier, or 'end of string'");
    Req req;
    if (r[0] == '!') {
      req.key = trim(r.substr(1));
      req.op = "!";
      if (!valid_label_key(req.key)) parse_fail(text, "invalid label key \"" + req.key + "\"");
      sel.reqs_.push_back(req);
      continue;
    }
    std::size_t i = 0;
    while (i < r.size() && (std::isalnum(static_cast<unsigned char>(r[i])) || r[i] == '-' || r[i] == '_' ||
                            r[i] == '.' || r[i] == '/')) {
      ++i;
    }
    req.key = r.substr(0, i);
    if (!valid_label_key(req.key)) parse_fail(text, "invalid label key \"" + req.key + "\"");
    std::string rest = trim(r.substr(i));
    if (rest.empty()) {
      req.op = "exists";
    } else if (rest.compare(0, 2, "==") == 0) {
      req.op = "=";
      req.values = {trim(rest.substr(2))};
    } else if (rest.compare(0, 2, "!=") == 0) {
      req.op = "!=";
      req.values = {trim(rest.substr(2))};
    } else if (rest[0] == '=') {
      req.op = "=";
      req.values = {trim(rest.substr(1))};
    } else if (rest[0] == '>' || rest[0] == '<') {
      req.op = rest[0] == '>' ? "gt" : "lt";
      req.values = {trim(rest.substr(1))};
    } else if (rest.compare(0, 5, "notin") == 0 && (rest.size() == 5 || !std::isalnum(static_cast<unsigned char>(rest[5])))) {
      req.op = "notin";
      req.values = parse_set(text, rest.substr(5));
    } else if (rest.compare(0, 2, "in") == 0 && (rest.size() == 2 || !std::isalnum(static_cast<unsigned char>(rest[2])))) {
      req.op = "in";
      req.values = parse_set(text, rest.substr(2));
    } else {
      parse_fail(text, "found '" + rest + "', expected: in, notin, =, ==, !=, gt, lt");
    }
    for (const auto& v : req.values) {
      for (char c : v) {
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) {
          throw bad_request("unable to parse requirement: values[0][" + req.key + "]: Invalid value: \"" + v +
                            "\": a valid label must be an empty string or consist of alphanumeric characters, '-', "
                            "'_' or '.', and must start and end with an alphanumeric character");
        }
      }
    }
    sel.reqs_.push_back(req);
  }
  return sel;
}

LabelSelector LabelSelector::from_map(const json& labels) {
  LabelSelector sel;
  if (!labels.is_object()) return sel;
  for (auto it = labels.begin(); it != labels.end(); ++it) {
    sel.reqs_.push_back({it.key(), "=", {it.value().is_string() ? it.value().get<std::string>() : it.value().dump()}});
  }
  return sel;
}

LabelSelector LabelSelector::from_object(const json& selector) {
  LabelSelector sel;
  if (!selector.is_object()) return sel;
  if (selector.contains("matchLabels")) sel = from_map(selector["matchLabels"]);
  if (selector.contains("matchExpressions") && selector["matchExpressions"].is_array()) {
    for (const auto& e : selector["matchExpressions"]) {
      Req r;
      r.key = e.value("key", "");
      std::string op = e.value("operator", "");
      if (op == "In") r.op = "in";
      else if (op == "NotIn") r.op = "notin";
      else if (op == "Exists") r.op = "exists";
      else if (op == "DoesNotExist") r.op = "!";
      else continue;
      if (e.contains("values") && e["values"].is_array()) {
        for (const auto& v : e["values"]) r.values.push_back(v.get<std::string>());
      }
      sel.reqs_.push_back(r);
    }
  }
  return sel;
}

bool LabelSelector::matches(const json& labels) const {
  for (const auto& r : reqs_) {
    bool has = labels.is_object() && labels.contains(r.key) && labels[r.key].is_string();
    std::string v = has ? labels[r.key].get<std::string>() : "";
    if (r.op == "=") {
      if (!has || v != r.values[0]) return false;
    } else if (r.op == "!=") {
      if (has && v == r.values[0]) return false;
    } else if (r.op == "in") {
      if (!has) return false;
      bool found = false;
      for (const auto& x : r.values) found = found || x == v;
      if (!found) return false;
    } else if (r.op == "notin") {
      if (has) {
        for (const auto& x : r.values) {
          if (x == v) return false;
        }
      }
    } else if (r.op == "exists") {
      if (!has) return false;
    } else if (r.op == "!") {
      if (has) return false;
    } else if (r.op == "gt" || r.op == "lt") {
      if (!has) return false;
      try {
        long long a = std::stoll(v), b = std::stoll(r.values[0]);
        if (r.op == "gt" ? !(a > b) : !(a < b)) return false;
      } catch (...) {
        return false;
      }
    }
  }
  return true;
}

std::string field_value(const json& obj, const std::string& field) {
  std::string path = field == "source" ? "source.component" : field;
  const json* v = json_path(obj, path);
  if (!v || v->is_null()) {
    if (field == "spec.hostNetwork") return "false";
    return "";
  }
  if (v->is_string()) return v->get<std::string>();
  return v->dump();
}

FieldSelector FieldSelector::parse(const std::string& text, const std::function<bool(const std::string&)>& supported) {
  FieldSelector sel;
  if (trim(text).empty()) return sel;
  // split on unescaped commas
  std::vector<std::string> parts;
  std::string cur;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) {
      cur += text[i];
      cur += text[++i];
    } else if (text[i] == ',') {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += text[i];
    }
  }
  parts.push_back(cur);
  for (const auto& p : parts) {
    Req r;
    std::size_t pos;
    std::size_t oplen;
    if ((pos = p.find("!=")) != std::string::npos) {
      r.equal = false;
      oplen = 2;
    } else if ((pos = p.find("==")) != std::string::npos) {
      oplen = 2;
    } else if ((pos = p.find('=')) != std::string::npos) {
      oplen = 1;
    } else {
      throw bad_request("invalid selector: '" + text + "'; can't understand '" + p + "'");
    }
    r.field = trim(p.substr(0, pos));
    std::string raw = p.substr(pos + oplen);
    for (std::size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '\\' && i + 1 < raw.size()) ++i;
      r.value += raw[i];
    }
    if (!supported(r.field)) throw bad_request("field label not supported: " + r.field);
    sel.reqs_.push_back(r);
  }
  return sel;
}

bool FieldSelector::matches(const json& obj) const {
  for (const auto& r : reqs_) {
    bool eq = field_value(obj, r.field) == r.value;
    if (eq != r.equal) return false;
  }
  return true;
}

std::optional<std::string> FieldSelector::exact(const std::string& field) const {
  for (const auto& r : reqs_) {
    if (r.field == field && r.equal) return r.value;
  }
  return std::nullopt;
}

}  // namespace kubesim
