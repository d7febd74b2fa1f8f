#include "kube/errors.hpp"

#include <cctype>
#include <memory>
#include <utility>

#include "kube/json_depth.hpp"

namespace trainbench::kube {
namespace {

std::string string_field(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return {};
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return {};
  return it->get<std::string>();
}

int int_field(const nlohmann::json& j, const char* key, int fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return fallback;
  const auto v = it->get<long long>();
  if (v < 0 || v > 1000000) return fallback;
  return static_cast<int>(v);
}

// Keeps error messages short and printable: the start of a body that is not a Status.
std::string printable_prefix(std::string_view body, std::size_t limit = 200) {
  std::string out;
  for (char c : body.substr(0, limit)) {
    const auto u = static_cast<unsigned char>(c);
    out += (u == '\n' || u == '\r' || u == '\t') ? ' ' : (u < 0x20 || u == 0x7f) ? '?' : c;
  }
  if (body.size() > limit) out += "...";
  return out;
}

const char* default_reason(int code) {
  switch (code) {
    case 400: return "BadRequest";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 406: return "NotAcceptable";
    case 409: return "Conflict";
    case 410: return "Expired";
    case 413: return "RequestEntityTooLarge";
    case 415: return "UnsupportedMediaType";
    case 422: return "Invalid";
    case 429: return "TooManyRequests";
    case 500: return "InternalError";
    case 503: return "ServiceUnavailable";
    case 504: return "Timeout";
    default: return code >= 500 ? "InternalError" : "Unknown";
  }
}

std::chrono::seconds parse_retry_after(std::string_view header) {
  // Kubernetes sends delta-seconds; an HTTP-date is ignored (treated as absent).
  while (!header.empty() && header.front() == ' ') header.remove_prefix(1);
  while (!header.empty() && header.back() == ' ') header.remove_suffix(1);
  if (header.empty() || header.size() > 9) return std::chrono::seconds(0);
  long v = 0;
  for (char c : header) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::chrono::seconds(0);
    v = v * 10 + (c - '0');
  }
  return std::chrono::seconds(v);
}

struct Fields {
  int code;
  std::string reason;
  std::string message;
  StatusDetails details;
  std::string request;
  std::chrono::seconds retry_after;
};

template <typename T>
std::exception_ptr make_typed(Fields& f) {
  return std::make_exception_ptr(T(f.code, std::move(f.reason), std::move(f.message), std::move(f.details),
                                   std::move(f.request), f.retry_after));
}

std::exception_ptr build(Fields f) {
  if (f.reason.empty()) f.reason = default_reason(f.code);
  if (f.retry_after.count() == 0 && f.details.retry_after_seconds > 0) {
    f.retry_after = std::chrono::seconds(f.details.retry_after_seconds);
  }
  switch (f.code) {
    case 401: return make_typed<UnauthorizedError>(f);
    case 403: return make_typed<ForbiddenError>(f);
    case 404: return make_typed<NotFoundError>(f);
    case 409: return make_typed<ConflictError>(f);
    case 410: return make_typed<GoneError>(f);
    case 422: return make_typed<InvalidError>(f);
    case 429: return make_typed<TooManyRequestsError>(f);
    default: break;
  }
  if (f.code >= 500 && f.code <= 599) return make_typed<ServerError>(f);
  return make_typed<ApiError>(f);
}

std::string compose_what(int code, const std::string& reason, const std::string& message, const std::string& request,
                         const StatusDetails& details) {
  std::string what;
  if (!request.empty()) what = request + ": ";
  what += std::to_string(code) + " " + reason;
  if (!message.empty()) what += ": " + message;
  for (const auto& cause : details.causes) {
    what += "\n  ";
    if (!cause.field.empty()) what += cause.field + ": ";
    what += cause.message.empty() ? cause.reason : cause.message;
  }
  return what;
}

}  // namespace

TransportError::TransportError(Kind kind, const std::string& message) : KubeError(message), kind_(kind) {}

const char* to_string(TransportError::Kind kind) {
  switch (kind) {
    case TransportError::Kind::kConnect: return "connect";
    case TransportError::Kind::kTls: return "tls";
    case TransportError::Kind::kTimeout: return "timeout";
    case TransportError::Kind::kCanceled: return "canceled";
    case TransportError::Kind::kProtocol: return "protocol";
  }
  return "unknown";
}

ApiError::ApiError(int code, std::string reason, std::string message, StatusDetails details, std::string request,
                   std::chrono::seconds retry_after)
    : KubeError(compose_what(code, reason, message, request, details)),
      code_(code),
      reason_(std::move(reason)),
      message_(std::move(message)),
      details_(std::move(details)),
      request_(std::move(request)),
      retry_after_(retry_after) {}

StatusDetails parse_status_details(const nlohmann::json& details) {
  StatusDetails out;
  if (!details.is_object()) return out;
  out.name = string_field(details, "name");
  out.group = string_field(details, "group");
  out.kind = string_field(details, "kind");
  out.uid = string_field(details, "uid");
  out.retry_after_seconds = int_field(details, "retryAfterSeconds", 0);
  auto causes = details.find("causes");
  if (causes != details.end() && causes->is_array()) {
    for (const auto& c : *causes) {
      if (!c.is_object()) continue;
      out.causes.push_back({string_field(c, "reason"), string_field(c, "message"), string_field(c, "field")});
    }
  }
  return out;
}

std::exception_ptr make_api_error(int http_code, std::string_view body, std::string_view retry_after_header,
                                  std::string_view request) {
  const auto retry_after = parse_retry_after(retry_after_header);
  // Too deep for any API server: shown like a body that is not JSON (see json_depth.hpp).
  nlohmann::json status = json_nesting_exceeds(body) ? nlohmann::json()
                                                     : nlohmann::json::parse(body.begin(), body.end(), nullptr,
                                                                             /*allow_exceptions=*/false);
  if (status.is_object() && string_field(status, "kind") == "Status") {
    auto details = status.find("details");
    return build({http_code, string_field(status, "reason"), string_field(status, "message"),
                  details != status.end() ? parse_status_details(*details) : StatusDetails{}, std::string(request),
                  retry_after});
  }
  std::string message;
  if (status.is_object()) message = string_field(status, "message");
  if (message.empty()) message = printable_prefix(body);
  return build({http_code, {}, std::move(message), {}, std::string(request), retry_after});
}

std::exception_ptr make_api_error_from_status(const nlohmann::json& status, std::string_view request) {
  int code = int_field(status, "code", 500);
  if (code < 400 || code > 599) code = 500;
  StatusDetails details;
  if (status.is_object()) {
    auto it = status.find("details");
    if (it != status.end()) details = parse_status_details(*it);
  }
  std::string message = string_field(status, "message");
  if (message.empty() && !status.is_object()) message = printable_prefix(status.dump());
  return build({code, string_field(status, "reason"), std::move(message), std::move(details), std::string(request),
                std::chrono::seconds(0)});
}

}  // namespace trainbench::kube
