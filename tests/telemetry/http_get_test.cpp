// telemetry::http_get: the operator's bounded GET of what a pod serves (a run's /progress).
#include "telemetry/http_get.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "telemetry/http_endpoint.hpp"

namespace {

using trainbench::telemetry::http_get;
using trainbench::telemetry::HttpEndpoint;
using trainbench::telemetry::HttpHandler;
using trainbench::telemetry::HttpReply;

TEST(HttpGet, ReadsStatusAndBody) {
  HttpEndpoint server("127.0.0.1:0", std::map<std::string, HttpHandler>{
                                         {"/progress",
                                          [] {
                                            return HttpReply{200, "application/json", "{\"run\":1}\n"};
                                          }},
                                         {"/big", [] {
                                            return HttpReply{200, "text/plain", std::string(100000, 'x')};
                                          }}});
  const auto ok = http_get("127.0.0.1", server.port(), "/progress", std::chrono::seconds(2));
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, "{\"run\":1}\n");
  const auto missing = http_get("127.0.0.1", server.port(), "/nothing", std::chrono::seconds(2));
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  std::string why;
  EXPECT_FALSE(http_get("127.0.0.1", server.port(), "/big", std::chrono::seconds(2), 64 * 1024, &why));
  EXPECT_NE(why.find("/big"), std::string::npos) << why;
}

TEST(HttpGet, RefusedOrSilentPeersFailWithinTheDeadline) {
  std::string why;
  // A listening socket that never answers: accepted by the kernel, never read.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(fd, 4), 0);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int silent = ntohs(addr.sin_port);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(http_get("127.0.0.1", silent, "/progress", std::chrono::milliseconds(300), 1024, &why));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5)) << "the deadline bounds the wait";
  close(fd);  // now nothing listens there
  EXPECT_FALSE(http_get("127.0.0.1", silent, "/progress", std::chrono::seconds(1), 1024, &why));
  EXPECT_FALSE(http_get("not-an-ip", silent, "/progress", std::chrono::seconds(1), 1024, &why));
}

}  // namespace
