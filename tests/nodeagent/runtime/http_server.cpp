#include "runtime/http_server.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>

#include <iostream>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "runtime/util.hpp"

namespace noderuntime {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

std::string HttpRequest::param(const std::string& key, const std::string& def) const {
  auto it = query.find(key);
  return it == query.end() ? def : it->second;
}

bool HttpRequest::has_param(const std::string& key) const { return query.count(key) > 0; }

std::string HttpRequest::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? "" : it->second;
}

std::vector<std::string> HttpRequest::header_all(const std::string& lower_name) const {
  std::vector<std::string> out;
  auto range = headers.equal_range(lower_name);
  for (auto it = range.first; it != range.second; ++it) out.push_back(it->second);
  return out;
}

namespace {

using Stream = ssl::stream<tcp::socket>;

class Responder : public HttpResponder {
 public:
  Responder(Stream& stream, unsigned version, bool keep_alive)
      : stream_(stream), version_(version), keep_alive_(keep_alive) {}

  void send(int status, const std::string& content_type, const std::string& body,
            const HeaderList& headers) override {
    http::response<http::string_body> res{static_cast<http::status>(status), version_};
    res.set(http::field::content_type, content_type);
    res.set(http::field::cache_control, "no-cache, private");
    for (const auto& h : headers) res.insert(h.first, h.second);
    res.keep_alive(keep_alive_);
    res.body() = body;
    res.prepare_payload();
    boost::system::error_code ec;
    http::write(stream_, res, ec);
    if (ec) ok_ = false;
    answered_ = true;
  }

  bool start_stream(int status, const std::string& content_type, const HeaderList& headers) override {
    http::response<http::empty_body> res{static_cast<http::status>(status), version_};
    res.set(http::field::content_type, content_type);
    res.set(http::field::cache_control, "no-cache, private");
    for (const auto& h : headers) res.insert(h.first, h.second);
    res.keep_alive(keep_alive_);
    res.chunked(true);
    http::response_serializer<http::empty_body> sr{res};
    boost::system::error_code ec;
    http::write_header(stream_, sr, ec);
    answered_ = true;
    streaming_ = true;
    if (ec) ok_ = false;
    return ok_;
  }

  bool write_chunk(const std::string& data) override {
    if (!ok_ || data.empty()) return ok_;
    boost::system::error_code ec;
    net::write(stream_, http::make_chunk(net::const_buffer(data.data(), data.size())), ec);
    if (ec) ok_ = false;
    return ok_;
  }

  void end_stream() override {
    if (!ok_) return;
    boost::system::error_code ec;
    net::write(stream_, http::make_chunk_last(), ec);
    if (ec) ok_ = false;
  }

  bool peer_closed() override {
    if (!ok_) return true;
    pollfd pfd{};
    pfd.fd = stream_.next_layer().native_handle();
    pfd.events = POLLRDHUP;
    if (::poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))) {
      ok_ = false;
    }
    return !ok_;
  }

  bool answered() const override { return answered_; }
  bool ok() const { return ok_; }

  void reset_connection() override {
    auto& sock = stream_.next_layer();
    boost::system::error_code ec;
    sock.set_option(net::socket_base::linger(true, 0), ec);
    sock.close(ec);
    ok_ = false;
    answered_ = true;
  }

 private:
  Stream& stream_;
  unsigned version_;
  bool keep_alive_;
  bool ok_ = true;
  bool answered_ = false;
  bool streaming_ = false;
};

/// The subject's CN and O entries of the connection's verified client certificate.
void read_client_identity(Stream& stream, HttpRequest& req) {
  X509* cert = SSL_get_peer_certificate(stream.native_handle());
  if (!cert) return;
  X509_NAME* subject = X509_get_subject_name(cert);
  for (int i = 0; i < X509_NAME_entry_count(subject); ++i) {
    X509_NAME_ENTRY* e = X509_NAME_get_entry(subject, i);
    const int nid = OBJ_obj2nid(X509_NAME_ENTRY_get_object(e));
    if (nid != NID_commonName && nid != NID_organizationName) continue;
    const ASN1_STRING* data = X509_NAME_ENTRY_get_data(e);
    std::string value(reinterpret_cast<const char*>(ASN1_STRING_get0_data(data)),
                      static_cast<std::size_t>(ASN1_STRING_length(data)));
    if (nid == NID_commonName) req.client_cn = value; else req.client_orgs.push_back(value);
  }
  X509_free(cert);
}

void parse_query(const std::string& q, std::multimap<std::string, std::string>& out) {
  for (const auto& part : split(q, '&')) {
    if (part.empty()) continue;
    auto eq = part.find('=');
    std::string k = url_decode(part.substr(0, eq), true);
    std::string v = eq == std::string::npos ? "" : url_decode(part.substr(eq + 1), true);
    out.emplace(k, v);
  }
}

}  // namespace

struct HttpsServer::Impl {
  net::io_context ioc;
  ssl::context ctx{ssl::context::tls_server};
  tcp::acceptor acceptor{ioc};
  HttpHandler handler;
  std::thread accept_thread;
  std::atomic<bool> stopping{false};
  std::atomic<int> connections{0};

  void serve(tcp::socket sock) {
    ++connections;
    boost::system::error_code ec;
    sock.set_option(tcp::no_delay(true), ec);
    std::string remote;
    auto ep = sock.remote_endpoint(ec);
    if (!ec) remote = ep.address().to_string() + ":" + std::to_string(ep.port());
    Stream stream(std::move(sock), ctx);
    stream.handshake(ssl::stream_base::server, ec);
    if (!ec) {
      boost::beast::flat_buffer buffer;
      for (;;) {
        http::request_parser<http::string_body> parser;
        parser.body_limit(256u * 1024 * 1024);
        parser.header_limit(1024 * 1024);
        http::read_header(stream, buffer, parser, ec);
        if (ec) break;
        if (boost::beast::iequals(parser.get()[http::field::expect], "100-continue")) {
          http::response<http::empty_body> cont{http::status::continue_, parser.get().version()};
          http::write(stream, cont, ec);
          if (ec) break;
        }
        if (!parser.is_done()) http::read(stream, buffer, parser, ec);
        if (ec) break;
        auto& msg = parser.get();
        HttpRequest req;
        req.method = std::string(msg.method_string());
        req.target = std::string(msg.target());
        auto qpos = req.target.find('?');
        req.path = url_decode(req.target.substr(0, qpos), false);
        if (qpos != std::string::npos) parse_query(req.target.substr(qpos + 1), req.query);
        for (const auto& f : msg) req.headers.emplace(to_lower(std::string(f.name_string())), std::string(f.value()));
        req.body = std::move(msg.body());
        req.remote = remote;
        read_client_identity(stream, req);
        Responder responder(stream, msg.version(), msg.keep_alive());
        HttpResponder& res = responder;
        try {
          handler(req, res);
        } catch (const std::exception& e) {
          if (!res.answered()) {
            res.send(500, "text/plain", std::string("internal error: ") + e.what());
          }
        }
        if (!res.answered()) res.send(500, "text/plain", "no response");
        if (!responder.ok() || !msg.keep_alive() || stopping) break;
      }
    }
    stream.next_layer().shutdown(tcp::socket::shutdown_both, ec);
    stream.next_layer().close(ec);
    --connections;
  }
};

HttpsServer::HttpsServer(const std::string& host, unsigned short port, const std::string& cert_chain_file,
                         const std::string& key_file, HttpHandler handler, const std::string& client_ca_file)
    : impl_(std::make_unique<Impl>()) {
  impl_->handler = std::move(handler);
  impl_->ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                         ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  impl_->ctx.use_certificate_chain_file(cert_chain_file);
  impl_->ctx.use_private_key_file(key_file, ssl::context::pem);
  if (!client_ca_file.empty()) {
    impl_->ctx.load_verify_file(client_ca_file);
    impl_->ctx.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  }
  tcp::endpoint ep(net::ip::make_address(host), port);
  impl_->acceptor.open(ep.protocol());
  impl_->acceptor.set_option(tcp::acceptor::reuse_address(true));
  impl_->acceptor.bind(ep);
  impl_->acceptor.listen(net::socket_base::max_listen_connections);
}

HttpsServer::~HttpsServer() {
  stop();
  if (impl_->accept_thread.joinable()) impl_->accept_thread.join();
}

unsigned short HttpsServer::port() const { return impl_->acceptor.local_endpoint().port(); }

int HttpsServer::open_connections() const { return impl_->connections; }

void HttpsServer::start() {
  impl_->accept_thread = std::thread([this] {
    for (;;) {
      tcp::socket sock(impl_->ioc);
      boost::system::error_code ec;
      impl_->acceptor.accept(sock, ec);
      if (impl_->stopping) break;
      if (ec) {
        if (ec == net::error::operation_aborted || ec == net::error::bad_descriptor) break;
        continue;
      }
      std::thread([this, s = std::move(sock)]() mutable { impl_->serve(std::move(s)); }).detach();
    }
  });
}

void HttpsServer::stop() {
  if (impl_->stopping.exchange(true)) return;
  boost::system::error_code ec;
  // Unblock accept(): shutting the listening socket down makes accept fail at once.
  ::shutdown(impl_->acceptor.native_handle(), SHUT_RDWR);
  impl_->acceptor.close(ec);
}

}  // namespace noderuntime
