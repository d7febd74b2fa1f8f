#pragma once

// A scripted HTTPS server for the client's unit tests (plain sockets + OpenSSL, one thread per
// connection). Each request goes to a handler that answers through a FakeConnection, which can
// also send raw bytes: malformed JSON, wrong content types, truncated chunked streams, delays.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "test_pki.hpp"

struct ssl_st;
struct ssl_ctx_st;

namespace kubetest {

struct FakeRequest {
  std::string method;
  std::string path;
  std::string query;  ///< raw, without '?'
  std::map<std::string, std::string> headers;  ///< names lower-cased
  std::string body;
  std::string client_cn;  ///< CN of the client certificate, when one was presented

  std::string header(const std::string& lower_name) const;
  /// The decoded value of a query parameter ("" when absent).
  std::string param(const std::string& key) const;
};

class FakeApiServer;

class FakeConnection {
 public:
  /// Raw bytes; false once the peer is gone or the server stops.
  bool write(std::string_view bytes);
  bool respond(int status, std::string_view body, std::string_view content_type = "application/json",
               const std::vector<std::pair<std::string, std::string>>& headers = {});
  bool start_chunked(int status, std::string_view content_type = "application/json");
  bool chunk(std::string_view data);
  bool end_chunked();
  /// Close the connection once the handler returns (no keep-alive).
  void close_after() { close_after_ = true; }
  /// Sleeps up to `d`; true (early) when the server is stopping.
  bool sleep(std::chrono::milliseconds d) const;
  bool stopping() const;

 private:
  friend class FakeApiServer;
  FakeConnection(FakeApiServer* server, ssl_st* ssl) : server_(server), ssl_(ssl) {}
  FakeApiServer* server_;
  ssl_st* ssl_;
  bool close_after_ = false;
};

struct FakeServerOptions {
  KeyPair server_cert = test_pki().server;
  std::string client_ca_pem;  ///< non-empty: require a client certificate signed by it
  int port = 0;               ///< 0: any free port
};

class FakeApiServer {
 public:
  using Handler = std::function<void(const FakeRequest&, FakeConnection&)>;
  explicit FakeApiServer(Handler handler, FakeServerOptions options = {});
  ~FakeApiServer();
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }
  std::vector<FakeRequest> requests() const;
  std::size_t request_count() const;
  /// Stops accepting, drops open connections, joins every thread (idempotent).
  void stop();

 private:
  friend class FakeConnection;
  void accept_loop();
  void serve(int fd);

  Handler handler_;
  ssl_ctx_st* ctx_ = nullptr;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  std::condition_variable stop_cv_;
  std::vector<FakeRequest> requests_;
  std::vector<int> open_fds_;
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

/// A minimal Status body as kube-apiserver sends it.
std::string status_json(int code, const std::string& reason, const std::string& message);

}  // namespace kubetest
