#pragma once
// Test support: plain HTTP requests to a local endpoint; scrape /metrics and read sample values.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <sstream>
#include <string>

namespace trainbench::test {

struct HttpAnswer {
  int status = 0;  ///< 0: no answer
  std::string head;  ///< status line and headers
  std::string body;
};

/// One HTTP/1.0 request to 127.0.0.1:port (the server closes after answering).
inline HttpAnswer http_request(int port, const std::string& method, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string req = method + " " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
    if (write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char buf[8192];
      ssize_t n;
      while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
    }
  }
  close(fd);
  HttpAnswer a;
  const auto body = out.find("\r\n\r\n");
  if (body == std::string::npos || out.size() < 12) return a;
  a.status = std::stoi(out.substr(9, 3));
  a.head = out.substr(0, body);
  a.body = out.substr(body + 4);
  return a;
}

/// GET http://127.0.0.1:port/metrics, the body ("" on failure).
inline std::string scrape(int port) { return http_request(port, "GET", "/metrics").body; }

/// The value of the series `name{...labels...}` whose label set contains `must_contain`.
inline double value(const std::string& text, const std::string& name, const std::string& must_contain = "") {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(name + "{", 0) != 0 && line.rfind(name + " ", 0) != 0) continue;
    if (line.find(must_contain) == std::string::npos) continue;
    return std::stod(line.substr(line.rfind(' ') + 1));
  }
  return -1;
}

}  // namespace trainbench::test
