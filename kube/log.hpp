#pragma once

// Debug/trace logging of API traffic, with secrets redacted.
//
// The client never logs by itself; give ClientConfig a LogSink to see requests. Whatever reaches
// the sink has gone through these functions: the Authorization header is never shown, and bodies
// of Secrets (and of token requests) never are either.

#include <functional>
#include <string>
#include <string_view>

namespace trainbench::kube {

enum class LogLevel {
  kDebug,  ///< one line per request: method, path, status, duration, retries
  kTrace,  ///< also headers and (redacted) bodies
};

/// Called on whichever thread made the request, possibly on several at once: must be thread-safe.
using LogSink = std::function<void(LogLevel level, const std::string& line)>;

/// The value to show for a header: "<redacted>" for Authorization-like headers
/// (Authorization, Proxy-Authorization, Cookie, Set-Cookie, X-*-Token), else `value`.
std::string redact_header(std::string_view name, std::string_view value);

/// A body as it may be logged. Secrets (kind Secret / SecretList, or any path under
/// `/secrets`), TokenRequests and `/token` subresources become "<redacted: N bytes>"; other JSON
/// is shown with any `data`/`stringData` of embedded Secrets redacted; long bodies are cut.
std::string redact_body(std::string_view path, std::string_view body, std::size_t max_chars = 4096);

}  // namespace trainbench::kube
