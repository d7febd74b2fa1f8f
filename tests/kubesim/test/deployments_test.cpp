// apps/v1 Deployments and ReplicaSets with the real kubectl: a Deployment's ReplicaSet and pods
// (names, labels, owners), `kubectl rollout status`, the Table columns, a deleted pod replaced,
// `kubectl scale` through the scale subresource, a template change rolling to a new
// ReplicaSet (RollingUpdate and Recreate), cascading deletion, validation (the selector
// mismatch 422, immutable selector) and discovery.

#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "harness.hpp"

using namespace kubesim_test;

namespace {

std::string deployment_yaml(const std::string& name, int replicas, const std::string& env_value = "a",
                            const std::string& strategy = "") {
  return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: " + name + ", labels: {app: " + name + "}}\nspec:\n" +
         "  replicas: " + std::to_string(replicas) + "\n" + strategy + "  selector: {matchLabels: {app: " + name +
         "}}\n  template:\n    metadata: {labels: {app: " + name + ", tier: web}}\n    spec:\n" +
         "      terminationGracePeriodSeconds: 1\n      containers:\n      - name: main\n        image: busybox\n" +
         "        command: [sleep, '3600']\n        env: [{name: V, value: '" + env_value + "'}]\n";
}

// The pods of a Deployment that are running and not being deleted.
std::vector<json> live_pods(const Kubesim& sim, const std::string& app) {
  std::vector<json> out;
  json list = sim.get_json({"pods", "-l", "app=" + app});
  if (!list.is_object()) return out;
  for (const auto& p : list["items"]) {
    if (!p["metadata"].contains("deletionTimestamp") && p["status"].value("phase", "") == "Running") out.push_back(p);
  }
  return out;
}

std::set<std::string> names_of(const std::vector<json>& objs) {
  std::set<std::string> out;
  for (const auto& o : objs) out.insert(o["metadata"].value("name", ""));
  return out;
}

bool rolled_out(const Kubesim& sim, const std::string& name) {
  CmdResult r = sim.kubectl({"rollout", "status", "deployment/" + name, "--timeout=40s"}, "", 45);
  return r.code == 0 && r.out.find("deployment \"" + name + "\" successfully rolled out") != std::string::npos;
}

const json* condition(const json& obj, const std::string& type) {
  const json* status = obj.contains("status") ? &obj["status"] : nullptr;
  if (!status || !status->contains("conditions")) return nullptr;
  for (const auto& c : (*status)["conditions"]) {
    if (c.value("type", "") == type) return &c;
  }
  return nullptr;
}

}  // namespace

TEST(KubesimDeployments, ReplicaSetAndPodsWithNamesLabelsOwnersAndRolloutStatus) {
  Kubesim sim;
  CmdResult a = sim.apply(deployment_yaml("web", 2));
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_TRUE(rolled_out(sim, "web"));
  json d = sim.get_json({"deployment", "web"});
  json rss = sim.get_json({"replicasets", "-l", "app=web"});
  ASSERT_EQ(rss["items"].size(), 1u);
  const json& rs = rss["items"][0];
  const std::string hash = rs["metadata"]["labels"].value("pod-template-hash", "");
  EXPECT_TRUE(std::regex_match(hash, std::regex("[bcdfghjklmnpqrstvwxz2456789]{6,10}"))) << hash;
  EXPECT_EQ(rs["metadata"]["name"], "web-" + hash);
  EXPECT_EQ(rs["spec"]["selector"]["matchLabels"], json({{"app", "web"}, {"pod-template-hash", hash}}));
  EXPECT_EQ(rs["spec"]["template"]["metadata"]["labels"]["pod-template-hash"], hash);
  const json& ref = rs["metadata"]["ownerReferences"][0];
  EXPECT_EQ(ref, json({{"apiVersion", "apps/v1"},
                       {"kind", "Deployment"},
                       {"name", "web"},
                       {"uid", d["metadata"]["uid"]},
                       {"controller", true},
                       {"blockOwnerDeletion", true}}));
  EXPECT_EQ(rs["metadata"]["annotations"].value("deployment.kubernetes.io/revision", ""), "1");
  auto pods = live_pods(sim, "web");
  ASSERT_EQ(pods.size(), 2u);
  for (const auto& p : pods) {
    EXPECT_TRUE(std::regex_match(p["metadata"].value("name", ""),
                                 std::regex("web-" + hash + "-[bcdfghjklmnpqrstvwxz2456789]{5}")))
        << p["metadata"]["name"];
    EXPECT_EQ(p["metadata"]["labels"], json({{"app", "web"}, {"tier", "web"}, {"pod-template-hash", hash}}));
    EXPECT_EQ(p["metadata"]["ownerReferences"][0]["kind"], "ReplicaSet");
    EXPECT_EQ(p["metadata"]["ownerReferences"][0]["uid"], rs["metadata"]["uid"]);
    EXPECT_EQ(p["metadata"]["ownerReferences"][0]["controller"], true);
  }
  // The status the real controller writes (what rollout status and helm --wait read).
  EXPECT_EQ(d["status"]["observedGeneration"], d["metadata"]["generation"]);
  for (const char* f : {"replicas", "updatedReplicas", "readyReplicas", "availableReplicas"})
    EXPECT_EQ(d["status"][f], 2) << f;
  const json* avail = condition(d, "Available");
  const json* prog = condition(d, "Progressing");
  ASSERT_TRUE(avail && prog) << d["status"].dump();
  EXPECT_EQ((*avail)["reason"], "MinimumReplicasAvailable");
  EXPECT_EQ((*avail)["message"], "Deployment has minimum availability.");
  EXPECT_EQ((*prog)["reason"], "NewReplicaSetAvailable");
  EXPECT_EQ((*prog)["message"], "ReplicaSet \"web-" + hash + "\" has successfully progressed.");
  EXPECT_EQ(d["metadata"]["annotations"].value("deployment.kubernetes.io/revision", ""), "1");
  // kubectl get: the server's Table columns.
  CmdResult t = sim.kubectl({"get", "deploy", "web"});
  EXPECT_TRUE(std::regex_search(t.out, std::regex("^NAME +READY +UP-TO-DATE +AVAILABLE +AGE\nweb +2/2 +2 +2 +")))
      << t.out;
  CmdResult trs = sim.kubectl({"get", "rs", "-o", "wide"});
  EXPECT_TRUE(
      std::regex_search(trs.out, std::regex("^NAME +DESIRED +CURRENT +READY +AGE +CONTAINERS +IMAGES +SELECTOR\nweb-" +
                                            hash + " +2 +2 +2 +.* main +busybox +app=web,pod-template-hash=" + hash)))
      << trs.out;
}

TEST(KubesimDeployments, DeletedPodIsReplacedAndScaleWorks) {
  Kubesim sim;
  ASSERT_EQ(sim.apply(deployment_yaml("web", 2)).code, 0);
  ASSERT_TRUE(rolled_out(sim, "web"));
  auto before = names_of(live_pods(sim, "web"));
  ASSERT_EQ(before.size(), 2u);
  const std::string victim = *before.begin();
  ASSERT_EQ(sim.kubectl({"delete", "pod", victim, "--wait=false"}).code, 0);
  ASSERT_TRUE(wait_until(20, [&] {
    auto now = names_of(live_pods(sim, "web"));
    return now.size() == 2 && now.count(victim) == 0;
  }));
  // A killed container of a restartPolicy Always pod restarts in place; the pod stays.
  // kubectl scale: the scale subresource (GET, then PATCH of the Scale).
  CmdResult up = sim.kubectl({"scale", "deployment/web", "--replicas=3"});
  ASSERT_EQ(up.code, 0) << up.err;
  EXPECT_EQ(up.out, "deployment.apps/web scaled\n");
  ASSERT_TRUE(wait_until(20, [&] { return live_pods(sim, "web").size() == 3; }));
  ASSERT_TRUE(rolled_out(sim, "web"));
  json scale = sim.http("GET", "/apis/apps/v1/namespaces/default/deployments/web/scale").j();
  EXPECT_EQ(scale["kind"], "Scale");
  EXPECT_EQ(scale["apiVersion"], "autoscaling/v1");
  EXPECT_EQ(scale["spec"]["replicas"], 3);
  EXPECT_EQ(scale["status"]["replicas"], 3);
  EXPECT_EQ(scale["status"]["selector"], "app=web");
  json d = sim.get_json({"deployment", "web"});
  EXPECT_EQ(d["metadata"]["generation"], 2);
  CmdResult down = sim.kubectl({"scale", "deployment/web", "--replicas=1"});
  ASSERT_EQ(down.code, 0) << down.err;
  ASSERT_TRUE(wait_until(20, [&] { return sim.get_json({"pods", "-l", "app=web"})["items"].size() == 1; }));
  json rss = sim.get_json({"replicasets", "-l", "app=web"});
  ASSERT_EQ(rss["items"].size(), 1u) << "scaling keeps the ReplicaSet";
  EXPECT_EQ(rss["items"][0]["spec"]["replicas"], 1);
  ASSERT_TRUE(rolled_out(sim, "web"));
  // A negative Scale is refused as the real server does.
  auto bad = sim.http("PATCH", "/apis/apps/v1/namespaces/default/deployments/web/scale", R"({"spec":{"replicas":-1}})",
                      "<admin>", "application/merge-patch+json");
  EXPECT_EQ(bad.code, 422) << bad.body;
  EXPECT_EQ(
      bad.j()["message"],
      "Scale.autoscaling \"web\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0");
}

TEST(KubesimDeployments, TemplateChangeRollsToNewReplicaSet) {
  Kubesim sim;
  ASSERT_EQ(sim.apply(deployment_yaml("web", 2)).code, 0);
  ASSERT_TRUE(rolled_out(sim, "web"));
  const std::string old_rs = sim.get_json({"replicasets", "-l", "app=web"})["items"][0]["metadata"]["name"];
  ASSERT_EQ(sim.apply(deployment_yaml("web", 2, "b")).code, 0);
  ASSERT_TRUE(rolled_out(sim, "web"));
  json rss = sim.get_json({"replicasets", "-l", "app=web"});
  ASSERT_EQ(rss["items"].size(), 2u);
  std::string new_rs;
  for (const auto& rs : rss["items"]) {
    const std::string name = rs["metadata"]["name"];
    if (name == old_rs) {
      EXPECT_EQ(rs["spec"]["replicas"], 0);
      EXPECT_EQ(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "1");
    } else {
      new_rs = name;
      EXPECT_EQ(rs["spec"]["replicas"], 2);
      EXPECT_EQ(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "2");
    }
  }
  ASSERT_FALSE(new_rs.empty());
  ASSERT_TRUE(wait_until(20, [&] { return sim.get_json({"pods", "-l", "app=web"})["items"].size() == 2; }));
  for (const auto& p : live_pods(sim, "web"))
    EXPECT_EQ(p["metadata"]["name"].get<std::string>().rfind(new_rs + "-", 0), 0u);
  json d = sim.get_json({"deployment", "web"});
  EXPECT_EQ(d["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "2");
  EXPECT_EQ((*condition(d, "Progressing"))["message"], "ReplicaSet \"" + new_rs + "\" has successfully progressed.");
  // The events of the rollout, as the real controller's.
  CmdResult ev = sim.kubectl(
      {"get", "events", "--field-selector", "involvedObject.name=web", "-o", "jsonpath={.items[*].message}"});
  EXPECT_NE(ev.out.find("Scaled up replica set " + new_rs + " from 0 to 1"), std::string::npos) << ev.out;
  EXPECT_NE(ev.out.find("Scaled down replica set " + old_rs + " from 2 to 1"), std::string::npos) << ev.out;

  // kubectl rollout undo: the old template again, so its ReplicaSet again, as revision 3.
  CmdResult undo = sim.kubectl({"rollout", "undo", "deployment/web"});
  ASSERT_EQ(undo.code, 0) << undo.err;
  ASSERT_TRUE(rolled_out(sim, "web"));
  json after = sim.get_json({"replicasets", "-l", "app=web"});
  ASSERT_EQ(after["items"].size(), 2u) << "undo makes no third ReplicaSet";
  for (const auto& rs : after["items"]) {
    bool back = rs["metadata"]["name"] == old_rs;
    EXPECT_EQ(rs["spec"]["replicas"], back ? 2 : 0) << rs["metadata"]["name"];
    if (back) {
      EXPECT_EQ(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "3");
    }
  }

  // Recreate: the old pods are gone before the new ReplicaSet gets any.
  std::string recreate = "  strategy: {type: Recreate}\n";
  ASSERT_EQ(sim.apply(deployment_yaml("rec", 2, "a", recreate)).code, 0);
  ASSERT_TRUE(rolled_out(sim, "rec"));
  ASSERT_EQ(sim.apply(deployment_yaml("rec", 2, "b", recreate)).code, 0);
  ASSERT_TRUE(rolled_out(sim, "rec"));
  json recs = sim.get_json({"replicasets", "-l", "app=rec"});
  ASSERT_EQ(recs["items"].size(), 2u);
  long long total = 0;
  for (const auto& rs : recs["items"]) total += rs["spec"].value("replicas", 0LL);
  EXPECT_EQ(total, 2);
}

TEST(KubesimDeployments, DeleteCascadesToReplicaSetsAndPods) {
  Kubesim sim;
  ASSERT_EQ(sim.apply(deployment_yaml("web", 2)).code, 0);
  ASSERT_TRUE(rolled_out(sim, "web"));
  CmdResult d = sim.kubectl({"delete", "deployment", "web"});
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_TRUE(wait_until(
      20, [&] { return sim.get_json({"replicasets"})["items"].empty() && sim.get_json({"pods"})["items"].empty(); }));
  // Foreground: the Deployment goes last.
  ASSERT_EQ(sim.apply(deployment_yaml("fg", 1)).code, 0);
  ASSERT_TRUE(rolled_out(sim, "fg"));
  CmdResult f = sim.kubectl({"delete", "deployment", "fg", "--cascade=foreground", "--timeout=30s"}, "", 35);
  ASSERT_EQ(f.code, 0) << f.err;
  EXPECT_TRUE(sim.get_json({"replicasets"})["items"].empty());
  EXPECT_TRUE(sim.get_json({"pods"})["items"].empty());
}

TEST(KubesimDeployments, ValidationAsTheRealServer) {
  Kubesim sim;
  std::string mismatch =
      "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: bad}\nspec:\n"
      "  selector: {matchLabels: {app: one}}\n  template:\n    metadata: {labels: {app: two}}\n"
      "    spec: {containers: [{name: c, image: busybox}]}\n";
  CmdResult m = sim.apply(mismatch);
  EXPECT_NE(m.code, 0);
  EXPECT_NE(m.err.find("The Deployment \"bad\" is invalid: spec.template.metadata.labels: Invalid value: "
                       "map[string]string{\"app\":\"two\"}: `selector` does not match template `labels`"),
            std::string::npos)
      << m.err;
  auto raw = sim.http(
      "POST", "/apis/apps/v1/namespaces/default/deployments",
      R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"nosel"},)"
      R"("spec":{"template":{"metadata":{"labels":{"app":"y"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}})");
  EXPECT_EQ(raw.code, 422);
  EXPECT_EQ(raw.j()["reason"], "Invalid");
  EXPECT_EQ(raw.j()["details"]["kind"], "Deployment");
  EXPECT_EQ(
      raw.j()["message"],
      "Deployment.apps \"nosel\" is invalid: [spec.selector: Required value, spec.template.metadata.labels: Invalid "
      "value: map[string]string{\"app\":\"y\"}: `selector` does not match template `labels`]");
  // The selector is immutable.
  ASSERT_EQ(sim.apply(deployment_yaml("web", 1)).code, 0);
  json d = sim.get_json({"deployment", "web"});
  d["spec"]["selector"]["matchLabels"]["extra"] = "1";
  d["spec"]["template"]["metadata"]["labels"]["extra"] = "1";
  auto upd = sim.http("PUT", "/apis/apps/v1/namespaces/default/deployments/web", d.dump());
  EXPECT_EQ(upd.code, 422);
  EXPECT_EQ(
      upd.j()["message"],
      "Deployment.apps \"web\" is invalid: spec.selector: Invalid value: "
      "v1.LabelSelector{MatchLabels:map[string]string{"
      "\"app\":\"web\", \"extra\":\"1\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable");
  // Defaults.
  EXPECT_EQ(d["spec"]["strategy"],
            json({{"type", "RollingUpdate"}, {"rollingUpdate", {{"maxSurge", "25%"}, {"maxUnavailable", "25%"}}}}));
  EXPECT_EQ(d["spec"]["revisionHistoryLimit"], 10);
  EXPECT_EQ(d["spec"]["progressDeadlineSeconds"], 600);
  EXPECT_EQ(d["spec"]["template"]["spec"]["restartPolicy"], "Always");
  EXPECT_EQ(d["spec"]["template"]["spec"]["dnsPolicy"], "ClusterFirst");
}

TEST(KubesimDeployments, PodsThatCannotBeCreatedAreRetried) {
  Kubesim sim;
  std::string yaml = deployment_yaml("web", 1);
  yaml.replace(yaml.find("      containers:"), 0, "      serviceAccountName: later\n");
  ASSERT_EQ(sim.apply(yaml).code, 0);
  // ServiceAccount admission refuses the pods: the ReplicaSet says why, as the real controller.
  ASSERT_TRUE(wait_until(20, [&] {
    json rss = sim.get_json({"replicasets", "-l", "app=web"});
    return rss.is_object() && rss["items"].size() == 1 && condition(rss["items"][0], "ReplicaFailure") != nullptr;
  }));
  json rs = sim.get_json({"replicasets", "-l", "app=web"})["items"][0];
  const json* failure = condition(rs, "ReplicaFailure");
  EXPECT_EQ((*failure)["reason"], "FailedCreate");
  EXPECT_NE((*failure)["message"].get<std::string>().find("serviceaccount \"later\" not found"), std::string::npos)
      << (*failure)["message"];
  CmdResult ev =
      sim.kubectl({"get", "events", "--field-selector", "reason=FailedCreate", "-o", "jsonpath={.items[*].message}"});
  EXPECT_NE(ev.out.find("Error creating: pods \"" + rs["metadata"]["name"].get<std::string>() + "-"), std::string::npos)
      << ev.out;
  ASSERT_EQ(sim.kubectl({"create", "serviceaccount", "later"}).code, 0);
  ASSERT_TRUE(rolled_out(sim, "web"));
  EXPECT_EQ(condition(sim.get_json({"replicasets", "-l", "app=web"})["items"][0], "ReplicaFailure"), nullptr);
}

TEST(KubesimDeployments, Discovery) {
  Kubesim sim;
  CmdResult r = sim.kubectl({"api-resources", "--api-group=apps", "--no-headers"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("deployments +deploy +apps/v1 +true +Deployment"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("replicasets +rs +apps/v1 +true +ReplicaSet"))) << r.out;
  json list = sim.http("GET", "/apis/apps/v1").j();
  std::set<std::string> names;
  for (const auto& res : list["resources"]) names.insert(res.value("name", ""));
  EXPECT_EQ(names, (std::set<std::string>{"deployments", "deployments/scale", "deployments/status", "replicasets",
                                          "replicasets/scale", "replicasets/status"}));
  json group = sim.http("GET", "/apis/apps").j();
  EXPECT_EQ(group["preferredVersion"]["groupVersion"], "apps/v1");
}
