#pragma once

// Label selectors (=, ==, !=, in, notin, exists, !key, >, <) and field selectors (=, ==, !=)
// with the API server's syntax and error messages.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "util.hpp"

namespace kubesim {

class LabelSelector {
 public:
  /// Throws ApiError 400 on a syntax error ("unable to parse requirement: ...").
  static LabelSelector parse(const std::string& text);
  /// From a metav1.LabelSelector object (matchLabels / matchExpressions).
  static LabelSelector from_object(const json& selector);
  /// A Service-style selector map: every key must equal.
  static LabelSelector from_map(const json& labels);
  bool matches(const json& labels) const;
  bool empty() const { return reqs_.empty(); }

 private:
  struct Req {
    std::string key;
    std::string op;  ///< "=", "!=", "in", "notin", "exists", "!", "gt", "lt"
    std::vector<std::string> values;
  };
  std::vector<Req> reqs_;
};

class FieldSelector {
 public:
  /// `supported(field)` says whether the resource supports the field label; unknown labels give
  /// ApiError 400 "field label not supported: X".
  static FieldSelector parse(const std::string& text, const std::function<bool(const std::string&)>& supported);
  /// `value_of(obj, field)` gives the field's value as a string.
  bool matches(const json& obj) const;
  bool empty() const { return reqs_.empty(); }
  /// The name when the selector pins metadata.name=X.
  std::optional<std::string> exact(const std::string& field) const;

 private:
  struct Req {
    std::string field;
    bool equal = true;
    std::string value;
  };
  std::vector<Req> reqs_;
};

/// A field value as the field selector sees it (missing -> "").
std::string field_value(const json& obj, const std::string& field);

}  // namespace kubesim
