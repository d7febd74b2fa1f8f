#pragma once
// The BenchmarkJob CRD's openAPIV3Schema as valijson (JSON Schema draft 4) checks it, with what
// the API server enforces beyond the schema under kubectl's default --validate=strict. Shared by
// tests/crd and tests/cli's differential test. Header-only.

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainbench::testing_schema {

using nlohmann::json;

/// The schema plus what the API server enforces beyond it with kubectl's default
/// --validate=strict (field validation Strict): unknown fields are errors, not pruned. So every
/// object schema with properties and without x-kubernetes-preserve-unknown-fields gets
/// additionalProperties: false, except metadata (ObjectMeta, validated by the server itself).
/// `format` is dropped: the API server does not check int32/int64 there, and valijson would
/// apply date-time to non-strings.
inline json strict_schema(json s, bool is_root = false, bool is_metadata = false) {
  if (!s.is_object()) return s;
  s.erase("format");
  const bool preserve = s.value("x-kubernetes-preserve-unknown-fields", false);
  if (s.contains("properties")) {
    for (auto& [key, sub] : s["properties"].items()) sub = strict_schema(sub, false, is_root && key == "metadata");
    if (!preserve && !is_metadata) s["additionalProperties"] = false;
  }
  if (s.contains("additionalProperties") && s["additionalProperties"].is_object()) {
    s["additionalProperties"] = strict_schema(s["additionalProperties"]);
  }
  if (s.contains("items")) s["items"] = strict_schema(s["items"]);
  for (const char* junctor : {"anyOf", "allOf", "oneOf"}) {
    if (s.contains(junctor)) {
      for (auto& sub : s[junctor]) sub = strict_schema(sub);
    }
  }
  return s;
}

/// "spec.sweep[0].nodes" from valijson's ["<root>", "[spec]", "[sweep]", "[0]", "[nodes]"].
inline std::string context_path(const std::vector<std::string>& context) {
  static const std::regex kIndex("\\[[0-9]+\\]");
  std::string out;
  for (const auto& part : context) {
    if (part == "<root>") continue;
    if (std::regex_match(part, kIndex)) {
      out += part;
    } else {
      const std::string name = part.size() >= 2 && part.front() == '[' ? part.substr(1, part.size() - 2) : part;
      out += (out.empty() ? "" : ".") + name;
    }
  }
  return out;
}

struct SchemaError {
  std::string path;
  std::string message;
};

class SchemaValidator {
 public:
  explicit SchemaValidator(const json& openapi_schema) : doc_(strict_schema(openapi_schema, true)) {
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft4);
    valijson::adapters::NlohmannJsonAdapter adapter(doc_);
    parser.populateSchema(adapter, schema_);
  }

  std::vector<SchemaError> errors(const json& doc) const {
    valijson::Validator validator;
    valijson::ValidationResults results;
    valijson::adapters::NlohmannJsonAdapter target(doc);
    validator.validate(schema_, target, &results);
    std::vector<SchemaError> out;
    valijson::ValidationResults::Error e;
    while (results.popError(e)) out.push_back({context_path(e.context), e.description});
    return out;
  }

  static std::string str(const std::vector<SchemaError>& errors) {
    std::string out;
    for (const auto& e : errors) out += "  " + (e.path.empty() ? "<root>" : e.path) + ": " + e.message + "\n";
    return out;
  }

 private:
  json doc_;
  valijson::Schema schema_;
};

}  // namespace trainbench::testing_schema
