// kubesim's API fault injection (faults.hpp): each fault class as a client sees it, through the
// real binary with curl and kubectl; the admin API, the audit log's "fault" field and counters.

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "harness.hpp"

using namespace kubesim_test;

namespace {

std::string cm_json(const std::string& name) {
  return json{{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", name}}}, {"data", {{"k", "v"}}}}
      .dump();
}

void set_faults(const Kubesim& sim, const json& spec) {
  HttpResult r = sim.http("PUT", "/kubesim/v1/faults", spec.dump());
  ASSERT_EQ(r.code, 200) << r.body;
}

/// curl with headers (-i): the raw answer and curl's exit code.
CmdResult curl_raw(const Kubesim& sim, const std::string& method, const std::string& path, const std::string& body = "",
                   double max_time = 20) {
  std::vector<std::string> argv = {
      KUBESIM_CURL, "-s",   "-S",       "-i",     "--max-time", std::to_string(max_time),
      "-X",         method, "--cacert", sim.ca(), "-H",         "Authorization: Bearer " + sim.admin_token()};
  if (!body.empty()) {
    argv.insert(argv.end(), {"-H", "Content-Type: application/json", "--data-binary", "@-"});
  }
  argv.push_back(sim.url() + path);
  return run_cmd(argv, {}, body, max_time + 10);
}

const char* kCms = "/api/v1/namespaces/default/configmaps";

json audit_of(const Kubesim& sim, const std::string& verb, const std::string& name) {
  for (const auto& e : sim.audit()) {
    if (e.value("verb", "") == verb && e.value("resource", "") == "configmaps" && e.value("name", "") == name) return e;
  }
  return nullptr;
}

}  // namespace

TEST(KubesimFaults, ErrorStatusesAsTheRealServerSendsThem) {
  Kubesim sim;
  set_faults(sim, {{"seed", 7},
                   {"rules",
                    {{{"fault", "503"}, {"verbs", {"get"}}, {"resources", {"configmaps"}}},
                     {{"fault", "429"}, {"verbs", {"list"}}, {"resources", {"configmaps"}}, {"retryAfterSeconds", 2}},
                     {{"fault", "500"}, {"verbs", {"create"}}, {"resources", {"configmaps"}}}}}});
  CmdResult created = curl_raw(sim, "POST", kCms, cm_json("a"));
  EXPECT_NE(created.out.find("HTTP/1.1 500"), std::string::npos) << created.out;
  EXPECT_NE(created.out.find("\"reason\":\"InternalError\""), std::string::npos) << created.out;
  EXPECT_NE(created.out.find("Internal error occurred: "), std::string::npos) << created.out;
  EXPECT_TRUE(audit_of(sim, "create", "").is_object());
  CmdResult listed = curl_raw(sim, "GET", kCms);
  EXPECT_NE(listed.out.find("HTTP/1.1 429"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("Retry-After: 2"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("\"retryAfterSeconds\":2"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("\"reason\":\"TooManyRequests\""), std::string::npos) << listed.out;
  CmdResult got = curl_raw(sim, "GET", std::string(kCms) + "/kube-root-ca.crt");
  EXPECT_NE(got.out.find("HTTP/1.1 503"), std::string::npos) << got.out;
  EXPECT_NE(got.out.find("\"reason\":\"ServiceUnavailable\""), std::string::npos) << got.out;
  // kubectl shows the server's message; nothing was created.
  CmdResult kc = sim.kubectl({"create", "configmap", "b", "--from-literal=k=v"});
  EXPECT_NE(kc.code, 0);
  EXPECT_NE(kc.err.find("Internal error occurred"), std::string::npos) << kc.err;
  json stats = sim.http("GET", "/kubesim/v1/stats").j();
  EXPECT_EQ(stats["faults"]["injected"]["500"], 2) << stats.dump();
  EXPECT_EQ(stats["faults"]["injected"]["429"], 1) << stats.dump();
  EXPECT_EQ(stats["faults"]["injected"]["503"], 1) << stats.dump();
  // Cleared: requests are served again.
  ASSERT_EQ(sim.http("DELETE", "/kubesim/v1/faults").code, 200);
  EXPECT_EQ(sim.http("POST", kCms, cm_json("c")).code, 201);
}

TEST(KubesimFaults, ResetBeforeAndAfterTheWrite) {
  Kubesim sim;
  set_faults(sim, {{"rules",
                    {{{"fault", "reset-before"}, {"verbs", {"create"}}, {"resources", {"configmaps"}}, {"limit", 1}},
                     {{"fault", "reset-after"}, {"verbs", {"create"}}, {"resources", {"configmaps"}}, {"limit", 1}}}}});
  CmdResult before = curl_raw(sim, "POST", kCms, cm_json("before"));
  EXPECT_NE(before.code, 0) << before.out;  // curl: connection reset / empty reply
  EXPECT_EQ(before.out.find("HTTP/1.1"), std::string::npos) << before.out;
  EXPECT_EQ(sim.http("GET", std::string(kCms) + "/before").code, 404);
  CmdResult after = curl_raw(sim, "POST", kCms, cm_json("after"));
  EXPECT_NE(after.code, 0) << after.out;
  EXPECT_EQ(after.out.find("HTTP/1.1"), std::string::npos) << after.out;
  // The write happened: a retry meets AlreadyExists.
  EXPECT_EQ(sim.http("GET", std::string(kCms) + "/after").code, 200);
  EXPECT_EQ(sim.http("POST", kCms, cm_json("after")).code, 409);
  json a = audit_of(sim, "create", "after");
  ASSERT_TRUE(a.is_object());
  EXPECT_EQ(a["code"], 201);
  EXPECT_EQ(a["fault"], "reset-after");
}

TEST(KubesimFaults, SlowAnswerOutlivesTheClientsTimeout) {
  Kubesim sim;
  set_faults(sim, {{"rules", {{{"fault", "slow"}, {"verbs", {"get"}}, {"delaySeconds", 3}, {"limit", 1}}}}});
  CmdResult slow = curl_raw(sim, "GET", std::string(kCms) + "/kube-root-ca.crt", "", 1);
  EXPECT_EQ(slow.code, 28) << slow.err;                                           // curl: operation timed out
  EXPECT_EQ(sim.http("GET", std::string(kCms) + "/kube-root-ca.crt").code, 200);  // the limit was 1
}

TEST(KubesimFaults, WatchCutInTheMiddleOfAnEvent) {
  Kubesim sim;
  ASSERT_EQ(sim.http("POST", kCms, cm_json("w1")).code, 201);
  ASSERT_EQ(sim.http("POST", kCms, cm_json("w2")).code, 201);
  set_faults(sim, {{"rules", {{{"fault", "watch-cut"}, {"resources", {"configmaps"}}, {"cutAfterEvents", 1}}}}});
  CmdResult w = curl_raw(sim, "GET", std::string(kCms) + "?watch=true&resourceVersion=0&timeoutSeconds=5");
  EXPECT_NE(w.code, 0) << w.out;  // the connection was reset, not ended
  const std::string body = w.out.substr(w.out.find("\r\n\r\n") + 4);
  const auto first_nl = body.find('\n');
  ASSERT_NE(first_nl, std::string::npos) << body;
  EXPECT_FALSE(json::parse(body.substr(0, first_nl), nullptr, false).is_discarded()) << "one whole event first";
  const std::string rest = body.substr(first_nl + 1);
  EXPECT_FALSE(rest.empty()) << "then part of the next";
  EXPECT_EQ(rest.find('\n'), std::string::npos) << "and no end of line: " << rest;
  EXPECT_TRUE(json::parse(rest, nullptr, false).is_discarded()) << rest;
}

TEST(KubesimFaults, SeededFractionIsReproducibleAndSelective) {
  Kubesim sim;
  const json spec = {{"seed", 42},
                     {"rules",
                      {{{"fault", "500"},
                        {"verbs", {"get"}},
                        {"resources", {"configmaps"}},
                        {"fraction", 0.5},
                        {"userAgent", "curl"}}}}};
  auto pattern = [&] {
    std::string p;
    for (int i = 0; i < 24; ++i) p += sim.http("GET", std::string(kCms) + "/kube-root-ca.crt").code == 500 ? 'x' : '.';
    return p;
  };
  set_faults(sim, spec);
  const std::string first = pattern();
  set_faults(sim, spec);
  EXPECT_EQ(pattern(), first);
  EXPECT_NE(first.find('x'), std::string::npos) << first;
  EXPECT_NE(first.find('.'), std::string::npos) << first;
  // Another client (kubectl's User-Agent) is not selected.
  for (int i = 0; i < 5; ++i) EXPECT_EQ(sim.kubectl({"get", "configmap", "kube-root-ca.crt"}).code, 0);
  // Other verbs are not selected either.
  EXPECT_EQ(sim.http("GET", kCms).code, 200);
}

TEST(KubesimFaults, BadConfigurationIsRefusedNamingTheField) {
  Kubesim sim;
  HttpResult r = sim.http("PUT", "/kubesim/v1/faults", R"({"rules":[{"fault":"418"}]})");
  EXPECT_EQ(r.code, 400);
  EXPECT_NE(r.body.find("rules[0].fault"), std::string::npos) << r.body;
  r = sim.http("PUT", "/kubesim/v1/faults", R"({"rules":[{"fault":"500","fraction":2}]})");
  EXPECT_EQ(r.code, 400);
  EXPECT_NE(r.body.find("rules[0].fraction"), std::string::npos) << r.body;
  r = sim.http("PUT", "/kubesim/v1/faults", R"({"rules":[{"fault":"500","verb":["get"]}]})");
  EXPECT_EQ(r.code, 400);
  EXPECT_NE(r.body.find("unknown field \\\"verb\\\""), std::string::npos) << r.body;
  // Only the admin may set faults.
  EXPECT_EQ(sim.http("PUT", "/kubesim/v1/faults", "{}", "").code, 401);
  // The flag takes the same JSON.
  Kubesim flagged({"--faults", R"({"seed":3,"rules":[{"fault":"503","verbs":["list"],"resources":["secrets"]}]})"});
  EXPECT_EQ(flagged.http("GET", "/api/v1/namespaces/default/secrets").code, 503);
  EXPECT_EQ(flagged.http("GET", "/kubesim/v1/faults").j()["seed"], 3);
}
