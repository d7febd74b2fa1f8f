// The reflector against MiniApi: list + watch, 410 handling (ERROR event and HTTP), reconnects
// (broken streams, malformed events, server restarts), bookmarks, prompt stop.

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <thread>

#include "fake_api_server.hpp"
#include "mini_api.hpp"
#include "kube/reflector.hpp"
#include "test_util.hpp"

namespace kube = trainbench::kube;
using kubetest::FakeApiServer;
using kubetest::MiniApi;
using kubetest::fake_config;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

// Records handler calls; lets the test wait for a condition on them.
struct Recorder {
  std::mutex m;
  std::condition_variable cv;
  std::vector<std::string> log;  // "add a", "update a v2", "delete b"
  std::vector<std::string> errors;
  int synced = 0;

  kube::ReflectorHandlers handlers() {
    kube::ReflectorHandlers h;
    h.on_add = [this](const json& o) { record("add " + o["metadata"]["name"].get<std::string>()); };
    h.on_update = [this](const json&, const json& o) {
      record("update " + o["metadata"]["name"].get<std::string>() + " " + o["data"]["value"].get<std::string>());
    };
    h.on_delete = [this](const json& o) { record("delete " + o["metadata"]["name"].get<std::string>()); };
    h.on_synced = [this] {
      std::lock_guard<std::mutex> lock(m);
      ++synced;
      cv.notify_all();
    };
    h.on_error = [this](const std::string& e) {
      std::lock_guard<std::mutex> lock(m);
      errors.push_back(e);
      cv.notify_all();
    };
    return h;
  }
  void record(const std::string& s) {
    std::lock_guard<std::mutex> lock(m);
    log.push_back(s);
    cv.notify_all();
  }
  bool has(const std::string& s) {
    std::lock_guard<std::mutex> lock(m);
    return std::find(log.begin(), log.end(), s) != log.end();
  }
  bool wait_for(const std::function<bool()>& pred, std::chrono::milliseconds d = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < deadline) {
      if (pred()) return true;
      std::unique_lock<std::mutex> lock(m);
      cv.wait_for(lock, 20ms);
    }
    return pred();
  }
  bool wait_has(const std::string& s) {
    return wait_for([&] { return has(s); });
  }
};

kube::ReflectorOptions fast_options() {
  kube::ReflectorOptions o;
  o.backoff.initial = 20ms;
  o.backoff.max = 200ms;
  o.seed = 7;
  return o;
}

std::set<std::string> keys(const kube::Reflector& r) {
  auto k = r.cache()->keys();
  return {k.begin(), k.end()};
}

}  // namespace

TEST(Reflector, ListsThenFollowsTheWatch) {
  MiniApi api;
  api.put("a", "1");
  api.put("b", "1");
  FakeApiServer server(api.handler());
  auto client = std::make_shared<kube::Client>(fake_config(server.url()));
  Recorder rec;
  kube::Reflector r(client, kube::resources::config_maps(), "default", fast_options(), rec.handlers());
  r.start();
  ASSERT_TRUE(r.wait_for_sync(10s));
  EXPECT_TRUE(rec.has("add a"));
  EXPECT_TRUE(rec.has("add b"));
  EXPECT_EQ(r.resource_version(), api.resource_version());
  // List items get type meta.
  EXPECT_EQ(r.cache()->get("default/a").value()["kind"], "ConfigMap");

  ASSERT_TRUE(rec.wait_for([&] { return api.live_watches() == 1; }));
  api.put("c", "1");
  api.put("a", "2");
  api.remove("b");
  ASSERT_TRUE(rec.wait_has("delete b"));
  EXPECT_TRUE(rec.has("add c"));
  EXPECT_TRUE(rec.has("update a 2"));
  EXPECT_EQ(keys(r), (std::set<std::string>{"default/a", "default/c"}));
  EXPECT_EQ(r.cache()->get("default", "a").value()["data"]["value"], "2");
  EXPECT_EQ(r.resource_version(), api.resource_version());
  EXPECT_EQ(rec.synced, 1);
  EXPECT_EQ(api.list_count(), 1);
  r.stop();
}

TEST(Reflector, RelistsAfterAnErrorEvent410AndDeliversTheDifference) {
  MiniApi api;
  api.put("a", "1");
  api.put("b", "1");
  FakeApiServer server(api.handler());
  auto client = std::make_shared<kube::Client>(fake_config(server.url()));
  Recorder rec;
  kube::Reflector r(client, kube::resources::config_maps(), "default", fast_options(), rec.handlers());
  r.start();
  ASSERT_TRUE(r.wait_for_sync(10s));
  ASSERT_TRUE(rec.wait_for([&] { return api.live_watches() == 1; }));
  // Changes the reflector never hears about, then compaction.
  api.put("c", "1", /*silent=*/true);
  api.put("a", "2", true);
  api.remove("b", true);
  api.compact();
  ASSERT_TRUE(rec.wait_has("delete b"));
  ASSERT_TRUE(rec.wait_has("add c"));
  ASSERT_TRUE(rec.wait_has("update a 2"));
  EXPECT_EQ(keys(r), (std::set<std::string>{"default/a", "default/c"}));
  EXPECT_GE(r.stats().relists_on_gone, 1u);
  EXPECT_EQ(api.list_count(), 2);
  // And it watches again from the new version.
  ASSERT_TRUE(rec.wait_for([&] { return api.live_watches() == 1; }));
  api.put("d", "1");
  EXPECT_TRUE(rec.wait_has("add d"));
}

TEST(Reflector, RelistsAfterHttp410) {
  MiniApi api;
  api.put("a", "1");
  FakeApiServer server(api.handler());
  auto client = std::make_shared<kube::Client>(fake_config(server.url()));
  Recorder rec;
  kube::Reflector r(client, kube::resources::config_maps(), "default", fast_options(), rec.handlers());
  r.start();
  ASSERT_TRUE(r.wait_for_sync(10s));
  ASSERT_TRUE(rec.wait_for([&] { return api.live_watches() == 1; }));
  api.put("z", "1", true);
  // Drop the stream first, then compact, so that the reconnect meets an HTTP 410.
  api.end_watches(/*clean=*/false);
  ASSERT_TRUE(rec.wait_for([&] { return api.live_watches() == 0; }));
  api.compact(/*http_gone=*/true);
  ASSERT_TRUE(rec.wait_has("add z"));
  EXPECT_GE(r.stats().relists_on_gone, 1u);
}

TEST(Reflector, ReconnectsAfterBrokenStreamsAndMalformedEvents) {
  MiniApi api;
  FakeApiServer server(api.handler());
  auto client = std::make_shared<kube::Client>(fake_config(server.url()));
  Recorder rec;
  kube::Reflector r(client, kube::resources::config_maps(), "default", fast_options(), rec.handlers());
  r.start();
  ASSERT_TRUE(r.wait_for_sync(10s));
  ASSERT_TRUE(rec.wait_for([&] { return api.live_watches() == 1; }));
  api.put("a", "1");
  ASSERT_TRUE(rec.wait_has("add a"));
  api.send_raw("{\"type\":\"ADDED\",\"object\":");  // malformed
  ASSERT_TRUE(rec.wait_for([&] { return r.stats().failures >= 1 && api.live_watches() == 1; }));
  api.put("b", "1");
  ASSERT_TRUE(rec.wait_has("add b"));
  api.end_watches(/*clean=*/false);  // connection dropped mid-stream
  ASSERT_TRUE(rec.wait_for([&] { return r.stats().failures >= 2 && api.live_watches() == 1; }));
  api.put("c", "1");
  ASSERT_TRUE(rec.wait_has("add c"));
  api.end_watches(/*clean=*/true);  // as timeoutSeconds does: watch again, no backoff, no list
  ASSERT_TRUE(rec.wait_for([&] { return r.stats().watches >= 4 && api.live_watches() == 1; }));
  EXPECT_EQ(api.list_count(), 1);
  EXPECT_FALSE(rec.errors.empty());
}

TEST(Reflector, AStreamThatDeliveredEventsReconnectsWithoutGrowingBackoff) {
  // Watches cut again and again after an event (kubesim's watch-cut fault): each was a working
  // stream, so each reconnect waits the first delay (<= 300 ms), where a growing backoff
  // (x4 per failure) would wait 1.2 s, 4.8 s, 19 s, ... and leave the cache behind.
  MiniApi api;
  FakeApiServer server(api.handler());
  auto client = std::make_shared<kube::Client>(fake_config(server.url()));
  Recorder rec;
  kube::ReflectorOptions o = fast_options();
  o.backoff.initial = 300ms;
  o.backoff.max = 60s;
  o.backoff.factor = 4;
  kube::Reflector r(client, kube::resources::config_maps(), "default", o, rec.handlers());
  r.start();
  ASSERT_TRUE(r.wait_for_sync(10s));
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(rec.wait_for([&] { return api.live_watches() == 1; }, 3s)) << "cut " << i << ": no prompt reconnect";
    const std::string name = "cm" + std::to_string(i);
    api.put(name, "1");
    ASSERT_TRUE(rec.wait_has("add " + name));
    api.end_watches(/*clean=*/false);
    ASSERT_TRUE(rec.wait_for([&] { return r.stats().failures >= static_cast<std::uint64_t>(i + 1); }));
  }
  ASSERT_TRUE(rec.wait_for([&] { return api.live_watches() == 1; }, 3s));
  EXPECT_EQ(api.list_count(), 1);  // a dropped stream resumes from its resourceVersion
}

TEST(Reflector, ReconnectsWhenTheServerRestarts) {
  MiniApi api;
  api.put("a", "1");
  auto server = std::make_unique<FakeApiServer>(api.handler());
  const int port = server->port();
  auto client = std::make_shared<kube::Client>(fake_config(server->url()));
  Recorder rec;
  kube::Reflector r(client, kube::resources::config_maps(), "default", fast_options(), rec.handlers());
  r.start();
  ASSERT_TRUE(r.wait_for_sync(10s));
  ASSERT_TRUE(rec.wait_for([&] { return api.live_watches() == 1; }));
  server.reset();  // the server goes away
  ASSERT_TRUE(rec.wait_for([&] { return r.stats().failures >= 1; }));
  api.put("b", "1");  // happens while it is down
  kubetest::FakeServerOptions same_port;
  same_port.port = port;
  server = std::make_unique<FakeApiServer>(api.handler(), same_port);
  ASSERT_TRUE(rec.wait_has("add b"));
  EXPECT_EQ(api.list_count(), 1);  // resumed the watch from its version, no list needed
  r.stop();
}

TEST(Reflector, BookmarksAdvanceTheResourceVersion) {
  MiniApi api;
  api.put("a", "1");
  FakeApiServer server(api.handler());
  auto client = std::make_shared<kube::Client>(fake_config(server.url()));
  Recorder rec;
  kube::Reflector r(client, kube::resources::config_maps(), "default", fast_options(), rec.handlers());
  r.start();
  ASSERT_TRUE(r.wait_for_sync(10s));
  ASSERT_TRUE(rec.wait_for([&] { return api.live_watches() == 1; }));
  api.put("other", "1", /*silent=*/true);  // moves the version without an event
  api.bookmark();
  ASSERT_TRUE(rec.wait_for([&] { return r.resource_version() == api.resource_version(); }));
  EXPECT_FALSE(rec.has("add other"));
}

TEST(Reflector, HandlerExceptionsAreReportedNotFatal) {
  MiniApi api;
  FakeApiServer server(api.handler());
  auto client = std::make_shared<kube::Client>(fake_config(server.url()));
  Recorder rec;
  auto h = rec.handlers();
  auto record_add = h.on_add;
  h.on_add = [&](const json& o) {
    record_add(o);
    throw std::runtime_error("handler bug");
  };
  kube::Reflector r(client, kube::resources::config_maps(), "default", fast_options(), h);
  r.start();
  ASSERT_TRUE(r.wait_for_sync(10s));
  ASSERT_TRUE(rec.wait_for([&] { return api.live_watches() == 1; }));
  api.put("a", "1");
  api.put("b", "1");
  ASSERT_TRUE(rec.wait_has("add b"));
  std::lock_guard<std::mutex> lock(rec.m);
  EXPECT_FALSE(rec.errors.empty());
  EXPECT_NE(rec.errors.front().find("handler bug"), std::string::npos);
}

TEST(Reflector, StopIsPromptWhileWatchingAndWhileFailing) {
  MiniApi api;
  FakeApiServer server(api.handler());
  auto client = std::make_shared<kube::Client>(fake_config(server.url()));
  {
    Recorder rec;
    kube::Reflector r(client, kube::resources::config_maps(), "default", fast_options(), rec.handlers());
    r.start();
    ASSERT_TRUE(r.wait_for_sync(10s));
    ASSERT_TRUE(rec.wait_for([&] { return api.live_watches() == 1; }));
    const auto start = std::chrono::steady_clock::now();
    r.stop();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  }
  {
    // A collection it can never list (404 on another namespace), with a long backoff.
    Recorder rec;
    auto opts = fast_options();
    opts.backoff.initial = 60s;
    opts.backoff.max = 60s;
    kube::Reflector r(client, kube::resources::config_maps(), "elsewhere", opts, rec.handlers());
    r.start();
    ASSERT_TRUE(rec.wait_for([&] { return r.stats().failures >= 1; }));
    EXPECT_FALSE(r.has_synced());
    const auto start = std::chrono::steady_clock::now();
    r.stop();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
    EXPECT_FALSE(r.wait_for_sync(10s));  // returns at once once stopped
  }
}
