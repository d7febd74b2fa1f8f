#pragma once

// API errors as kube-apiserver reports them: a metav1.Status body with code, reason, message
// and details (name, group, kind, causes), in the real server's message formats.

#include <exception>
#include <string>
#include <vector>

#include "util.hpp"

namespace kubesim {

/// One field error (field.Error): `field: body`, e.g. "spec.sweep: Required value".
struct FieldError {
  std::string reason;  ///< cause reason: FieldValueRequired, FieldValueInvalid, FieldValueNotSupported, ...
  std::string field;
  std::string body;    ///< "Required value", "Invalid value: 0: ...", "Unsupported value: ..."
  std::string str() const { return field.empty() ? body : field + ": " + body; }
};

FieldError required_error(const std::string& field, const std::string& detail = "");
FieldError invalid_error(const std::string& field, const json& value, const std::string& detail);
FieldError not_supported_error(const std::string& field, const json& value, const std::vector<std::string>& valid);
FieldError forbidden_error(const std::string& field, const std::string& detail);
FieldError duplicate_error(const std::string& field, const json& value);
/// How field.Invalid prints a value: strings quoted, numbers and booleans bare.
std::string format_field_value(const json& value);

/// An error with an HTTP status and a Status object.
class ApiError : public std::exception {
 public:
  ApiError(int code, std::string reason, std::string message, json details = nullptr);
  int code() const { return code_; }
  const std::string& reason() const { return reason_; }
  const std::string& message() const { return message_; }
  json status() const;
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  int code_;
  std::string reason_;
  std::string message_;
  json details_;
};

/// "pods" or "roles.rbac.authorization.k8s.io".
std::string qualified_resource(const std::string& group, const std::string& resource);
/// "Pod" or "BenchmarkJob.trainbench.dev".
std::string qualified_kind(const std::string& group, const std::string& kind);

json success_status(const json& details = nullptr);

ApiError not_found(const std::string& group, const std::string& resource, const std::string& name);
ApiError already_exists(const std::string& group, const std::string& resource, const std::string& name);
ApiError conflict(const std::string& group, const std::string& resource, const std::string& name,
                  const std::string& why);
ApiError stale_conflict(const std::string& group, const std::string& resource, const std::string& name);
ApiError invalid(const std::string& group, const std::string& kind, const std::string& name,
                 const std::vector<FieldError>& errors);
ApiError bad_request(const std::string& message);
ApiError forbidden(const std::string& group, const std::string& resource, const std::string& name,
                   const std::string& why);
ApiError unauthorized();
ApiError method_not_supported(const std::string& resource_qualified, const std::string& verb);
ApiError unsupported_media_type(const std::string& content_type, const std::vector<std::string>& accepted);
ApiError expired(const std::string& message);
ApiError internal_error(const std::string& message);
ApiError not_acceptable(const std::string& message);
ApiError plain_not_found();

}  // namespace kubesim
