// Unit tests of kubesim's pure pieces: selectors, patches, CRD schemas, request parsing, and image
// mode's container config (argv, user, runAsNonRoot), image names and container setup plan.

#include <gtest/gtest.h>

#include <algorithm>

#include "patch.hpp"
#include "schema.hpp"
#include "selectors.hpp"
#include "server.hpp"
#include "status.hpp"

using kubesim::json;

TEST(KubesimUnits, LabelSelectors) {
  json labels = {{"app", "web"}, {"tier", "front"}, {"n", "5"}};
  auto m = [&](const std::string& s) { return kubesim::LabelSelector::parse(s).matches(labels); };
  EXPECT_TRUE(m("app=web"));
  EXPECT_TRUE(m("app==web,tier=front"));
  EXPECT_FALSE(m("app!=web"));
  EXPECT_TRUE(m("app in (db, web)"));
  EXPECT_FALSE(m("app notin (web)"));
  EXPECT_TRUE(m("tier"));
  EXPECT_TRUE(m("!missing"));
  EXPECT_FALSE(m("!app"));
  EXPECT_TRUE(m("n>3"));
  EXPECT_FALSE(m("n<3"));
  EXPECT_TRUE(m(""));
  EXPECT_THROW(kubesim::LabelSelector::parse("app in web"), kubesim::ApiError);
  EXPECT_THROW(kubesim::LabelSelector::parse("a b"), kubesim::ApiError);
}

TEST(KubesimUnits, FieldSelectors) {
  json pod = {{"metadata", {{"name", "p"}, {"namespace", "ns"}}}, {"status", {{"phase", "Running"}}}};
  auto ok = [](const std::string&) { return true; };
  EXPECT_TRUE(kubesim::FieldSelector::parse("metadata.name=p,status.phase!=Failed", ok).matches(pod));
  EXPECT_FALSE(kubesim::FieldSelector::parse("status.phase==Pending", ok).matches(pod));
  EXPECT_THROW(kubesim::FieldSelector::parse("spec.x=1", [](const std::string&) { return false; }), kubesim::ApiError);
}

TEST(KubesimUnits, StrategicMergePatchMergesListsByKey) {
  json pod = json::parse(R"({"spec":{"containers":[{"name":"a","image":"x:1","env":[{"name":"A","value":"1"}]},
    {"name":"b","image":"y:1"}]},"metadata":{"finalizers":["f1"]}})");
  json patch = json::parse(R"({"spec":{"$setElementOrder/containers":[{"name":"a"},{"name":"b"}],
    "containers":[{"name":"a","image":"x:2","env":[{"name":"B","value":"2"}]},{"name":"b","$patch":"delete"}]},
    "metadata":{"finalizers":["f2"]}})");
  json out = kubesim::apply_strategic_merge_patch(pod, patch);
  ASSERT_EQ(out["spec"]["containers"].size(), 1u);
  EXPECT_EQ(out["spec"]["containers"][0]["image"], "x:2");
  EXPECT_EQ(out["spec"]["containers"][0]["env"].size(), 2u);
  EXPECT_EQ(out["metadata"]["finalizers"], json({"f1", "f2"}));
  EXPECT_FALSE(out["spec"].contains("$setElementOrder/containers"));
}

TEST(KubesimUnits, ServerSideApplyRemovesFieldsNoLongerApplied) {
  json cur = {{"metadata", {{"labels", {{"a", "1"}, {"b", "2"}}}}}, {"spec", {{"x", 1}, {"y", 2}}}};
  json prev = {{"metadata", {{"labels", {{"a", "1"}, {"b", "2"}}}}}, {"spec", {{"x", 1}, {"y", 2}}}};
  json next = {{"metadata", {{"labels", {{"a", "1"}}}}}, {"spec", {{"x", 3}}}};
  json out = kubesim::apply_server_side(cur, next, &prev, false);
  EXPECT_EQ(out["metadata"]["labels"], json({{"a", "1"}}));
  EXPECT_EQ(out["spec"], json({{"x", 3}}));
}

TEST(KubesimUnits, SchemaDefaultsPrunesAndValidates) {
  json schema = json::parse(R"({"type":"object","properties":{"spec":{"type":"object","required":["n"],
    "properties":{"n":{"type":"integer","minimum":1,"maximum":8},"s":{"type":"string","default":"d","pattern":"^[a-z]+$"},
    "l":{"type":"array","minItems":1,"items":{"type":"object","properties":{"k":{"type":"string","enum":["a","b"]}}}},
    "free":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}}})");
  json obj = json::parse(R"({"apiVersion":"v","kind":"K","metadata":{"name":"x"},
    "spec":{"n":9,"l":[{"k":"c","junk":1}],"free":{"any":1},"extra":true}})");
  std::vector<std::string> unknown;
  kubesim::default_and_prune(schema, obj, unknown);
  EXPECT_EQ(obj["spec"]["s"], "d");
  EXPECT_FALSE(obj["spec"].contains("extra"));
  EXPECT_FALSE(obj["spec"]["l"][0].contains("junk"));
  EXPECT_EQ(obj["spec"]["free"]["any"], 1);
  EXPECT_EQ(unknown, (std::vector<std::string>{"spec.extra", "spec.l[0].junk"}));
  auto errs = kubesim::validate_against_schema(schema, obj);
  ASSERT_EQ(errs.size(), 2u);
  std::vector<std::string> msgs;
  for (const auto& e : errs) msgs.push_back(e.str());
  EXPECT_NE(std::find(msgs.begin(), msgs.end(), "spec.n: Invalid value: 9: spec.n in body should be less than or equal to 8"),
            msgs.end());
  EXPECT_NE(std::find(msgs.begin(), msgs.end(), "spec.l[0].k: Unsupported value: \"c\": supported values: \"a\", \"b\""),
            msgs.end());
}

TEST(KubesimUnits, RequestInfo) {
  kubesim::HttpRequest r;
  r.method = "GET";
  r.path = "/api/v1/namespaces/ns/pods/p/log";
  auto i = kubesim::parse_request_info(r);
  EXPECT_TRUE(i.resource_request);
  EXPECT_EQ(i.verb, "get");
  EXPECT_EQ(i.ns, "ns");
  EXPECT_EQ(i.resource, "pods");
  EXPECT_EQ(i.name, "p");
  EXPECT_EQ(i.subresource, "log");
  r.path = "/api/v1/namespaces/ns";
  i = kubesim::parse_request_info(r);
  EXPECT_EQ(i.resource, "namespaces");
  EXPECT_EQ(i.name, "ns");
  r.path = "/apis/example.dev/v1/widgets";
  r.query.emplace("watch", "true");
  i = kubesim::parse_request_info(r);
  EXPECT_EQ(i.verb, "watch");
  EXPECT_EQ(i.group, "example.dev");
  r.method = "DELETE";
  r.query.clear();
  r.path = "/api/v1/namespaces/ns/configmaps";
  EXPECT_EQ(kubesim::parse_request_info(r).verb, "deletecollection");
  r.method = "GET";
  r.path = "/apis";
  EXPECT_FALSE(kubesim::parse_request_info(r).resource_request);
}
