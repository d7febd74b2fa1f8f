// The HTTPS transport and resource client against a scripted server: TLS verification, client
// certificates, tokens, error mapping, malformed answers, timeouts, cancellation, 429 retries,
// request shapes and redacted logging.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "fake_api_server.hpp"
#include "kube/client.hpp"
#include "kube/errors.hpp"
#include "test_pki.hpp"
#include "test_util.hpp"

namespace kube = trainbench::kube;
using kubetest::FakeApiServer;
using kubetest::FakeConnection;
using kubetest::FakeRequest;
using kubetest::fake_config;
using kubetest::status_json;
using kubetest::test_pki;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

const kube::ResourceType kCm = kube::resources::config_maps();

json config_map(const std::string& name, const std::string& rv = "1") {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"namespace", "default"}, {"resourceVersion", rv}}},
          {"data", {{"k", "v"}}}};
}

// Answers every request with the same object.
FakeApiServer::Handler echo_object() {
  return [](const FakeRequest& req, FakeConnection& c) {
    if (req.method == "GET" && req.path.find("/configmaps/") != std::string::npos) {
      c.respond(200, config_map(req.path.substr(req.path.rfind('/') + 1)).dump());
    } else {
      c.respond(200, config_map("x").dump());
    }
  };
}

kube::TransportError::Kind transport_kind(const std::function<void()>& f) {
  try {
    f();
  } catch (const kube::TransportError& e) {
    return e.kind();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a TransportError: " << e.what();
    return kube::TransportError::Kind::kProtocol;
  }
  ADD_FAILURE() << "no error";
  return kube::TransportError::Kind::kProtocol;
}

}  // namespace

TEST(Transport, GetSendsBearerTokenAndParsesJson) {
  FakeApiServer server(echo_object());
  kube::Client client(fake_config(server.url(), "tok-123"));
  const json obj = client.get(kCm, "default", "settings");
  EXPECT_EQ(obj["metadata"]["name"], "settings");
  const auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "GET");
  EXPECT_EQ(reqs[0].path, "/api/v1/namespaces/default/configmaps/settings");
  EXPECT_EQ(reqs[0].header("authorization"), "Bearer tok-123");
  EXPECT_EQ(reqs[0].header("accept"), "application/json");
  EXPECT_EQ(reqs[0].header("user-agent"), "trainbench-operator");
}

TEST(Transport, ConnectionsAreReusedAcrossRequests) {
  FakeApiServer server(echo_object());
  kube::Client client(fake_config(server.url()));
  for (int i = 0; i < 5; ++i) client.get(kCm, "default", "a");
  EXPECT_EQ(server.request_count(), 5u);
}

TEST(Transport, WrongCaFailsVerification) {
  FakeApiServer server(echo_object());
  auto cfg = fake_config(server.url());
  cfg.tls.ca_pem = test_pki().other_ca.cert_pem;
  kube::Client client(cfg);
  try {
    client.get(kCm, "default", "a");
    FAIL() << "TLS with the wrong CA succeeded";
  } catch (const kube::TransportError& e) {
    EXPECT_EQ(e.kind(), kube::TransportError::Kind::kTls) << e.what();
    EXPECT_NE(std::string(e.what()).find("certificate verify failed"), std::string::npos) << e.what();
  }
  EXPECT_EQ(server.request_count(), 0u);
}

TEST(Transport, HostNameMismatchFailsVerification) {
  kubetest::FakeServerOptions opts;
  opts.server_cert = test_pki().wrong_host;  // signed by the right CA, but for elsewhere.invalid
  FakeApiServer server(echo_object(), opts);
  kube::Client client(fake_config(server.url()));
  EXPECT_EQ(transport_kind([&] { client.get(kCm, "default", "a"); }), kube::TransportError::Kind::kTls);
  EXPECT_EQ(server.request_count(), 0u);
}

TEST(Transport, ClientCertificateAuthentication) {
  kubetest::FakeServerOptions opts;
  opts.client_ca_pem = test_pki().ca.cert_pem;
  FakeApiServer server(echo_object(), opts);
  auto cfg = fake_config(server.url(), "");
  cfg.tls.client_cert_pem = test_pki().client.cert_pem;
  cfg.tls.client_key_pem = test_pki().client.key_pem;
  kube::Client client(cfg);
  client.get(kCm, "default", "a");
  ASSERT_EQ(server.request_count(), 1u);
  EXPECT_EQ(server.requests()[0].client_cn, "alice");
  EXPECT_EQ(server.requests()[0].header("authorization"), "");

  auto untrusted = cfg;
  untrusted.tls.client_cert_pem = test_pki().other_client.cert_pem;
  untrusted.tls.client_key_pem = test_pki().other_client.key_pem;
  kube::Client bad(untrusted);
  EXPECT_THROW(bad.get(kCm, "default", "a"), kube::TransportError);
  EXPECT_EQ(server.request_count(), 1u);
}

TEST(Transport, ConnectionRefused) {
  // A port bound but not listening refuses connections, and holding it keeps any other process
  // (tests run in parallel) from taking it meanwhile, as a closed server's port could be.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  kube::Client client(fake_config("https://127.0.0.1:" + std::to_string(ntohs(addr.sin_port))));
  EXPECT_EQ(transport_kind([&] { client.get(kCm, "default", "a"); }), kube::TransportError::Kind::kConnect);
  ::close(fd);
}

TEST(Transport, ErrorStatusesBecomeTypedErrors) {
  FakeApiServer server([](const FakeRequest& req, FakeConnection& c) {
    if (req.path.find("/missing") != std::string::npos) {
      c.respond(404, status_json(404, "NotFound", "configmaps \"missing\" not found"));
    } else if (req.path.find("/forbidden") != std::string::npos) {
      c.respond(403, status_json(403, "Forbidden", "configmaps \"forbidden\" is forbidden"));
    } else if (req.path.find("/unauth") != std::string::npos) {
      c.respond(401, status_json(401, "Unauthorized", "Unauthorized"));
    } else {
      c.respond(500, "<html>oops</html>", "text/html");
    }
  });
  kube::Client client(fake_config(server.url()));
  try {
    client.get(kCm, "default", "missing");
    FAIL();
  } catch (const kube::NotFoundError& e) {
    EXPECT_EQ(e.request(), "GET /api/v1/namespaces/default/configmaps/missing");
  }
  EXPECT_FALSE(client.try_get(kCm, "default", "missing"));
  EXPECT_THROW(client.get(kCm, "default", "forbidden"), kube::ForbiddenError);
  EXPECT_THROW(client.get(kCm, "default", "unauth"), kube::UnauthorizedError);
  EXPECT_THROW(client.get(kCm, "default", "other"), kube::ServerError);
}

TEST(Transport, MalformedAnswersAreTransportErrors) {
  FakeApiServer server([](const FakeRequest& req, FakeConnection& c) {
    if (req.path.find("/badjson") != std::string::npos) {
      c.respond(200, "{\"metadata\": {\"name\": ");
    } else if (req.path.find("/html") != std::string::npos) {
      c.respond(200, "<html></html>", "text/html");
    } else if (req.path.find("/empty") != std::string::npos) {
      c.respond(200, "");
    } else if (req.path.find("/cut") != std::string::npos) {
      c.write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\":");
      c.close_after();
    } else if (req.path.find("/garbage") != std::string::npos) {
      c.write("this is not HTTP\r\n\r\n");
      c.close_after();
    } else {
      c.respond(200, "{\"kind\":\"ConfigMapList\",\"items\":\"no\"}");
    }
  });
  kube::Client client(fake_config(server.url()));
  using Kind = kube::TransportError::Kind;
  EXPECT_EQ(transport_kind([&] { client.get(kCm, "default", "badjson"); }), Kind::kProtocol);
  EXPECT_EQ(transport_kind([&] { client.get(kCm, "default", "html"); }), Kind::kProtocol);
  EXPECT_TRUE(client.get(kCm, "default", "empty").is_null());
  EXPECT_THROW(client.get(kCm, "default", "cut"), kube::TransportError);
  EXPECT_THROW(client.get(kCm, "default", "garbage"), kube::TransportError);
  EXPECT_EQ(transport_kind([&] { client.list(kCm, "default"); }), Kind::kProtocol);
}

TEST(Transport, RequestTimeout) {
  FakeApiServer server([](const FakeRequest&, FakeConnection& c) {
    c.sleep(10s);
    c.close_after();
  });
  auto cfg = fake_config(server.url());
  cfg.timeout = 300ms;
  kube::Client client(cfg);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(transport_kind([&] { client.get(kCm, "default", "slow"); }), kube::TransportError::Kind::kTimeout);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  server.stop();
}

TEST(Transport, StopTokenCancelsARequest) {
  FakeApiServer server([](const FakeRequest&, FakeConnection& c) {
    c.sleep(10s);
    c.close_after();
  });
  kube::Client client(fake_config(server.url()));
  kube::StopSource stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(200ms);
    stop.request_stop();
  });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(transport_kind([&] { client.get(kCm, "default", "slow", stop.token()); }),
            kube::TransportError::Kind::kCanceled);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  stopper.join();
  server.stop();
}

TEST(Transport, TooManyRequestsIsRetriedAfterRetryAfter) {
  std::atomic<int> calls{0};
  FakeApiServer server([&](const FakeRequest&, FakeConnection& c) {
    if (calls++ == 0) {
      c.respond(429, status_json(429, "TooManyRequests", "slow down"), "application/json", {{"Retry-After", "1"}});
    } else {
      c.respond(200, config_map("x").dump());
    }
  });
  kube::Client client(fake_config(server.url()));
  EXPECT_EQ(client.get(kCm, "default", "x")["metadata"]["name"], "x");
  EXPECT_EQ(calls.load(), 2);
}

TEST(Transport, TooManyRequestsSurfacesWhenRetriesAreUsedUp) {
  FakeApiServer server([](const FakeRequest&, FakeConnection& c) {
    c.respond(429, status_json(429, "TooManyRequests", "slow down"), "application/json", {{"Retry-After", "3"}});
  });
  auto cfg = fake_config(server.url());
  cfg.max_retries_on_429 = 0;
  kube::Client client(cfg);
  try {
    client.get(kCm, "default", "x");
    FAIL();
  } catch (const kube::TooManyRequestsError& e) {
    EXPECT_EQ(e.retry_after(), 3s);
  }
}

TEST(Transport, RetryAfterIsWaitedOutBeforeTheNextTry) {
  std::mutex mu;
  std::vector<std::chrono::steady_clock::time_point> at;
  FakeApiServer server([&](const FakeRequest&, FakeConnection& c) {
    std::size_t n;
    {
      std::lock_guard<std::mutex> lock(mu);
      at.push_back(std::chrono::steady_clock::now());
      n = at.size();
    }
    if (n == 1) {
      c.respond(429, status_json(429, "TooManyRequests", "slow down"), "application/json", {{"Retry-After", "2"}});
    } else {
      c.respond(200, config_map("x").dump());
    }
  });
  kube::Client client(fake_config(server.url()));
  EXPECT_EQ(client.get(kCm, "default", "x")["metadata"]["name"], "x");
  ASSERT_EQ(at.size(), 2u);
  EXPECT_GE(at[1] - at[0], 1900ms) << "the second try came before Retry-After: 2 was up";
}

TEST(Transport, ServerErrorWithRetryAfterIsRetriedAsClientGoDoes) {
  std::atomic<int> calls{0};
  FakeApiServer server([&](const FakeRequest&, FakeConnection& c) {
    if (calls++ < 2) {
      c.respond(503, status_json(503, "ServiceUnavailable", "the server is currently unable to handle the request"),
                "application/json", {{"Retry-After", "1"}});
    } else {
      c.respond(201, config_map("x").dump());
    }
  });
  kube::Client client(fake_config(server.url()));
  EXPECT_EQ(client.create(kCm, "default", config_map("x"))["metadata"]["name"], "x");
  EXPECT_EQ(calls.load(), 3);
}

TEST(Transport, ServerErrorWithoutRetryAfterGoesToTheCallerAtOnce) {
  for (int code : {500, 503}) {
    std::atomic<int> calls{0};
    FakeApiServer server([&](const FakeRequest&, FakeConnection& c) {
      ++calls;
      c.respond(code, status_json(code, code == 500 ? "InternalError" : "ServiceUnavailable", "injected"));
    });
    kube::Client client(fake_config(server.url()));
    EXPECT_THROW(client.create(kCm, "default", config_map("x")), kube::ServerError) << code;
    EXPECT_EQ(calls.load(), 1) << code << ": a write that failed must not be repeated blindly";
  }
}

TEST(Transport, RetriesOnRetryAfterAreBounded) {
  std::atomic<int> calls{0};
  FakeApiServer server([&](const FakeRequest&, FakeConnection& c) {
    ++calls;
    c.respond(503, status_json(503, "ServiceUnavailable", "busy"), "application/json", {{"Retry-After", "1"}});
  });
  auto cfg = fake_config(server.url());
  cfg.max_retries_on_429 = 2;
  kube::Client client(cfg);
  EXPECT_THROW(client.get(kCm, "default", "x"), kube::ServerError);
  EXPECT_EQ(calls.load(), 3);  // the first try and two retries
}

TEST(Transport, TokenFileIsReReadAfter401) {
  kubetest::TempDir dir;
  const auto token_file = dir.write("token", "old");
  FakeApiServer server([](const FakeRequest& req, FakeConnection& c) {
    if (req.header("authorization") == "Bearer new") {
      c.respond(200, config_map("x").dump());
    } else {
      c.respond(401, status_json(401, "Unauthorized", "Unauthorized"));
    }
  });
  auto cfg = fake_config(server.url(), "");
  cfg.token_file = token_file;
  kube::Client client(cfg);
  EXPECT_THROW(client.get(kCm, "default", "x"), kube::UnauthorizedError);
  EXPECT_EQ(server.request_count(), 2u);  // one retry with the re-read (same) token
  dir.write("token", "new\n");            // rotated
  EXPECT_EQ(client.get(kCm, "default", "x")["metadata"]["name"], "x");
}

TEST(Transport, RedirectsAreNotFollowed) {
  FakeApiServer elsewhere(echo_object());
  FakeApiServer server([&](const FakeRequest&, FakeConnection& c) {
    c.respond(302, "", "", {{"Location", elsewhere.url() + "/api/v1/namespaces/default/configmaps/x"}});
  });
  kube::Client client(fake_config(server.url()));
  try {
    client.get(kCm, "default", "x");
    FAIL();
  } catch (const kube::ApiError& e) {
    EXPECT_EQ(e.code(), 302);
  }
  EXPECT_EQ(elsewhere.request_count(), 0u);
}

TEST(Transport, RequestShapes) {
  FakeApiServer server([](const FakeRequest& req, FakeConnection& c) {
    if (req.method == "GET" && req.param("watch").empty() && req.path.rfind("/configmaps") == req.path.size() - 11) {
      c.respond(200, R"({"kind":"ConfigMapList","metadata":{"resourceVersion":"5"},"items":[]})");
    } else if (req.method == "DELETE") {
      c.respond(200, status_json(200, "", "").c_str());
    } else {
      c.respond(req.method == "POST" ? 201 : 200, config_map("x").dump());
    }
  });
  kube::Client client(fake_config(server.url()));
  kube::ListOptions lo;
  lo.label_selector = "app=x,tier!=db";
  lo.field_selector = "metadata.name=x";
  lo.limit = 10;
  lo.continue_token = "abc";
  lo.resource_version = "0";
  client.list(kCm, "default", lo);
  client.create(kCm, "", json{{"metadata", {{"name", "x"}, {"namespace", "team"}}}});
  client.update(kCm, "default", config_map("x", "7"));
  client.merge_patch(kCm, "default", "x", json{{"data", {{"k", "v2"}}}});
  client.json_patch(kCm, "default", "x", json::array({{{"op", "remove"}, {"path", "/data/k"}}}));
  client.patch_status(kube::resources::benchmark_jobs(), "default", "j", json{{"status", {{"phase", "Running"}}}});
  kube::WriteOptions wo;
  wo.force = true;
  client.apply(kCm, "default", json{{"metadata", {{"name", "x"}}}, {"data", {{"a", "b"}}}}, wo);
  kube::DeleteOptions del;
  del.propagation_policy = "Background";
  client.remove(kCm, "default", "x", del);
  EXPECT_THROW(client.update(kCm, "default", json{{"metadata", json::object()}}), std::invalid_argument);
  EXPECT_THROW(client.json_patch(kCm, "default", "x", json::object()), std::invalid_argument);

  const auto r = server.requests();
  ASSERT_EQ(r.size(), 8u);
  EXPECT_EQ(r[0].param("labelSelector"), "app=x,tier!=db");
  EXPECT_EQ(r[0].param("fieldSelector"), "metadata.name=x");
  EXPECT_EQ(r[0].param("limit"), "10");
  EXPECT_EQ(r[0].param("continue"), "abc");
  EXPECT_EQ(r[0].param("resourceVersion"), "0");
  EXPECT_EQ(r[1].method, "POST");
  EXPECT_EQ(r[1].path, "/api/v1/namespaces/team/configmaps");  // namespace from the object
  EXPECT_EQ(json::parse(r[1].body)["kind"], "ConfigMap");      // type meta filled in
  EXPECT_EQ(r[1].header("content-type"), "application/json");
  EXPECT_EQ(r[2].method, "PUT");
  EXPECT_EQ(r[2].path, "/api/v1/namespaces/default/configmaps/x");
  EXPECT_EQ(json::parse(r[2].body)["metadata"]["resourceVersion"], "7");
  EXPECT_EQ(r[3].header("content-type"), "application/merge-patch+json");
  EXPECT_EQ(r[4].header("content-type"), "application/json-patch+json");
  EXPECT_EQ(r[5].path, "/apis/trainbench.dev/v1alpha1/namespaces/default/benchmarkjobs/j/status");
  EXPECT_EQ(r[5].header("content-type"), "application/merge-patch+json");
  EXPECT_EQ(r[6].header("content-type"), "application/apply-patch+yaml");
  EXPECT_EQ(r[6].param("fieldManager"), "trainbench-operator");
  EXPECT_EQ(r[6].param("force"), "true");
  EXPECT_EQ(json::parse(r[6].body)["apiVersion"], "v1");
  EXPECT_EQ(r[7].method, "DELETE");
  EXPECT_EQ(json::parse(r[7].body)["propagationPolicy"], "Background");
}

TEST(Transport, LoggingNeverShowsTokensOrSecretData) {
  FakeApiServer server([](const FakeRequest& req, FakeConnection& c) {
    if (req.path.find("/secrets/") != std::string::npos) {
      c.respond(200, R"({"kind":"Secret","apiVersion":"v1","metadata":{"name":"s"},"data":{"password":"aHVudGVyMg=="}})");
    } else {
      c.respond(200, config_map("x").dump());
    }
  });
  auto cfg = fake_config(server.url(), "super-secret-token");
  std::mutex m;
  std::vector<std::string> lines;
  cfg.log = [&](kube::LogLevel, const std::string& line) {
    std::lock_guard<std::mutex> lock(m);
    lines.push_back(line);
  };
  kube::Client client(cfg);
  client.get(kube::resources::secrets(), "default", "s");
  client.create(kube::resources::secrets(), "default",
                json{{"metadata", {{"name", "t"}}}, {"stringData", {{"pw", "plaintext-pw"}}}});
  client.get(kCm, "default", "x");
  ASSERT_FALSE(lines.empty());
  bool saw_redacted = false, saw_configmap_body = false;
  for (const auto& l : lines) {
    EXPECT_EQ(l.find("super-secret-token"), std::string::npos) << l;
    EXPECT_EQ(l.find("aHVudGVyMg"), std::string::npos) << l;
    EXPECT_EQ(l.find("plaintext-pw"), std::string::npos) << l;
    if (l.find("<redacted") != std::string::npos) saw_redacted = true;
    if (l.find("\"k\":\"v\"") != std::string::npos) saw_configmap_body = true;
  }
  EXPECT_TRUE(saw_redacted);
  EXPECT_TRUE(saw_configmap_body);
}

TEST(Transport, ClientIsUsableFromManyThreads) {
  FakeApiServer server(echo_object());
  auto cfg = fake_config(server.url());
  cfg.qps = 1000;
  cfg.burst = 10;
  auto client = std::make_shared<kube::Client>(cfg);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        if (client->get(kCm, "default", "o" + std::to_string(t))["metadata"]["name"] == "o" + std::to_string(t)) ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 40);
}
