// base64, URL building, redaction of logged traffic, watch event parsing, the cache.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kube/base64.hpp"
#include "kube/cache.hpp"
#include "kube/errors.hpp"
#include "kube/json_depth.hpp"
#include "kube/log.hpp"
#include "kube/resource.hpp"
#include "kube/watch.hpp"

namespace kube = trainbench::kube;
using nlohmann::json;

TEST(Base64, RoundTripAndStrictness) {
  const std::vector<std::string> samples = {"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)};
  for (const std::string& s : samples) {
    EXPECT_EQ(kube::base64_decode(kube::base64_encode(s)).value(), s);
  }
  EXPECT_EQ(kube::base64_decode("aGVs\nbG8=\r\n").value(), "hello");
  std::string err;
  EXPECT_FALSE(kube::base64_decode("aGVsbG8", &err));
  EXPECT_NE(err.find("truncated"), std::string::npos);
  EXPECT_FALSE(kube::base64_decode("aGV sbG8=", &err));
  EXPECT_NE(err.find("offset 3"), std::string::npos) << err;
  EXPECT_FALSE(kube::base64_decode("a===", &err));
  EXPECT_FALSE(kube::base64_decode("aGVsbG8=aGVs", &err));
  EXPECT_NE(err.find("after padding"), std::string::npos);
  EXPECT_FALSE(kube::base64_decode("aGVsbG9=", &err));  // non-canonical
}

TEST(Resource, Paths) {
  const auto cm = kube::resources::config_maps();
  EXPECT_EQ(cm.path("default"), "/api/v1/namespaces/default/configmaps");
  EXPECT_EQ(cm.path("default", "x"), "/api/v1/namespaces/default/configmaps/x");
  EXPECT_EQ(cm.path(""), "/api/v1/configmaps");
  const auto bj = kube::resources::benchmark_jobs();
  EXPECT_EQ(bj.path("ns", "j", "status"), "/apis/trainbench.dev/v1alpha1/namespaces/ns/benchmarkjobs/j/status");
  EXPECT_EQ(bj.api_version(), "trainbench.dev/v1alpha1");
  const auto crd = kube::resources::custom_resource_definitions();
  EXPECT_EQ(crd.path("ignored", "a.b"), "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/a.b");
  EXPECT_THROW(cm.path("default", "../secrets"), std::invalid_argument);
  EXPECT_THROW(cm.path("default", ".."), std::invalid_argument);
  EXPECT_THROW(cm.path("a/b", "x"), std::invalid_argument);
  EXPECT_THROW(cm.path("default", "x y"), std::invalid_argument);
  EXPECT_THROW(cm.path("default", "", "status"), std::invalid_argument);
}

TEST(Resource, QueryEncoding) {
  EXPECT_EQ(kube::url_encode("app=x,tier!=db"), "app%3Dx%2Ctier%21%3Ddb");
  EXPECT_EQ(kube::build_query({{"labelSelector", "a=b"}, {"limit", ""}, {"watch", "true"}}),
            "labelSelector=a%3Db&watch=true");
}

TEST(Resource, ObjectKey) {
  EXPECT_EQ(kube::object_key(json{{"metadata", {{"name", "x"}, {"namespace", "ns"}}}}), "ns/x");
  EXPECT_EQ(kube::object_key(json{{"metadata", {{"name", "x"}}}}), "x");
  EXPECT_EQ(kube::object_key(json{{"metadata", {{"name", 3}}}}), "");
  EXPECT_EQ(kube::object_key(json::array()), "");
}

TEST(Redaction, Headers) {
  EXPECT_EQ(kube::redact_header("Authorization", "Bearer abc"), "<redacted>");
  EXPECT_EQ(kube::redact_header("authorization", "Bearer abc"), "<redacted>");
  EXPECT_EQ(kube::redact_header("X-Auth-Token", "abc"), "<redacted>");
  EXPECT_EQ(kube::redact_header("Content-Type", "application/json"), "application/json");
}

TEST(Redaction, SecretBodies) {
  const std::string secret = R"({"kind":"Secret","metadata":{"name":"s"},"data":{"password":"aHVudGVyMg=="}})";
  EXPECT_EQ(kube::redact_body("/api/v1/namespaces/x/secrets/s", secret).find("aHVudGVyMg"), std::string::npos);
  const std::string by_kind = kube::redact_body("/api/v1/whatever", secret);
  EXPECT_EQ(by_kind.find("aHVudGVyMg"), std::string::npos);
  EXPECT_NE(by_kind.find("redacted"), std::string::npos);
  // A Secret nested in a list or a watch event, under an unrelated path.
  const std::string nested =
      R"({"kind":"List","items":[{"kind":"Secret","data":{"k":"c2VjcmV0"},"stringData":{"p":"plain"}}]})";
  const std::string out = kube::redact_body("/api/v1/things", nested);
  EXPECT_EQ(out.find("c2VjcmV0"), std::string::npos);
  EXPECT_EQ(out.find("plain"), std::string::npos);
  // Token requests.
  EXPECT_EQ(kube::redact_body("/api/v1/namespaces/x/serviceaccounts/sa/token", R"({"status":{"token":"eyJ"}})")
                .find("eyJ"),
            std::string::npos);
  // Ordinary objects stay readable; non-JSON shows only its size.
  EXPECT_NE(kube::redact_body("/api/v1/configmaps", R"({"data":{"a":"b"}})").find("\"a\":\"b\""), std::string::npos);
  EXPECT_EQ(kube::redact_body("/x", "password=hunter2"), "<16 bytes, not JSON>");
}

TEST(WatchEvents, Parse) {
  auto ev = kube::parse_watch_event(R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})");
  EXPECT_EQ(ev.type, kube::WatchEventType::kAdded);
  EXPECT_EQ(ev.object["metadata"]["name"], "a");
  EXPECT_EQ(kube::parse_watch_event(R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}})").type,
            kube::WatchEventType::kBookmark);
  EXPECT_EQ(kube::parse_watch_event(R"({"type":"ERROR","object":{"kind":"Status","code":410}})").type,
            kube::WatchEventType::kError);
  for (const char* bad : {"", "{", "[]", R"({"type":"ADDED"})", R"({"type":"WHAT","object":{}})",
                          R"({"type":1,"object":{}})", R"({"type":"ADDED","object":"x"})"}) {
    try {
      kube::parse_watch_event(bad);
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const kube::TransportError& e) {
      EXPECT_EQ(e.kind(), kube::TransportError::Kind::kProtocol);
    }
  }
}

// Found by fuzz/kube_watch_event (regression input fuzz/regressions/kube_watch_event/
// nesting-40000.jsonl): an event nested 40,000 levels deep parsed, then overflowed the stack when
// the object was copied. The bound is the API server's own (Go's encoding/json: 10000 levels).
std::string nested_event(std::size_t depth, const std::string& filler = "") {
  return R"({"type":"ADDED","object":{"metadata":{"name":"a"},"spec":)" + std::string(depth - 1, '[') + filler +
         std::string(depth - 1, ']') + "}}";
}

TEST(WatchEvents, NestingBoundedAsTheApiServers) {
  EXPECT_FALSE(kube::json_nesting_exceeds(R"({"a":[1,{"b":"[[[["}]})", 3));
  EXPECT_TRUE(kube::json_nesting_exceeds(R"({"a":[1,{"b":[]}]})", 3));
  EXPECT_FALSE(kube::json_nesting_exceeds(R"(["a\"[[[[", 1])", 1));  // an escaped quote stays in the string
  EXPECT_TRUE(kube::json_nesting_exceeds(R"(["a\\", [1]])", 1));     // an escaped backslash ends it
  // The object itself is level 2 of the event: kMaxJsonDepth levels in all are read.
  const auto ev = kube::parse_watch_event(nested_event(kube::kMaxJsonDepth - 1, R"("[[[[")"));
  EXPECT_EQ(ev.object["metadata"]["name"], "a");
  try {
    kube::parse_watch_event(nested_event(40000));
    ADD_FAILURE() << "a 40,000-level event was accepted";
  } catch (const kube::TransportError& e) {
    EXPECT_EQ(e.kind(), kube::TransportError::Kind::kProtocol);
    EXPECT_NE(std::string(e.what()).find("nested deeper than 10000 levels"), std::string::npos) << e.what();
  }
  EXPECT_THROW(kube::parse_watch_event(nested_event(kube::kMaxJsonDepth)), kube::TransportError);
}

TEST(Cache, UpsertEraseReplaceAndLabels) {
  kube::Cache cache;
  json a = {{"metadata", {{"name", "a"}, {"namespace", "n"}, {"labels", {{"role", "master"}}}}}};
  json b = {{"metadata", {{"name", "b"}, {"namespace", "n"}, {"labels", {{"role", "trainer"}}}}}};
  EXPECT_FALSE(cache.upsert("n/a", a));
  EXPECT_TRUE(cache.upsert("n/a", a));
  cache.upsert("n/b", b);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_TRUE(cache.get("n", "a"));
  EXPECT_EQ(cache.list_matching({{"role", "trainer"}}).size(), 1u);
  EXPECT_EQ(cache.list_matching({}).size(), 2u);
  EXPECT_TRUE(cache.erase("n/a"));
  EXPECT_FALSE(cache.erase("n/a"));
  auto old = cache.replace({{"n/c", json::object()}});
  EXPECT_EQ(old.size(), 1u);
  EXPECT_EQ(cache.keys(), std::vector<std::string>{"n/c"});
}
