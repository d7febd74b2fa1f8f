// telemetry::HttpEndpoint: routes, errors, keep-alive clients, shutdown.
#include "telemetry/http_endpoint.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>

#include "scrape.hpp"

namespace {

using trainbench::telemetry::HttpEndpoint;
using trainbench::telemetry::HttpHandler;
using trainbench::telemetry::HttpReply;
using trainbench::telemetry::parse_listen_address;
using trainbench::test::http_request;

std::map<std::string, HttpHandler> routes(std::atomic<int>* calls = nullptr) {
  return {{"/healthz", [calls] {
             if (calls) ++*calls;
             return HttpReply{200, "text/plain", "ok\n"};
           }},
          {"/boom", []() -> HttpReply { throw std::runtime_error("no data"); }}};
}

/// A client that opens a keep-alive connection, sends one request and keeps it open.
int open_keep_alive(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return -1;
  const std::string req = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  if (write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) return -1;
  char buf[512];
  if (read(fd, buf, sizeof buf) <= 0) return -1;
  return fd;
}

TEST(ListenAddress, ParsesHostPortForms) {
  EXPECT_EQ(parse_listen_address(":8080").host, "0.0.0.0");
  EXPECT_EQ(parse_listen_address(":8080").port, 8080);
  EXPECT_EQ(parse_listen_address("127.0.0.1:0").host, "127.0.0.1");
  EXPECT_EQ(parse_listen_address("[::1]:9400").host, "::1");
  EXPECT_EQ(parse_listen_address("[::1]:9400").port, 9400);
  for (const char* bad : {"8080", "host:", "h:99999", "h:80a", "h:-1"}) {
    try {
      parse_listen_address(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

TEST(HttpEndpoint, ServesRoutesAndClearErrors) {
  std::atomic<int> calls{0};
  HttpEndpoint ep("127.0.0.1:0", routes(&calls));
  ASSERT_GT(ep.port(), 0);
  auto ok = http_request(ep.port(), "GET", "/healthz?verbose=1");
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, "ok\n");
  EXPECT_NE(ok.head.find("Content-Type: text/plain"), std::string::npos) << ok.head;
  auto head = http_request(ep.port(), "HEAD", "/healthz");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.body, "");
  EXPECT_EQ(http_request(ep.port(), "GET", "/nope").status, 404);
  auto post = http_request(ep.port(), "POST", "/healthz");
  EXPECT_EQ(post.status, 405);
  EXPECT_NE(post.head.find("Allow: GET, HEAD"), std::string::npos) << post.head;
  auto boom = http_request(ep.port(), "GET", "/boom");
  EXPECT_EQ(boom.status, 500);
  EXPECT_NE(boom.body.find("no data"), std::string::npos);
  EXPECT_EQ(calls.load(), 2);
}

TEST(HttpEndpoint, AKeepAliveClientDoesNotBlockOthers) {
  HttpEndpoint ep("127.0.0.1:0", routes());
  const int held = open_keep_alive(ep.port());  // as Prometheus holds its scrape connection
  ASSERT_GE(held, 0);
  auto second = std::async(std::launch::async, [&] { return http_request(ep.port(), "GET", "/healthz").status; });
  ASSERT_EQ(second.wait_for(std::chrono::seconds(20)), std::future_status::ready)
      << "a second client waited behind the open connection";
  EXPECT_EQ(second.get(), 200);
  close(held);
}

TEST(HttpEndpoint, StopsWithAClientConnectionOpen) {
  auto ep = std::make_unique<HttpEndpoint>("127.0.0.1:0", routes());
  const int held = open_keep_alive(ep->port());
  ASSERT_GE(held, 0);
  auto stopped = std::async(std::launch::async, [&] { ep.reset(); });
  EXPECT_EQ(stopped.wait_for(std::chrono::seconds(20)), std::future_status::ready)
      << "the destructor waited for the client to hang up";
  char c;
  EXPECT_LE(read(held, &c, 1), 0) << "the connection was closed by the server";
  close(held);
}

TEST(HttpEndpoint, BusyPortNamesTheAddress) {
  HttpEndpoint first("127.0.0.1:0", routes());
  const std::string taken = "127.0.0.1:" + std::to_string(first.port());
  try {
    HttpEndpoint second(taken, routes());
    FAIL() << "listening twice on one port must fail";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(taken), std::string::npos) << e.what();
  }
}

}  // namespace
