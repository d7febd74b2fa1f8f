// Watches through kubectl (ADDED / MODIFIED / DELETED) and raw: bookmarks, selectors,
// resourceVersion replay, 410 Expired after compaction.

#include <gtest/gtest.h>

#include <sstream>
#include <thread>

#include "harness.hpp"

using namespace kubesim_test;

TEST(KubesimWatch, KubectlSeesAddedModifiedDeleted) {
  Kubesim sim;
  auto env = sim.kubectl_env();
  Background watch({KUBESIM_KUBECTL, "--kubeconfig", sim.kubeconfig(), "get", "pods", "-w", "--output-watch-events"},
                   env, sim.dir() + "/../watch.out");
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  ASSERT_EQ(sim.apply("apiVersion: v1\nkind: Pod\nmetadata: {name: w1}\nspec:\n  terminationGracePeriodSeconds: 1\n"
                      "  containers:\n  - {name: c, image: x, command: [sleep, '30']}\n").code, 0);
  ASSERT_TRUE(wait_until(20, [&] { return watch.output().find("Running") != std::string::npos; })) << watch.output();
  ASSERT_EQ(sim.kubectl({"delete", "pod", "w1"}).code, 0);
  ASSERT_TRUE(wait_until(20, [&] { return watch.output().find("DELETED") != std::string::npos; })) << watch.output();
  std::string out = watch.output();
  EXPECT_NE(out.find("ADDED"), std::string::npos) << out;
  EXPECT_NE(out.find("MODIFIED"), std::string::npos) << out;
}

TEST(KubesimWatch, RawWatchReplaysBookmarksAndSelectors) {
  Kubesim sim;
  json list = sim.http("GET", "/api/v1/namespaces/default/configmaps").j();
  std::string rv = list["metadata"]["resourceVersion"];
  ASSERT_EQ(sim.kubectl({"create", "configmap", "a", "--from-literal=k=1"}).code, 0);
  ASSERT_EQ(sim.kubectl({"label", "configmap", "a", "pick=yes"}).code, 0);
  ASSERT_EQ(sim.kubectl({"label", "configmap", "a", "pick-"}).code, 0);
  ASSERT_EQ(sim.kubectl({"create", "configmap", "b", "--from-literal=k=1"}).code, 0);
  HttpResult h = sim.http("GET", "/api/v1/namespaces/default/configmaps?watch=true&labelSelector=pick%3Dyes"
                                 "&allowWatchBookmarks=true&timeoutSeconds=2&resourceVersion=" + rv);
  ASSERT_EQ(h.code, 200);
  std::vector<std::string> types;
  std::istringstream in(h.body);
  std::string line;
  while (std::getline(in, line)) {
    json ev = json::parse(line);
    types.push_back(ev["type"]);
    if (ev["type"] != "BOOKMARK") {
      EXPECT_EQ(ev["object"]["metadata"]["name"], "a");
    }
  }
  // a gets the label (ADDED to this selection), loses it (DELETED); b never matches.
  ASSERT_GE(types.size(), 3u) << h.body;
  EXPECT_EQ(types[0], "ADDED");
  EXPECT_EQ(types[1], "DELETED");
  EXPECT_EQ(types.back(), "BOOKMARK");
}

TEST(KubesimWatch, CompactionMakesOldResourceVersionsGone) {
  Kubesim sim;
  json list = sim.http("GET", "/api/v1/namespaces/default/configmaps").j();
  std::string rv = list["metadata"]["resourceVersion"];
  ASSERT_EQ(sim.kubectl({"create", "configmap", "c", "--from-literal=k=1"}).code, 0);
  HttpResult c = sim.http("POST", "/kubesim/v1/compact");
  ASSERT_EQ(c.code, 200) << c.body;
  HttpResult h = sim.http("GET", "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=2&resourceVersion=" + rv);
  ASSERT_EQ(h.code, 200);
  json ev = json::parse(h.body.substr(0, h.body.find('\n')));
  EXPECT_EQ(ev["type"], "ERROR");
  EXPECT_EQ(ev["object"]["code"], 410);
  EXPECT_EQ(ev["object"]["reason"], "Expired");
  // From the current resourceVersion a watch works.
  std::string now = c.j()["compactedResourceVersion"];
  HttpResult ok = sim.http("GET", "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1&resourceVersion=" + now);
  EXPECT_EQ(ok.code, 200);
  EXPECT_EQ(ok.body.find("ERROR"), std::string::npos) << ok.body;
}
