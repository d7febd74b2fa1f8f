#pragma once

// A small HTTPS/1.1 server on Boost.Beast: one thread per connection (synchronous), keep-alive,
// plain responses and chunked streams (watches, followed logs); optionally requiring a client
// certificate signed by a given CA (the node agent's log endpoint, as a kubelet's).

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace noderuntime {

struct HttpRequest {
  std::string method;  ///< "GET", "POST", ...
  std::string target;  ///< raw request target
  std::string path;    ///< decoded path, no query
  std::multimap<std::string, std::string> query;    ///< decoded
  std::multimap<std::string, std::string> headers;  ///< names lower-cased
  std::string body;
  std::string remote;  ///< peer address
  /// The verified client certificate's subject CN and O values (with a client CA only).
  std::string client_cn;
  std::vector<std::string> client_orgs;

  std::string param(const std::string& key, const std::string& def = "") const;
  bool has_param(const std::string& key) const;
  std::string header(const std::string& lower_name) const;
  std::vector<std::string> header_all(const std::string& lower_name) const;
};

using HeaderList = std::vector<std::pair<std::string, std::string>>;

/// How a handler answers: either `send` once, or `start_stream` + chunks + `end_stream`.
class HttpResponder {
 public:
  virtual ~HttpResponder() = default;
  virtual void send(int status, const std::string& content_type, const std::string& body,
                    const HeaderList& headers = {}) = 0;
  virtual bool start_stream(int status, const std::string& content_type, const HeaderList& headers = {}) = 0;
  /// False once the peer is gone.
  virtual bool write_chunk(const std::string& data) = 0;
  virtual void end_stream() = 0;
  /// Whether the peer has closed its side (checked without blocking).
  virtual bool peer_closed() = 0;
  virtual bool answered() const = 0;
  /// Drops the connection at once with a TCP reset (SO_LINGER 0), whatever was sent so far.
  virtual void reset_connection() = 0;
};

using HttpHandler = std::function<void(const HttpRequest&, HttpResponder&)>;

class HttpsServer {
 public:
  /// Binds `host:port` (port 0: any free port); throws on failure. With `client_ca_file`, every
  /// connection must present a client certificate that CA signed (else the handshake fails).
  HttpsServer(const std::string& host, unsigned short port, const std::string& cert_chain_file,
              const std::string& key_file, HttpHandler handler, const std::string& client_ca_file = "");
  ~HttpsServer();
  HttpsServer(const HttpsServer&) = delete;
  HttpsServer& operator=(const HttpsServer&) = delete;

  unsigned short port() const;
  /// Starts the accept thread.
  void start();
  /// Stops accepting (open connections are left to the process's exit).
  void stop();
  int open_connections() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace noderuntime
