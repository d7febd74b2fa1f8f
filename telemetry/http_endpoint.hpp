#pragma once

// A small HTTP/1.1 server for the process's own operational endpoints: /metrics, /healthz,
// /readyz. Boost.Beast, one thread, one connection at a time (Prometheus and kubelet probes use
// one connection per target). Not prometheus-cpp's civetweb exposer: Debian's civetweb starts its
// threads with a fixed 100 KiB stack, and in a process with libtorch loaded (larger static
// thread-local storage) pthread_create fails with EINVAL (docs/observability.md). The operator
// uses the same server so that both binaries answer alike.

#include <functional>
#include <map>
#include <memory>
#include <string>

namespace trainbench::telemetry {

struct HttpReply {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

/// Answers GET (and HEAD) of one path. Called on the server's thread; must be thread-safe
/// with respect to the rest of the program.
using HttpHandler = std::function<HttpReply()>;

/// Splits "HOST:PORT", "[v6]:PORT" or ":PORT" (all interfaces, as Go programs read it).
/// Throws std::invalid_argument naming the address when it is malformed.
struct ListenAddress {
  std::string host;
  unsigned short port = 0;
};
ListenAddress parse_listen_address(const std::string& listen);

class HttpEndpoint {
 public:
  /// Listens on `listen` (port 0 picks a free one) and serves `routes` (path -> handler); any
  /// other path is 404, any other method 405. Throws std::runtime_error naming the address when
  /// it cannot listen.
  HttpEndpoint(const std::string& listen, std::map<std::string, HttpHandler> routes);
  ~HttpEndpoint();
  HttpEndpoint(const HttpEndpoint&) = delete;
  HttpEndpoint& operator=(const HttpEndpoint&) = delete;

  /// The port it listens on.
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trainbench::telemetry
