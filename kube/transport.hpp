#pragma once

// HTTPS transport to the API server, on cpprestsdk (asio) + OpenSSL.
//
// Adds the bearer token, User-Agent and Accept headers, applies the client-side rate limit,
// enforces a deadline per request, never follows redirects (they would carry the token
// elsewhere), retries a 429 (and a 5xx carrying Retry-After) after its Retry-After, and after a
// 401 re-reads a token file once.
// Any HTTP status is returned to the caller; failures to get one throw TransportError.
//
// Thread safety: a Transport is shared by all threads (every method is thread-safe). An
// HttpStream has one reader; cancel() may be called from any thread.

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "kube/config.hpp"
#include "kube/rate_limiter.hpp"
#include "kube/stop_token.hpp"

namespace trainbench::kube {

struct HttpRequest {
  std::string method = "GET";
  std::string path;   ///< encoded, starts with '/': "/api/v1/namespaces/default/pods"
  std::string query;  ///< encoded, without '?': "labelSelector=a%3Db&limit=10"
  std::string body;
  std::string content_type;  ///< required when body is not empty
  std::chrono::milliseconds timeout{0};  ///< whole exchange; 0: ClientConfig::timeout
  StopToken stop;                        ///< cancels waiting (rate limit, retry, answer)
};

struct HttpResponse {
  int status = 0;
  std::string content_type;
  std::string retry_after;  ///< raw Retry-After header, empty when absent
  std::string body;
};

class Transport;

/// A response whose body is read as it arrives (watches).
class HttpStream {
 public:
  ~HttpStream();  // cancels the request if its body was not read to the end
  HttpStream(const HttpStream&) = delete;
  HttpStream& operator=(const HttpStream&) = delete;

  int status() const;
  const std::string& content_type() const;
  /// The next line of the body without its "\n" (and "\r"); false at the clean end of the body.
  /// Blocks until a whole line arrived. Throws TransportError: kCanceled after cancel(), kTimeout
  /// after the idle timeout, kConnect when the connection broke (truncated body), kProtocol for
  /// a line longer than 16 MiB.
  bool read_line(std::string& line);
  /// The rest of the body, at most `limit` bytes (for error answers).
  std::string read_all(std::size_t limit = 1 << 20);
  /// Aborts the request; a blocked read_line() returns by throwing kCanceled. Any thread.
  void cancel();
  /// A function doing cancel() that stays safe to call after this stream is destroyed.
  std::function<void()> canceler() const;

  struct Impl;

 private:
  friend class Transport;
  explicit HttpStream(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class Transport {
 public:
  /// Validates the config (ConfigError) and prepares the TLS material.
  explicit Transport(ClientConfig config, std::shared_ptr<Clock> clock = Clock::steady());
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  /// One exchange (plus the retries described above). Throws TransportError.
  HttpResponse send(const HttpRequest& request);
  /// Sends a request and returns once the response headers arrived (within request.timeout);
  /// the body is then read incrementally, and the connection is dropped when no byte arrived
  /// for `idle_timeout`. Throws TransportError.
  std::unique_ptr<HttpStream> open_stream(const HttpRequest& request, std::chrono::milliseconds idle_timeout);

  const ClientConfig& config() const;
  TokenBucket& rate_limiter();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace trainbench::kube
