#include "fake_api_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace kubetest {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string url_decode(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else if (s[i] == '+') {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

const char* reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

// Reads one request from `ssl`; false when the connection ended first.
bool read_request(SSL* ssl, std::string& buffer, FakeRequest& req) {
  char chunk[4096];
  std::size_t header_end;
  while ((header_end = buffer.find("\r\n\r\n")) == std::string::npos) {
    const int n = SSL_read(ssl, chunk, sizeof chunk);
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<std::size_t>(n));
  }
  const std::string head = buffer.substr(0, header_end);
  buffer.erase(0, header_end + 4);
  std::size_t line_end = head.find("\r\n");
  const std::string request_line = head.substr(0, line_end);
  const auto sp1 = request_line.find(' ');
  const auto sp2 = request_line.find(' ', sp1 + 1);
  if (sp1 == std::string::npos || sp2 == std::string::npos) return false;
  req.method = request_line.substr(0, sp1);
  const std::string target = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
  const auto q = target.find('?');
  req.path = target.substr(0, q);
  req.query = q == std::string::npos ? "" : target.substr(q + 1);
  while (line_end != std::string::npos && line_end < head.size()) {
    const auto next = head.find("\r\n", line_end + 2);
    const std::string line = head.substr(line_end + 2, next == std::string::npos ? std::string::npos : next - line_end - 2);
    const auto colon = line.find(':');
    if (colon != std::string::npos) {
      std::string value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      req.headers[lower(line.substr(0, colon))] = value;
    }
    line_end = next;
  }
  std::size_t length = 0;
  if (auto it = req.headers.find("content-length"); it != req.headers.end()) length = std::stoul(it->second);
  while (buffer.size() < length) {
    const int n = SSL_read(ssl, chunk, sizeof chunk);
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<std::size_t>(n));
  }
  req.body = buffer.substr(0, length);
  buffer.erase(0, length);
  return true;
}

}  // namespace

std::string FakeRequest::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

std::string FakeRequest::param(const std::string& key) const {
  std::size_t pos = 0;
  while (pos <= query.size()) {
    const auto amp = query.find('&', pos);
    const std::string pair = query.substr(pos, amp == std::string::npos ? std::string::npos : amp - pos);
    const auto eq = pair.find('=');
    if (url_decode(pair.substr(0, eq)) == key) return eq == std::string::npos ? "" : url_decode(pair.substr(eq + 1));
    if (amp == std::string::npos) break;
    pos = amp + 1;
  }
  return {};
}

bool FakeConnection::write(std::string_view bytes) {
  if (stopping()) return false;
  std::size_t off = 0;
  while (off < bytes.size()) {
    const int n = SSL_write(ssl_, bytes.data() + off, static_cast<int>(bytes.size() - off));
    if (n <= 0) return false;
    off += static_cast<std::size_t>(n);
  }
  return true;
}

bool FakeConnection::respond(int status, std::string_view body, std::string_view content_type,
                             const std::vector<std::pair<std::string, std::string>>& headers) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) + "\r\n";
  if (!content_type.empty()) out += "Content-Type: " + std::string(content_type) + "\r\n";
  for (const auto& [k, v] : headers) out += k + ": " + v + "\r\n";
  out += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  out += body;
  return write(out);
}

bool FakeConnection::start_chunked(int status, std::string_view content_type) {
  return write("HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) + "\r\nContent-Type: " +
               std::string(content_type) + "\r\nTransfer-Encoding: chunked\r\n\r\n");
}

bool FakeConnection::chunk(std::string_view data) {
  if (data.empty()) return true;
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return write(std::string(size) + std::string(data) + "\r\n");
}

bool FakeConnection::end_chunked() { return write("0\r\n\r\n"); }

bool FakeConnection::stopping() const { return server_->stopping_.load(); }

bool FakeConnection::sleep(std::chrono::milliseconds d) const {
  std::unique_lock<std::mutex> lock(server_->mutex_);
  return server_->stop_cv_.wait_for(lock, d, [this] { return server_->stopping_.load(); });
}

FakeApiServer::FakeApiServer(Handler handler, FakeServerOptions options) : handler_(std::move(handler)) {
  std::signal(SIGPIPE, SIG_IGN);
  ctx_ = SSL_CTX_new(TLS_server_method());
  if (!ctx_) throw std::runtime_error("fake server: SSL_CTX_new");
  {
    BIO* bio = BIO_new_mem_buf(options.server_cert.cert_pem.data(), static_cast<int>(options.server_cert.cert_pem.size()));
    X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    bio = BIO_new_mem_buf(options.server_cert.key_pem.data(), static_cast<int>(options.server_cert.key_pem.size()));
    EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    if (!cert || !key || SSL_CTX_use_certificate(ctx_, cert) != 1 || SSL_CTX_use_PrivateKey(ctx_, key) != 1) {
      throw std::runtime_error("fake server: bad certificate");
    }
    X509_free(cert);
    EVP_PKEY_free(key);
  }
  if (!options.client_ca_pem.empty()) {
    BIO* bio = BIO_new_mem_buf(options.client_ca_pem.data(), static_cast<int>(options.client_ca_pem.size()));
    X509* ca = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx_), ca);
    X509_free(ca);
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(options.port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 64) != 0) {
    ::close(listen_fd_);
    SSL_CTX_free(ctx_);
    throw std::runtime_error("fake server: cannot listen on port " + std::to_string(options.port));
  }
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

FakeApiServer::~FakeApiServer() {
  stop();
  SSL_CTX_free(ctx_);
}

void FakeApiServer::stop() {
  if (stopping_.exchange(true)) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_cv_.notify_all();
  }
  if (acceptor_.joinable()) acceptor_.join();
  ::close(listen_fd_);
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
    threads.swap(threads_);
  }
  for (auto& t : threads) t.join();
}

std::vector<FakeRequest> FakeApiServer::requests() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return requests_;
}

std::size_t FakeApiServer::request_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return requests_.size();
}

void FakeApiServer::accept_loop() {
  while (!stopping_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) continue;
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) {
      ::close(fd);
      break;
    }
    open_fds_.push_back(fd);
    threads_.emplace_back([this, fd] { serve(fd); });
  }
}

void FakeApiServer::serve(int fd) {
  SSL* ssl = SSL_new(ctx_);
  SSL_set_fd(ssl, fd);
  if (SSL_accept(ssl) == 1) {
    std::string client_cn;
    if (X509* peer = SSL_get1_peer_certificate(ssl)) {
      char cn[256] = {0};
      X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, cn, sizeof cn);
      client_cn = cn;
      X509_free(peer);
    }
    std::string buffer;
    while (!stopping_) {
      FakeRequest req;
      if (!read_request(ssl, buffer, req)) break;
      req.client_cn = client_cn;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        requests_.push_back(req);
      }
      FakeConnection conn(this, ssl);
      try {
        handler_(req, conn);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "fake server handler threw: %s\n", e.what());
        conn.close_after();
      }
      if (conn.close_after_ || lower(req.header("connection")) == "close") break;
    }
    SSL_shutdown(ssl);
  }
  ERR_clear_error();
  SSL_free(ssl);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    open_fds_.erase(std::remove(open_fds_.begin(), open_fds_.end(), fd), open_fds_.end());
  }
  ::close(fd);
}

std::string status_json(int code, const std::string& reason, const std::string& message) {
  return nlohmann::json{{"kind", "Status"},     {"apiVersion", "v1"}, {"metadata", nlohmann::json::object()},
                        {"status", "Failure"},  {"message", message}, {"reason", reason},
                        {"code", code}}
      .dump();
}

}  // namespace kubetest
