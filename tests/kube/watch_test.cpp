// Watch streams against a scripted server: events as they arrive, malformed and truncated
// streams, error answers, stopping.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "fake_api_server.hpp"
#include "kube/client.hpp"
#include "kube/errors.hpp"
#include "test_util.hpp"

namespace kube = trainbench::kube;
using kubetest::FakeApiServer;
using kubetest::FakeConnection;
using kubetest::FakeRequest;
using kubetest::fake_config;
using kubetest::status_json;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

const kube::ResourceType kCm = kube::resources::config_maps();

std::string event(const std::string& type, const std::string& name, const std::string& rv) {
  return json{{"type", type},
              {"object",
               {{"apiVersion", "v1"},
                {"kind", "ConfigMap"},
                {"metadata", {{"name", name}, {"namespace", "default"}, {"resourceVersion", rv}}}}}}
             .dump() +
         "\n";
}

// A one-shot signal between the test and a handler thread.
struct Latch {
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
  void release() {
    std::lock_guard<std::mutex> lock(m);
    open = true;
    cv.notify_all();
  }
  bool wait(std::chrono::milliseconds d) {
    std::unique_lock<std::mutex> lock(m);
    return cv.wait_for(lock, d, [this] { return open; });
  }
};

}  // namespace

TEST(Watch, EventsArriveBeforeTheResponseEnds) {
  Latch latch;
  std::atomic<bool> handler_timed_out{false};
  FakeApiServer server([&](const FakeRequest&, FakeConnection& c) {
    c.start_chunked(200);
    c.chunk(event("ADDED", "a", "11"));
    if (!latch.wait(10s)) handler_timed_out = true;
    const std::string second = event("MODIFIED", "a", "12");
    c.chunk(second.substr(0, 10));  // one event split over two chunks
    c.chunk(second.substr(10) + "\n" + event("DELETED", "a", "13"));  // plus a blank line
    c.end_chunked();
  });
  kube::Client client(fake_config(server.url()));
  kube::WatchOptions wo;
  wo.resource_version = "10";
  wo.timeout_seconds = 30;
  wo.label_selector = "app=x";
  auto watch = client.watch(kCm, "default", wo);
  kube::WatchEvent ev;
  ASSERT_TRUE(watch->next(ev));
  EXPECT_EQ(ev.type, kube::WatchEventType::kAdded);
  EXPECT_EQ(ev.object["metadata"]["resourceVersion"], "11");
  latch.release();  // only now does the server send the rest
  ASSERT_TRUE(watch->next(ev));
  EXPECT_EQ(ev.type, kube::WatchEventType::kModified);
  ASSERT_TRUE(watch->next(ev));
  EXPECT_EQ(ev.type, kube::WatchEventType::kDeleted);
  EXPECT_FALSE(watch->next(ev));  // clean end
  EXPECT_FALSE(handler_timed_out.load());

  const auto req = server.requests().at(0);
  EXPECT_EQ(req.path, "/api/v1/namespaces/default/configmaps");
  EXPECT_EQ(req.param("watch"), "true");
  EXPECT_EQ(req.param("resourceVersion"), "10");
  EXPECT_EQ(req.param("allowWatchBookmarks"), "true");
  EXPECT_EQ(req.param("timeoutSeconds"), "30");
  EXPECT_EQ(req.param("labelSelector"), "app=x");
}

TEST(Watch, BookmarkAndErrorEvents) {
  FakeApiServer server([](const FakeRequest&, FakeConnection& c) {
    c.start_chunked(200);
    c.chunk(R"({"type":"BOOKMARK","object":{"kind":"ConfigMap","metadata":{"resourceVersion":"50"}}})"
            "\n");
    c.chunk(R"({"type":"ERROR","object":)" + status_json(410, "Expired", "too old resource version: 1 (50)") + "}\n");
    c.end_chunked();
  });
  kube::Client client(fake_config(server.url()));
  auto watch = client.watch(kCm, "default");
  kube::WatchEvent ev;
  ASSERT_TRUE(watch->next(ev));
  EXPECT_EQ(ev.type, kube::WatchEventType::kBookmark);
  EXPECT_EQ(ev.object["metadata"]["resourceVersion"], "50");
  ASSERT_TRUE(watch->next(ev));
  EXPECT_EQ(ev.type, kube::WatchEventType::kError);
  try {
    std::rethrow_exception(kube::make_api_error_from_status(ev.object));
  } catch (const kube::GoneError& e) {
    EXPECT_EQ(e.reason(), "Expired");
  }
}

TEST(Watch, MalformedLineIsAProtocolError) {
  FakeApiServer server([](const FakeRequest&, FakeConnection& c) {
    c.start_chunked(200);
    c.chunk(event("ADDED", "a", "2"));
    c.chunk("{\"type\":\"ADDED\",\"object\":{\n");
    c.end_chunked();
  });
  kube::Client client(fake_config(server.url()));
  auto watch = client.watch(kCm, "default");
  kube::WatchEvent ev;
  ASSERT_TRUE(watch->next(ev));
  try {
    watch->next(ev);
    FAIL();
  } catch (const kube::TransportError& e) {
    EXPECT_EQ(e.kind(), kube::TransportError::Kind::kProtocol);
    EXPECT_NE(std::string(e.what()).find("watch /api/v1/namespaces/default/configmaps"), std::string::npos);
  }
}

TEST(Watch, TruncatedStreamIsATransportError) {
  FakeApiServer server([](const FakeRequest&, FakeConnection& c) {
    c.start_chunked(200);
    c.chunk(event("ADDED", "a", "2"));
    c.write("64\r\n{\"type\":\"MOD");  // announces 100 bytes, sends 12, hangs up
    c.close_after();
  });
  kube::Client client(fake_config(server.url()));
  auto watch = client.watch(kCm, "default");
  kube::WatchEvent ev;
  ASSERT_TRUE(watch->next(ev));
  EXPECT_THROW(watch->next(ev), kube::TransportError);
}

TEST(Watch, ConnectionClosedWithoutTerminatingChunk) {
  FakeApiServer server([](const FakeRequest&, FakeConnection& c) {
    c.start_chunked(200);
    c.chunk(event("ADDED", "a", "2"));
    c.close_after();
  });
  kube::Client client(fake_config(server.url()));
  auto watch = client.watch(kCm, "default");
  kube::WatchEvent ev;
  ASSERT_TRUE(watch->next(ev));
  EXPECT_THROW(watch->next(ev), kube::TransportError);
}

TEST(Watch, ErrorAnswersAndContentType) {
  FakeApiServer server([](const FakeRequest& req, FakeConnection& c) {
    const std::string rv = req.param("resourceVersion");
    if (rv == "1") {
      c.respond(410, status_json(410, "Expired", "too old resource version: 1 (99)"));
    } else if (rv == "2") {
      c.respond(403, status_json(403, "Forbidden", "configmaps is forbidden"));
    } else {
      c.start_chunked(200, "text/plain");
      c.chunk("hello\n");
      c.end_chunked();
    }
  });
  kube::Client client(fake_config(server.url()));
  kube::WatchOptions wo;
  wo.resource_version = "1";
  EXPECT_THROW(client.watch(kCm, "default", wo), kube::GoneError);
  wo.resource_version = "2";
  EXPECT_THROW(client.watch(kCm, "default", wo), kube::ForbiddenError);
  wo.resource_version = "3";
  try {
    client.watch(kCm, "default", wo);
    FAIL();
  } catch (const kube::TransportError& e) {
    EXPECT_EQ(e.kind(), kube::TransportError::Kind::kProtocol);
  }
}

TEST(Watch, StopUnblocksNext) {
  FakeApiServer server([](const FakeRequest&, FakeConnection& c) {
    c.start_chunked(200);
    c.sleep(30s);  // nothing to say
    c.close_after();
  });
  kube::Client client(fake_config(server.url()));
  kube::StopSource stop;
  kube::WatchOptions wo;
  wo.stop = stop.token();
  auto watch = client.watch(kCm, "default", wo);
  std::thread stopper([&] {
    std::this_thread::sleep_for(200ms);
    stop.request_stop();
  });
  const auto start = std::chrono::steady_clock::now();
  kube::WatchEvent ev;
  try {
    watch->next(ev);
    FAIL();
  } catch (const kube::TransportError& e) {
    EXPECT_EQ(e.kind(), kube::TransportError::Kind::kCanceled) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  stopper.join();
  watch.reset();
  server.stop();
}

TEST(Watch, StopMethodAndDestructionWhileOpen) {
  FakeApiServer server([](const FakeRequest&, FakeConnection& c) {
    c.start_chunked(200);
    c.sleep(30s);
    c.close_after();
  });
  kube::Client client(fake_config(server.url()));
  {
    auto watch = client.watch(kCm, "default");
    auto result = std::async(std::launch::async, [&] {
      kube::WatchEvent ev;
      try {
        watch->next(ev);
      } catch (const kube::TransportError& e) {
        return e.kind();
      }
      return kube::TransportError::Kind::kProtocol;
    });
    std::this_thread::sleep_for(100ms);
    watch->stop();
    ASSERT_EQ(result.wait_for(5s), std::future_status::ready);
    EXPECT_EQ(result.get(), kube::TransportError::Kind::kCanceled);
  }
  { auto idle = client.watch(kCm, "default"); }  // destroyed unread: cancels quietly
  server.stop();
}
