#include "schema.hpp"

#include <cmath>
#include <regex>

namespace kubesim {

namespace {

std::string child_path(const std::string& base, const std::string& key) { return base.empty() ? key : base + "." + key; }
std::string index_path(const std::string& base, std::size_t i) { return base + "[" + std::to_string(i) + "]"; }

bool preserves_unknown(const json& s) { return s.is_object() && s.value("x-kubernetes-preserve-unknown-fields", false); }

void apply_defaults(const json& s, json& v) {
  if (!s.is_object()) return;
  if (v.is_object()) {
    if (s.contains("properties") && s["properties"].is_object()) {
      for (auto it = s["properties"].begin(); it != s["properties"].end(); ++it) {
        const json& ps = it.value();
        if (!v.contains(it.key())) {
          if (ps.is_object() && ps.contains("default")) v[it.key()] = ps["default"];
        }
        if (v.contains(it.key())) apply_defaults(ps, v[it.key()]);
      }
    } else if (s.contains("additionalProperties") && s["additionalProperties"].is_object()) {
      for (auto it = v.begin(); it != v.end(); ++it) apply_defaults(s["additionalProperties"], it.value());
    }
  } else if (v.is_array() && s.contains("items") && s["items"].is_object()) {
    for (auto& e : v) apply_defaults(s["items"], e);
  }
}

void prune(const json& s, json& v, const std::string& path, std::vector<std::string>& unknown, bool root) {
  if (!s.is_object()) return;
  if (v.is_object()) {
    bool embedded = s.value("x-kubernetes-embedded-resource", false);
    const json* props = s.contains("properties") && s["properties"].is_object() ? &s["properties"] : nullptr;
    const json* addl = s.contains("additionalProperties") ? &s["additionalProperties"] : nullptr;
    std::vector<std::string> drop;
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string& k = it.key();
      if ((root || embedded) && (k == "apiVersion" || k == "kind" || k == "metadata")) continue;
      std::string p = child_path(path, k);
      if (props && props->contains(k)) {
        const json& ps = (*props)[k];
        if (it.value().is_null() && !(ps.is_object() && ps.value("nullable", false))) {
          drop.push_back(k);
          continue;
        }
        prune(ps, it.value(), p, unknown, false);
      } else if (addl && addl->is_object()) {
        prune(*addl, it.value(), p, unknown, false);
      } else if (addl && addl->is_boolean() && addl->get<bool>()) {
        continue;
      } else if (!preserves_unknown(s)) {
        drop.push_back(k);
        unknown.push_back(p);
      }
    }
    for (const auto& k : drop) v.erase(k);
  } else if (v.is_array() && s.contains("items")) {
    for (std::size_t i = 0; i < v.size(); ++i) prune(s["items"], v[i], index_path(path, i), unknown, false);
  }
}

std::string type_of(const json& v) {
  if (v.is_string()) return "string";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "integer";
  if (v.is_number_float()) {
    double d = v.get<double>();
    return std::floor(d) == d ? "integer" : "number";
  }
  if (v.is_array()) return "array";
  if (v.is_object()) return "object";
  return "null";
}

std::string num_str(const json& n) {
  if (n.is_number_float()) {
    double d = n.get<double>();
    if (std::floor(d) == d && std::fabs(d) < 1e15) return std::to_string(static_cast<long long>(d));
    std::string s = n.dump();
    return s;
  }
  return n.dump();
}

void validate(const json& s, const json& v, const std::string& path, std::vector<FieldError>& errs);

void validate(const json& s, const json& v, const std::string& path, std::vector<FieldError>& errs) {
  if (!s.is_object()) return;
  std::string where = path.empty() ? "body" : path;
  std::string in_body = where + " in body";
  if (v.is_null()) {
    if (s.value("nullable", false)) return;
  }
  bool int_or_string = s.value("x-kubernetes-int-or-string", false);
  if (int_or_string) {
    std::string t = type_of(v);
    if (t != "integer" && t != "string") {
      errs.push_back(invalid_error(path, t, in_body + " must be of type integer,string: \"" + t + "\""));
      return;
    }
  } else if (s.contains("type") && s["type"].is_string()) {
    std::string want = s["type"];
    std::string have = type_of(v);
    bool ok = want == have || (want == "number" && have == "integer");
    if (!ok) {
      errs.push_back(invalid_error(path, have, in_body + " must be of type " + want + ": \"" + have + "\""));
      return;
    }
  }
  if (s.contains("enum") && s["enum"].is_array()) {
    bool found = false;
    for (const auto& e : s["enum"]) found = found || e == v;
    if (!found) {
      std::vector<std::string> valid;
      for (const auto& e : s["enum"]) valid.push_back(e.dump());
      errs.push_back(not_supported_error(path, v, valid));
    }
  }
  if (v.is_number()) {
    double d = v.get<double>();
    if (s.contains("minimum")) {
      double m = s["minimum"].get<double>();
      bool excl = s.value("exclusiveMinimum", false);
      if (excl ? !(d > m) : !(d >= m)) {
        errs.push_back(invalid_error(path, v, in_body + " should be greater than " + std::string(excl ? "" : "or equal to ") +
                                                  num_str(s["minimum"])));
      }
    }
    if (s.contains("maximum")) {
      double m = s["maximum"].get<double>();
      bool excl = s.value("exclusiveMaximum", false);
      if (excl ? !(d < m) : !(d <= m)) {
        errs.push_back(invalid_error(path, v, in_body + " should be less than " + std::string(excl ? "" : "or equal to ") +
                                                  num_str(s["maximum"])));
      }
    }
    if (s.contains("multipleOf")) {
      double m = s["multipleOf"].get<double>();
      if (m != 0 && std::fmod(d, m) != 0) {
        errs.push_back(invalid_error(path, v, in_body + " should be a multiple of " + num_str(s["multipleOf"])));
      }
    }
  }
  if (v.is_string()) {
    const std::string& str = v.get_ref<const std::string&>();
    std::size_t len = 0;
    for (unsigned char c : str) len += (c & 0xC0) != 0x80;  // runes
    if (s.contains("minLength") && len < s["minLength"].get<std::size_t>()) {
      errs.push_back(invalid_error(path, v, in_body + " should be at least " + s["minLength"].dump() + " chars long"));
    }
    if (s.contains("maxLength") && len > s["maxLength"].get<std::size_t>()) {
      errs.push_back({"FieldValueTooLong", path, "Too long: may not be more than " + s["maxLength"].dump() + " bytes"});
    }
    if (s.contains("pattern") && s["pattern"].is_string()) {
      try {
        std::regex re(s["pattern"].get<std::string>(), std::regex::ECMAScript);
        if (!std::regex_search(str, re)) {
          errs.push_back(invalid_error(path, v, in_body + " should match '" + s["pattern"].get<std::string>() + "'"));
        }
      } catch (const std::regex_error&) {
      }
    }
  }
  if (v.is_array()) {
    if (s.contains("minItems") && v.size() < s["minItems"].get<std::size_t>()) {
      errs.push_back(invalid_error(path, static_cast<long long>(v.size()),
                                   in_body + " should have at least " + s["minItems"].dump() + " items"));
    }
    if (s.contains("maxItems") && v.size() > s["maxItems"].get<std::size_t>()) {
      errs.push_back({"FieldValueTooMany", path,
                      "Too many: " + std::to_string(v.size()) + ": must have at most " + s["maxItems"].dump() + " items"});
    }
    if (s.value("uniqueItems", false)) {
      for (std::size_t i = 0; i < v.size(); ++i) {
        for (std::size_t j = 0; j < i; ++j) {
          if (v[i] == v[j]) errs.push_back(duplicate_error(index_path(path, i), v[i]));
        }
      }
    }
    if (s.contains("items")) {
      for (std::size_t i = 0; i < v.size(); ++i) validate(s["items"], v[i], index_path(path, i), errs);
    }
  }
  if (v.is_object()) {
    if (s.contains("required") && s["required"].is_array()) {
      for (const auto& r : s["required"]) {
        if (r.is_string() && !v.contains(r.get<std::string>())) errs.push_back(required_error(child_path(path, r)));
      }
    }
    if (s.contains("minProperties") && v.size() < s["minProperties"].get<std::size_t>()) {
      errs.push_back(invalid_error(path, static_cast<long long>(v.size()),
                                   in_body + " should have at least " + s["minProperties"].dump() + " properties"));
    }
    if (s.contains("maxProperties") && v.size() > s["maxProperties"].get<std::size_t>()) {
      errs.push_back({"FieldValueTooMany", path,
                      "Too many: " + std::to_string(v.size()) + ": must have at most " + s["maxProperties"].dump() + " items"});
    }
    const json* props = s.contains("properties") && s["properties"].is_object() ? &s["properties"] : nullptr;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (path.empty() && (it.key() == "metadata" || it.key() == "apiVersion" || it.key() == "kind")) continue;
      if (props && props->contains(it.key())) {
        validate((*props)[it.key()], it.value(), child_path(path, it.key()), errs);
      } else if (s.contains("additionalProperties") && s["additionalProperties"].is_object()) {
        validate(s["additionalProperties"], it.value(), child_path(path, it.key()), errs);
      }
    }
  }
  if (s.contains("allOf") && s["allOf"].is_array()) {
    for (const auto& sub : s["allOf"]) validate(sub, v, path, errs);
  }
  if (s.contains("anyOf") && s["anyOf"].is_array()) {
    bool any = false;
    for (const auto& sub : s["anyOf"]) {
      std::vector<FieldError> e;
      validate(sub, v, path, e);
      any = any || e.empty();
    }
    if (!any) errs.push_back(invalid_error(path, v, "\"" + where + "\" must validate at least one schema (anyOf)"));
  }
  if (s.contains("oneOf") && s["oneOf"].is_array()) {
    int n = 0;
    for (const auto& sub : s["oneOf"]) {
      std::vector<FieldError> e;
      validate(sub, v, path, e);
      n += e.empty();
    }
    if (n != 1) errs.push_back(invalid_error(path, v, "\"" + where + "\" must validate one and only one schema (oneOf)"));
  }
  if (s.contains("not") && s["not"].is_object()) {
    std::vector<FieldError> e;
    validate(s["not"], v, path, e);
    if (e.empty()) errs.push_back(invalid_error(path, v, in_body + " must not validate the schema (not)"));
  }
}

}  // namespace

void default_and_prune(const json& schema, json& object, std::vector<std::string>& unknown) {
  if (!schema.is_object()) return;
  apply_defaults(schema, object);
  prune(schema, object, "", unknown, true);
}

std::vector<FieldError> validate_against_schema(const json& schema, const json& object) {
  std::vector<FieldError> errs;
  if (schema.is_object()) validate(schema, object, "", errs);
  return errs;
}

}  // namespace kubesim
