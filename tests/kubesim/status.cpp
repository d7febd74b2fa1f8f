#include "status.hpp"

#include <sstream>

namespace kubesim {

std::string format_field_value(const json& value) {
  if (value.is_string()) return json(value.get<std::string>()).dump();
  if (value.is_number() || value.is_boolean()) return value.dump();
  if (value.is_null()) return "null";
  if (value.is_object()) return "\"object\"";
  if (value.is_array()) return "\"array\"";
  return value.dump();
}

FieldError required_error(const std::string& field, const std::string& detail) {
  return {"FieldValueRequired", field, detail.empty() ? "Required value" : "Required value: " + detail};
}

FieldError invalid_error(const std::string& field, const json& value, const std::string& detail) {
  std::string body = "Invalid value: " + format_field_value(value);
  if (!detail.empty()) body += ": " + detail;
  return {"FieldValueInvalid", field, body};
}

FieldError not_supported_error(const std::string& field, const json& value, const std::vector<std::string>& valid) {
  std::string body = "Unsupported value: " + format_field_value(value);
  if (!valid.empty()) {
    body += ": supported values: ";
    for (std::size_t i = 0; i < valid.size(); ++i) {
      if (i) body += ", ";
      body += valid[i];
    }
  }
  return {"FieldValueNotSupported", field, body};
}

FieldError forbidden_error(const std::string& field, const std::string& detail) {
  return {"FieldValueForbidden", field, "Forbidden: " + detail};
}

FieldError duplicate_error(const std::string& field, const json& value) {
  return {"FieldValueDuplicate", field, "Duplicate value: " + format_field_value(value)};
}

ApiError::ApiError(int code, std::string reason, std::string message, json details)
    : code_(code), reason_(std::move(reason)), message_(std::move(message)), details_(std::move(details)) {}

json ApiError::status() const {
  json s = {{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", json::object()}, {"status", "Failure"},
            {"message", message_}};
  if (!reason_.empty()) s["reason"] = reason_;
  if (!details_.is_null()) s["details"] = details_;
  s["code"] = code_;
  return s;
}

std::string qualified_resource(const std::string& group, const std::string& resource) {
  return group.empty() ? resource : resource + "." + group;
}

std::string qualified_kind(const std::string& group, const std::string& kind) {
  return group.empty() ? kind : kind + "." + group;
}

json success_status(const json& details) {
  json s = {{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", json::object()}, {"status", "Success"}};
  if (!details.is_null()) s["details"] = details;
  return s;
}

namespace {
json details_of(const std::string& group, const std::string& kind, const std::string& name) {
  json d = json::object();
  if (!name.empty()) d["name"] = name;
  if (!group.empty()) d["group"] = group;
  d["kind"] = kind;
  return d;
}
}  // namespace

ApiError not_found(const std::string& group, const std::string& resource, const std::string& name) {
  return ApiError(404, "NotFound", qualified_resource(group, resource) + " \"" + name + "\" not found",
                  details_of(group, resource, name));
}

ApiError already_exists(const std::string& group, const std::string& resource, const std::string& name) {
  return ApiError(409, "AlreadyExists", qualified_resource(group, resource) + " \"" + name + "\" already exists",
                  details_of(group, resource, name));
}

ApiError conflict(const std::string& group, const std::string& resource, const std::string& name,
                  const std::string& why) {
  return ApiError(409, "Conflict",
                  "Operation cannot be fulfilled on " + qualified_resource(group, resource) + " \"" + name + "\": " + why,
                  details_of(group, resource, name));
}

ApiError stale_conflict(const std::string& group, const std::string& resource, const std::string& name) {
  return conflict(group, resource, name,
                  "the object has been modified; please apply your changes to the latest version and try again");
}

ApiError invalid(const std::string& group, const std::string& kind, const std::string& name,
                 const std::vector<FieldError>& errors) {
  json causes = json::array();
  for (const auto& e : errors) {
    json c = {{"reason", e.reason}, {"message", e.body}};
    if (!e.field.empty()) c["field"] = e.field;
    causes.push_back(c);
  }
  std::string list;
  if (errors.size() == 1) {
    list = errors[0].str();
  } else {
    list = "[";
    for (std::size_t i = 0; i < errors.size(); ++i) {
      if (i) list += ", ";
      list += errors[i].str();
    }
    list += "]";
  }
  json d = details_of(group, kind, name);
  d["causes"] = causes;
  return ApiError(422, "Invalid", qualified_kind(group, kind) + " \"" + name + "\" is invalid: " + list, d);
}

ApiError bad_request(const std::string& message) { return ApiError(400, "BadRequest", message); }

ApiError forbidden(const std::string& group, const std::string& resource, const std::string& name,
                   const std::string& why) {
  std::string subject = qualified_resource(group, resource);
  if (!name.empty()) subject += " \"" + name + "\"";
  return ApiError(403, "Forbidden", subject + " is forbidden: " + why, details_of(group, resource, name));
}

ApiError unauthorized() { return ApiError(401, "Unauthorized", "Unauthorized"); }

ApiError method_not_supported(const std::string& resource_qualified, const std::string& verb) {
  return ApiError(405, "MethodNotAllowed", verb + " is not supported on resources of kind \"" + resource_qualified + "\"",
                  json{{"kind", resource_qualified}});
}

ApiError unsupported_media_type(const std::string& content_type, const std::vector<std::string>& accepted) {
  std::string list;
  for (std::size_t i = 0; i < accepted.size(); ++i) {
    if (i) list += ", ";
    list += accepted[i];
  }
  (void)content_type;
  return ApiError(415, "UnsupportedMediaType",
                  "the body of the request was in an unknown format - accepted media types include: " + list);
}

ApiError expired(const std::string& message) { return ApiError(410, "Expired", message); }

ApiError internal_error(const std::string& message) {
  return ApiError(500, "InternalError", "Internal error occurred: " + message,
                  json{{"causes", json::array({json{{"message", message}}})}});
}

ApiError not_acceptable(const std::string& message) { return ApiError(406, "NotAcceptable", message); }

ApiError plain_not_found() {
  return ApiError(404, "NotFound", "the server could not find the requested resource",
                  json{{"causes", json::array({json{{"reason", "UnexpectedServerResponse"}, {"message", "404 page not found"}}})}});
}

}  // namespace kubesim
