#include "telemetry/http_endpoint.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <list>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace trainbench::telemetry {

ListenAddress parse_listen_address(const std::string& listen) {
  const auto colon = listen.rfind(':');
  if (colon == std::string::npos) throw std::invalid_argument("\"" + listen + "\": expected HOST:PORT");
  ListenAddress out;
  out.host = listen.substr(0, colon);
  if (out.host.size() >= 2 && out.host.front() == '[' && out.host.back() == ']') {
    out.host = out.host.substr(1, out.host.size() - 2);
  }
  if (out.host.empty()) out.host = "0.0.0.0";
  const std::string port = listen.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port) > 65535) {
    throw std::invalid_argument("\"" + listen + "\": the port must be a number from 0 to 65535");
  }
  out.port = static_cast<unsigned short>(std::stoi(port));
  return out;
}

struct HttpEndpoint::Impl {
  /// One client connection, served on its own thread (Prometheus keeps its scrape connection
  /// open between scrapes; a probe or a second scraper must not wait behind it).
  struct Connection {
    explicit Connection(boost::asio::io_context& io) : socket(io) {}
    boost::asio::ip::tcp::socket socket;
    std::thread thread;
    std::atomic<bool> finished{false};
  };
  static constexpr std::size_t kMaxConnections = 32;

  std::map<std::string, HttpHandler> routes;
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor acceptor{io};
  std::thread thread;
  std::atomic<bool> stopping{false};
  int port = 0;
  std::mutex mutex;  ///< guards connections
  std::list<std::unique_ptr<Connection>> connections;

  HttpReply answer(const std::string& target, boost::beast::http::verb method) const {
    namespace http = boost::beast::http;
    const auto route = routes.find(target);
    if (route == routes.end()) return {404, "text/plain; charset=utf-8", "not found: " + target + "\n"};
    if (method != http::verb::get && method != http::verb::head) {
      return {405, "text/plain; charset=utf-8", "only GET and HEAD\n"};
    }
    try {
      return route->second();
    } catch (const std::exception& e) {
      return {500, "text/plain; charset=utf-8", std::string("error: ") + e.what() + "\n"};
    }
  }

  void serve_connection(Connection& c) {
    namespace http = boost::beast::http;
    try {
      boost::beast::flat_buffer buffer;
      while (!stopping) {  // keep-alive: answer requests until the client closes
        http::request<http::string_body> req;
        http::read(c.socket, buffer, req);
        std::string target(req.target());
        target = target.substr(0, target.find('?'));
        HttpReply reply = answer(target, req.method());
        http::response<http::string_body> res;
        res.version(req.version());
        res.keep_alive(req.keep_alive());
        res.result(static_cast<unsigned>(reply.status));
        res.set(http::field::content_type, reply.content_type);
        if (reply.status == 405) res.set(http::field::allow, "GET, HEAD");
        res.body() = std::move(reply.body);
        res.prepare_payload();
        if (req.method() == http::verb::head) res.body().clear();
        http::write(c.socket, res);
        if (!res.keep_alive()) break;
      }
    } catch (const std::exception&) {
      // The client went away, sent garbage, or the endpoint is stopping: drop the connection.
    }
    boost::system::error_code ec;
    c.socket.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    c.finished = true;
  }

  /// Joins the threads of connections that have ended. Caller holds `mutex`.
  void reap() {
    for (auto it = connections.begin(); it != connections.end();) {
      if ((*it)->finished) {
        (*it)->thread.join();
        it = connections.erase(it);
      } else {
        ++it;
      }
    }
  }

  void serve() {
    while (!stopping) {
      auto c = std::make_unique<Connection>(io);
      boost::system::error_code ec;
      acceptor.accept(c->socket, ec);
      if (ec || stopping) {
        if (stopping || ec == boost::asio::error::operation_aborted || ec == boost::asio::error::bad_descriptor) return;
        continue;
      }
      std::lock_guard<std::mutex> lock(mutex);
      reap();
      if (connections.size() >= kMaxConnections) continue;  // closed by c's destructor
      Connection& ref = *c;
      connections.push_back(std::move(c));
      ref.thread = std::thread([this, &ref] { serve_connection(ref); });
    }
  }
};

HttpEndpoint::HttpEndpoint(const std::string& listen, std::map<std::string, HttpHandler> routes)
    : impl_(std::make_unique<Impl>()) {
  namespace ip = boost::asio::ip;
  impl_->routes = std::move(routes);
  try {
    const ListenAddress addr = parse_listen_address(listen);
    const ip::tcp::endpoint ep(ip::make_address(addr.host), addr.port);
    impl_->acceptor.open(ep.protocol());
    impl_->acceptor.set_option(boost::asio::socket_base::reuse_address(true));
    impl_->acceptor.bind(ep);
    impl_->acceptor.listen();
    impl_->port = impl_->acceptor.local_endpoint().port();
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot listen on " + listen + ": " + e.what());
  }
  impl_->thread = std::thread([this] { impl_->serve(); });
}

HttpEndpoint::~HttpEndpoint() {
  impl_->stopping = true;
  boost::system::error_code ignored;
  // A blocking accept() is not woken by close() on every platform: connect once to wake it.
  const auto local = impl_->acceptor.local_endpoint(ignored);
  const auto wake_address = local.address().is_unspecified()
                                ? (local.address().is_v6() ? boost::asio::ip::address(boost::asio::ip::address_v6::loopback())
                                                           : boost::asio::ip::address(boost::asio::ip::address_v4::loopback()))
                                : local.address();
  try {
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket s(io);
    s.connect({wake_address, static_cast<unsigned short>(impl_->port)}, ignored);
  } catch (const std::exception&) {
  }
  impl_->acceptor.cancel(ignored);
  impl_->acceptor.close(ignored);
  if (impl_->thread.joinable()) impl_->thread.join();
  // Connections a client keeps open (keep-alive) are cut: their reads return and threads end.
  std::lock_guard<std::mutex> lock(impl_->mutex);
  for (auto& c : impl_->connections) c->socket.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
  for (auto& c : impl_->connections) c->thread.join();
}

int HttpEndpoint::port() const { return impl_->port; }

}  // namespace trainbench::telemetry
