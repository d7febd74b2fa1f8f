// Discovery and custom resources through the real kubectl: a CRD appears in api-resources at
// once; custom resources by client-side and server-side apply; defaults, pruning and schema
// validation; status subresource rules and generation.

#include <gtest/gtest.h>

#include "harness.hpp"

using namespace kubesim_test;

namespace {

const char* kWidget = R"(apiVersion: example.dev/v1alpha1
kind: Widget
metadata: {name: w1, labels: {app: demo}}
spec: {size: 3}
)";

}  // namespace

TEST(KubesimDiscovery, VersionAndBuiltinResources) {
  Kubesim sim;
  CmdResult v = sim.kubectl({"version", "-o", "json"});
  ASSERT_EQ(v.code, 0) << v.err;
  EXPECT_EQ(json::parse(v.out)["serverVersion"]["minor"], "32");
  CmdResult r = sim.kubectl({"api-resources"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* res : {"pods", "services", "configmaps", "secrets", "serviceaccounts", "leases", "roles",
                          "rolebindings", "clusterroles", "customresourcedefinitions", "namespaces", "nodes"}) {
    EXPECT_NE(r.out.find(res), std::string::npos) << res;
  }
  CmdResult ns = sim.kubectl({"get", "namespaces", "-o", "name"});
  EXPECT_NE(ns.out.find("namespace/default"), std::string::npos);
  CmdResult sa = sim.kubectl({"get", "serviceaccount", "default", "-o", "name"});
  EXPECT_EQ(sa.code, 0) << sa.err;
}

TEST(KubesimDiscovery, LegacyDiscoveryWithoutAggregation) {
  Kubesim sim({"--no-aggregated-discovery"});
  ASSERT_EQ(sim.apply(widget_crd_yaml()).code, 0);
  CmdResult r = sim.kubectl({"api-resources", "--api-group=example.dev"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("widgets"), std::string::npos) << r.out;
}

TEST(KubesimCrd, CrdAppearsInDiscoveryAndServesCustomResources) {
  Kubesim sim;
  CmdResult a = sim.apply(widget_crd_yaml());
  ASSERT_EQ(a.code, 0) << a.err;
  CmdResult w = sim.kubectl({"wait", "--for=condition=Established", "crd/widgets.example.dev", "--timeout=10s"});
  EXPECT_EQ(w.code, 0) << w.err;
  CmdResult r = sim.kubectl({"api-resources"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("widgets"), std::string::npos);
  EXPECT_NE(r.out.find("example.dev/v1alpha1"), std::string::npos);

  CmdResult c = sim.apply(kWidget);
  ASSERT_EQ(c.code, 0) << c.err;
  json obj = sim.get_json({"widget", "w1"});
  ASSERT_TRUE(obj.is_object());
  EXPECT_EQ(obj["apiVersion"], "example.dev/v1alpha1");
  EXPECT_EQ(obj["kind"], "Widget");
  EXPECT_EQ(obj["spec"]["size"], 3);
  EXPECT_EQ(obj["spec"]["mode"], "fast") << "schema default applied";
  EXPECT_EQ(obj["metadata"]["generation"], 1);
  EXPECT_FALSE(obj["metadata"]["uid"].get<std::string>().empty());
  EXPECT_FALSE(obj["metadata"]["resourceVersion"].get<std::string>().empty());

  // The table uses the CRD's printer columns.
  CmdResult t = sim.kubectl({"get", "wg"});
  EXPECT_NE(t.out.find("SIZE"), std::string::npos) << t.out;

  // Server-side apply of a changed spec bumps generation.
  std::string changed = kWidget;
  changed.replace(changed.find("size: 3"), 7, "size: 5");
  CmdResult ssa = sim.apply(changed, {"--server-side"});
  ASSERT_EQ(ssa.code, 0) << ssa.err;
  obj = sim.get_json({"widget", "w1"});
  EXPECT_EQ(obj["spec"]["size"], 5);
  EXPECT_EQ(obj["metadata"]["generation"], 2);

  // Status through the subresource: set, generation unchanged.
  CmdResult p = sim.kubectl({"patch", "widget", "w1", "--subresource=status", "--type=merge", "-p",
                             R"({"status":{"phase":"Running","runs":2}})"});
  ASSERT_EQ(p.code, 0) << p.err;
  obj = sim.get_json({"widget", "w1"});
  EXPECT_EQ(obj["status"]["phase"], "Running");
  EXPECT_EQ(obj["metadata"]["generation"], 2);

  // The main endpoint ignores status; the status endpoint ignores spec.
  CmdResult p2 = sim.kubectl({"patch", "widget", "w1", "--type=merge", "-p", R"({"status":{"phase":"Hacked"}})"});
  EXPECT_EQ(p2.code, 0) << p2.err;
  CmdResult p3 = sim.kubectl({"patch", "widget", "w1", "--subresource=status", "--type=merge", "-p", R"({"spec":{"size":9}})"});
  EXPECT_EQ(p3.code, 0) << p3.err;
  obj = sim.get_json({"widget", "w1"});
  EXPECT_EQ(obj["status"]["phase"], "Running");
  EXPECT_EQ(obj["spec"]["size"], 5);

  // Custom resources reject strategic merge patch.
  CmdResult smp = sim.kubectl({"patch", "widget", "w1", "--type=strategic", "-p", R"({"spec":{"size":4}})"});
  EXPECT_NE(smp.code, 0);
  EXPECT_NE(smp.err.find("the body of the request was in an unknown format"), std::string::npos) << smp.err;
  // JSON patch works.
  CmdResult jp = sim.kubectl({"patch", "widget", "w1", "--type=json", "-p", R"([{"op":"replace","path":"/spec/size","value":7}])"});
  EXPECT_EQ(jp.code, 0) << jp.err;
  EXPECT_EQ(sim.get_json({"widget", "w1"})["spec"]["size"], 7);
}

TEST(KubesimCrd, SchemaValidationAndUnknownFields) {
  Kubesim sim;
  ASSERT_EQ(sim.apply(widget_crd_yaml()).code, 0);
  CmdResult bad = sim.apply(R"(apiVersion: example.dev/v1alpha1
kind: Widget
metadata: {name: bad}
spec: {size: 0, mode: medium}
)");
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.err.find("spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1"),
            std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("spec.mode: Unsupported value: \"medium\""), std::string::npos) << bad.err;
  CmdResult missing = sim.apply("apiVersion: example.dev/v1alpha1\nkind: Widget\nmetadata: {name: m}\nspec: {}\n");
  EXPECT_NE(missing.err.find("spec.size: Required value"), std::string::npos) << missing.err;

  // kubectl asks for strict field validation: unknown fields are an error...
  CmdResult unknown = sim.apply("apiVersion: example.dev/v1alpha1\nkind: Widget\nmetadata: {name: u}\nspec: {size: 1, extra: 2}\n");
  EXPECT_NE(unknown.code, 0);
  EXPECT_NE(unknown.err.find("unknown field \"spec.extra\""), std::string::npos) << unknown.err;
  // ...and without it they are pruned, with a warning.
  HttpResult h = sim.http("POST", "/apis/example.dev/v1alpha1/namespaces/default/widgets",
                          R"({"apiVersion":"example.dev/v1alpha1","kind":"Widget","metadata":{"name":"u"},"spec":{"size":1,"extra":2}})");
  EXPECT_EQ(h.code, 201) << h.body;
  EXPECT_FALSE(h.j()["spec"].contains("extra"));

  // The 422 Status carries causes with field paths.
  HttpResult inv = sim.http("POST", "/apis/example.dev/v1alpha1/namespaces/default/widgets",
                            R"({"apiVersion":"example.dev/v1alpha1","kind":"Widget","metadata":{"name":"v"},"spec":{"size":"big"}})");
  EXPECT_EQ(inv.code, 422);
  json st = inv.j();
  EXPECT_EQ(st["reason"], "Invalid");
  EXPECT_EQ(st["details"]["causes"][0]["field"], "spec.size");
}

TEST(KubesimCrd, DeletingCrdRemovesItsResourcesAndDiscovery) {
  Kubesim sim;
  ASSERT_EQ(sim.apply(widget_crd_yaml()).code, 0);
  ASSERT_EQ(sim.apply(kWidget).code, 0);
  CmdResult d = sim.kubectl({"delete", "crd", "widgets.example.dev"});
  ASSERT_EQ(d.code, 0) << d.err;
  HttpResult h = sim.http("GET", "/apis/example.dev/v1alpha1/namespaces/default/widgets/w1");
  EXPECT_EQ(h.code, 404);
  HttpResult g = sim.http("GET", "/apis/example.dev/v1alpha1");
  EXPECT_EQ(g.code, 404);
}
