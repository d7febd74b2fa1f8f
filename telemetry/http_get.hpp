#pragma once

// A plain HTTP/1.1 GET with a deadline and a bounded body, for the operator's reads of what its
// pods serve (a run's progress: docs/operator.md, "Progress"). Boost.Beast, as the server
// (http_endpoint.hpp); no TLS: the data read so is as public as /metrics.

#include <chrono>
#include <optional>
#include <string>

namespace trainbench::telemetry {

struct HttpGetResult {
  int status = 0;
  std::string body;
};

/// GET http://host:port/path; connect, send and read all within `deadline`. nullopt (and `why`
/// set, when given) if it could not be read: refused, timed out, malformed, or a body over
/// `max_body_bytes`.
std::optional<HttpGetResult> http_get(const std::string& host, int port, const std::string& path,
                                      std::chrono::milliseconds deadline, std::size_t max_body_bytes = 64 * 1024,
                                      std::string* why = nullptr);

}  // namespace trainbench::telemetry
