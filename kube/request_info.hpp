#pragma once

// What a request to the Kubernetes API is, in the API server's own terms (its audit log and
// RBAC use the same words): the verb and the resource. Used to label the operator's request
// metrics with bounded values.

#include <functional>
#include <string>

namespace trainbench::kube {

struct RequestInfo {
  /// get list watch create update patch delete deletecollection; for non-resource paths
  /// (/api, /apis/..., /version, /openapi) the lowercase HTTP method.
  std::string verb;
  /// "pods", "benchmarkjobs/status", "leases"...; "" for non-resource paths.
  std::string resource;
};

/// `path` without the query; `query` the encoded query string (watch=true makes a GET a watch).
RequestInfo classify_request(const std::string& method, const std::string& path, const std::string& query);

/// One finished exchange: what it was, the HTTP status (0: no answer: timeout, connection or
/// TLS failure) and how long it took (for a watch: until the response headers).
struct RequestRecord {
  RequestInfo info;
  int code = 0;
  double seconds = 0;
};

/// Called on the requesting thread, possibly on several at once: must be thread-safe.
using RequestObserver = std::function<void(const RequestRecord&)>;

}  // namespace trainbench::kube
