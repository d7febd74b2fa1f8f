// API semantics over raw HTTPS: authentication (401), TLS verification against the right and a
// wrong CA, resourceVersion conflicts (409), AlreadyExists, NotFound, generateName, list
// paging, label/field selector errors, patches, deletion preconditions, finalizers.

#include <gtest/gtest.h>

#include "harness.hpp"

using namespace kubesim_test;

namespace {
const std::string kCms = "/api/v1/namespaces/default/configmaps";
}

TEST(KubesimHttp, AuthenticationAndTls) {
  Kubesim sim;
  HttpResult anon = sim.http("GET", kCms, "", "");
  EXPECT_EQ(anon.code, 401);
  EXPECT_EQ(anon.j()["kind"], "Status");
  EXPECT_EQ(anon.j()["reason"], "Unauthorized");
  EXPECT_EQ(sim.http("GET", kCms, "", "not-a-token").code, 401);
  EXPECT_EQ(sim.http("GET", "/healthz", "", "").code, 200);
  EXPECT_EQ(sim.http("GET", "/version", "", "").code, 200);

  // curl with the right CA works (above); with another CA, verification fails.
  std::string other = sim.dir() + "/../other";
  CmdResult gen = run_cmd({KUBESIM_OPENSSL, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                           "-nodes", "-subj", "/CN=other-ca", "-days", "1", "-keyout", other + ".key", "-out",
                           other + ".crt"});
  ASSERT_EQ(gen.code, 0) << gen.err;
  CmdResult bad = run_cmd({KUBESIM_CURL, "-s", "-S", "--cacert", other + ".crt", sim.url() + "/healthz"});
  EXPECT_EQ(bad.code, 60) << bad.err;  // CURLE_PEER_FAILED_VERIFICATION
  EXPECT_NE(bad.err.find("certificate"), std::string::npos) << bad.err;
  CmdResult good = run_cmd({KUBESIM_CURL, "-s", "-S", "--cacert", sim.ca(), sim.url() + "/healthz"});
  EXPECT_EQ(good.code, 0) << good.err;
  EXPECT_EQ(good.out, "ok");
  // The certificate is for localhost too.
  std::string port = sim.url().substr(sim.url().rfind(':') + 1);
  CmdResult local = run_cmd({KUBESIM_CURL, "-s", "-S", "--cacert", sim.ca(), "https://localhost:" + port + "/healthz"});
  EXPECT_EQ(local.code, 0) << local.err;
}

TEST(KubesimHttp, CreateConflictsAndNotFound) {
  Kubesim sim;
  std::string cm = R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"a":"1"}})";
  HttpResult c = sim.http("POST", kCms, cm);
  ASSERT_EQ(c.code, 201) << c.body;
  std::string rv = c.j()["metadata"]["resourceVersion"];
  HttpResult dup = sim.http("POST", kCms, cm);
  EXPECT_EQ(dup.code, 409);
  EXPECT_EQ(dup.j()["reason"], "AlreadyExists");
  EXPECT_EQ(dup.j()["message"], "configmaps \"x\" already exists");

  json upd = c.j();
  upd["data"]["a"] = "2";
  HttpResult u1 = sim.http("PUT", kCms + "/x", upd.dump());
  ASSERT_EQ(u1.code, 200) << u1.body;
  EXPECT_NE(u1.j()["metadata"]["resourceVersion"], rv);
  upd["data"]["a"] = "3";  // still carries the old resourceVersion
  HttpResult stale = sim.http("PUT", kCms + "/x", upd.dump());
  EXPECT_EQ(stale.code, 409);
  EXPECT_EQ(stale.j()["reason"], "Conflict");
  EXPECT_EQ(stale.j()["message"],
            "Operation cannot be fulfilled on configmaps \"x\": the object has been modified; please apply your "
            "changes to the latest version and try again");
  // A merge patch carrying a stale resourceVersion conflicts too.
  HttpResult sp = sim.http("PATCH", kCms + "/x", R"({"metadata":{"resourceVersion":")" + rv + R"("},"data":{"a":"4"}})",
                           "<admin>", "application/merge-patch+json");
  EXPECT_EQ(sp.code, 409);
  // A no-op update keeps the resourceVersion.
  json cur = sim.http("GET", kCms + "/x").j();
  HttpResult same = sim.http("PUT", kCms + "/x", cur.dump());
  EXPECT_EQ(same.j()["metadata"]["resourceVersion"], cur["metadata"]["resourceVersion"]);

  HttpResult nf = sim.http("GET", kCms + "/missing");
  EXPECT_EQ(nf.code, 404);
  EXPECT_EQ(nf.j()["message"], "configmaps \"missing\" not found");
  EXPECT_EQ(nf.j()["details"]["kind"], "configmaps");
  EXPECT_EQ(sim.http("GET", "/api/v1/namespaces/nope/configmaps/x").code, 404);
  EXPECT_EQ(sim.http("POST", "/api/v1/namespaces/nope/configmaps", cm).code, 404);

  HttpResult gen = sim.http("POST", kCms, R"({"metadata":{"generateName":"job-"},"data":{}})");
  ASSERT_EQ(gen.code, 201);
  std::string name = gen.j()["metadata"]["name"];
  EXPECT_EQ(name.size(), 9u);
  EXPECT_EQ(name.rfind("job-", 0), 0u);

  HttpResult badname = sim.http("POST", kCms, R"({"metadata":{"name":"Bad_Name"}})");
  EXPECT_EQ(badname.code, 422);
  HttpResult badsel = sim.http("GET", kCms + "?fieldSelector=spec.foo%3Dbar");
  EXPECT_EQ(badsel.code, 400);
  EXPECT_EQ(badsel.j()["message"], "field label not supported: spec.foo");
}

TEST(KubesimHttp, ListPagingAndDeletePreconditionsAndFinalizers) {
  Kubesim sim;
  for (const char* n : {"a", "b", "c"}) {
    ASSERT_EQ(sim.http("POST", kCms, std::string(R"({"metadata":{"name":")") + n + R"("}})").code, 201);
  }
  json page1 = sim.http("GET", kCms + "?limit=2").j();
  ASSERT_EQ(page1["items"].size(), 2u);
  EXPECT_FALSE(page1["items"][0].contains("kind")) << "built-in list items carry no kind, as in the real server";
  std::string cont = page1["metadata"]["continue"];
  json page2 = sim.http("GET", kCms + "?limit=2&continue=" + cont).j();
  bool saw_c = false;
  for (const auto& i : page2["items"]) saw_c = saw_c || i["metadata"]["name"] == "c";
  EXPECT_TRUE(saw_c) << page2.dump();

  HttpResult pre = sim.http("DELETE", kCms + "/a", R"({"preconditions":{"uid":"wrong"}})");
  EXPECT_EQ(pre.code, 409);

  // A finalizer keeps the object (with deletionTimestamp) until it is removed.
  ASSERT_EQ(sim.http("PATCH", kCms + "/b", R"({"metadata":{"finalizers":["example.dev/hold"]}})", "<admin>",
                     "application/merge-patch+json").code, 200);
  HttpResult d = sim.http("DELETE", kCms + "/b");
  EXPECT_EQ(d.code, 200);
  json held = sim.http("GET", kCms + "/b").j();
  EXPECT_TRUE(held["metadata"].contains("deletionTimestamp"));
  ASSERT_EQ(sim.http("PATCH", kCms + "/b", R"({"metadata":{"finalizers":null}})", "<admin>",
                     "application/merge-patch+json").code, 200);
  EXPECT_EQ(sim.http("GET", kCms + "/b").code, 404);

  // Strategic merge patch on a built-in kind; JSON patch with a failing test.
  EXPECT_EQ(sim.http("PATCH", kCms + "/c", R"({"data":{"k":"v"}})", "<admin>",
                     "application/strategic-merge-patch+json").code, 200);
  EXPECT_EQ(sim.http("PATCH", kCms + "/c", R"([{"op":"test","path":"/data/k","value":"nope"}])", "<admin>",
                     "application/json-patch+json").code, 422);
}

TEST(KubesimHttp, LeaseLeaderElectionPattern) {
  Kubesim sim;
  const std::string leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
  std::string lease = R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"op"},
    "spec":{"holderIdentity":"a","leaseDurationSeconds":15,"acquireTime":"2024-01-01T00:00:00.000000Z",
    "renewTime":"2024-01-01T00:00:00.000000Z"}})";
  HttpResult c = sim.http("POST", leases, lease);
  ASSERT_EQ(c.code, 201) << c.body;
  EXPECT_EQ(sim.http("POST", leases, lease).code, 409);
  json a = c.j();
  json b = c.j();
  a["spec"]["holderIdentity"] = "a";
  a["spec"]["renewTime"] = "2024-01-01T00:00:02.000000Z";
  b["spec"]["holderIdentity"] = "b";
  EXPECT_EQ(sim.http("PUT", leases + "/op", a.dump()).code, 200);
  EXPECT_EQ(sim.http("PUT", leases + "/op", b.dump()).code, 409) << "b lost the race";
  EXPECT_EQ(sim.http("GET", leases + "/op").j()["spec"]["holderIdentity"], "a");
}
