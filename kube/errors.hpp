#pragma once

// Typed errors of the Kubernetes client.
//
//   KubeError                     base of everything this library throws
//   +- ConfigError                kubeconfig / in-cluster configuration; names the file and field
//   +- TransportError             no usable HTTP answer: connect, TLS, timeout, canceled, malformed
//   +- ApiError                   the server answered with an error status (a Kubernetes Status)
//      +- UnauthorizedError 401, ForbiddenError 403, NotFoundError 404, ConflictError 409
//      +- GoneError 410, InvalidError 422, TooManyRequestsError 429, ServerError 5xx
//
// Messages never contain credentials: requests are named by method and path only.

#include <chrono>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainbench::kube {

class KubeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A configuration problem. what() is "<file>: <field>: <problem>".
class ConfigError : public KubeError {
 public:
  using KubeError::KubeError;
};

/// The request got no usable answer.
class TransportError : public KubeError {
 public:
  enum class Kind {
    kConnect,   ///< resolve / connect / connection lost
    kTls,       ///< handshake or certificate verification failed
    kTimeout,   ///< the request's deadline passed
    kCanceled,  ///< stopped through a StopToken
    kProtocol,  ///< malformed answer: bad JSON, wrong content type, truncated stream
  };
  TransportError(Kind kind, const std::string& message);
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

const char* to_string(TransportError::Kind kind);

/// One entry of Status.details.causes (field causes of a 422).
struct StatusCause {
  std::string reason;   ///< e.g. FieldValueInvalid
  std::string message;
  std::string field;    ///< e.g. spec.replicas
};

/// Status.details.
struct StatusDetails {
  std::string name;
  std::string group;
  std::string kind;
  std::string uid;
  std::vector<StatusCause> causes;
  int retry_after_seconds = 0;
};

/// The server answered with an error. code() is the HTTP status (or Status.code of a watch ERROR
/// event); reason() is Status.reason (NotFound, AlreadyExists, Conflict, Expired, Invalid, ...).
class ApiError : public KubeError {
 public:
  ApiError(int code, std::string reason, std::string message, StatusDetails details, std::string request,
           std::chrono::seconds retry_after);

  int code() const { return code_; }
  const std::string& reason() const { return reason_; }
  /// Status.message (or the start of a non-Status body).
  const std::string& status_message() const { return message_; }
  const StatusDetails& details() const { return details_; }
  /// "GET /api/v1/namespaces/x/pods/y" (no query, no credentials); empty for watch events.
  const std::string& request() const { return request_; }
  /// From the Retry-After header, else details.retryAfterSeconds; 0 when neither was given.
  std::chrono::seconds retry_after() const { return retry_after_; }

  bool is_unauthorized() const { return code_ == 401; }
  bool is_forbidden() const { return code_ == 403; }
  bool is_not_found() const { return code_ == 404; }
  bool is_conflict() const { return code_ == 409 && reason_ != "AlreadyExists"; }
  bool is_already_exists() const { return code_ == 409 && reason_ == "AlreadyExists"; }
  bool is_gone() const { return code_ == 410; }
  bool is_invalid() const { return code_ == 422; }
  bool is_too_many_requests() const { return code_ == 429; }
  bool is_server_error() const { return code_ >= 500; }

 private:
  int code_;
  std::string reason_;
  std::string message_;
  StatusDetails details_;
  std::string request_;
  std::chrono::seconds retry_after_;
};

#define TRAINBENCH_KUBE_API_ERROR(Name) \
  class Name : public ApiError {        \
   public:                              \
    using ApiError::ApiError;           \
  };
TRAINBENCH_KUBE_API_ERROR(UnauthorizedError)    // 401
TRAINBENCH_KUBE_API_ERROR(ForbiddenError)       // 403
TRAINBENCH_KUBE_API_ERROR(NotFoundError)        // 404
TRAINBENCH_KUBE_API_ERROR(ConflictError)        // 409: Conflict (stale resourceVersion) or AlreadyExists
TRAINBENCH_KUBE_API_ERROR(GoneError)            // 410: Gone / Expired (resourceVersion too old)
TRAINBENCH_KUBE_API_ERROR(InvalidError)         // 422: details().causes name the fields
TRAINBENCH_KUBE_API_ERROR(TooManyRequestsError) // 429: retry_after()
TRAINBENCH_KUBE_API_ERROR(ServerError)          // 5xx
#undef TRAINBENCH_KUBE_API_ERROR

/// Builds the ApiError subclass for an HTTP error answer. `body` may be a Status, other JSON or
/// anything else (only its start is kept). `retry_after_header` is the raw Retry-After value.
std::exception_ptr make_api_error(int http_code, std::string_view body, std::string_view retry_after_header,
                                  std::string_view request);

/// Builds the ApiError subclass from a Status object (e.g. a watch ERROR event's object); the code
/// is Status.code (500 when absent).
std::exception_ptr make_api_error_from_status(const nlohmann::json& status, std::string_view request = {});

/// Parses Status.details; tolerant of missing or mistyped fields.
StatusDetails parse_status_details(const nlohmann::json& details);

}  // namespace trainbench::kube
