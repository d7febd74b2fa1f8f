// What the operator's informer caches keep: everything reconcile() reads, nothing else.
#include "operator/controller/cache_transforms.hpp"

#include <gtest/gtest.h>

using nlohmann::json;
using namespace trainbench::op;

namespace {

json failed_pod() {
  return json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "j-r0-a0-trainer-1", "namespace": "ns", "uid": "u1", "resourceVersion": "42",
                 "labels": {"trainbench.dev/job": "j", "trainbench.dev/run": "0"},
                 "annotations": {"big": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"},
                 "ownerReferences": [{"kind": "BenchmarkJob", "name": "j", "uid": "u0"}],
                 "deletionTimestamp": "2026-11-22T10:00:00Z"},
    "spec": {"nodeName": "node-2", "containers": [{"name": "trainer", "image": "i",
                             "env": [{"name": "TRAINBENCH_RUN_CONFIG", "value": "{\"a\": 1}"}]}]},
    "status": {"phase": "Failed", "reason": "Evicted", "message": "node lost", "podIP": "10.0.0.1",
               "hostIP": "10.1.0.1", "qosClass": "Burstable",
               "conditions": [{"type": "PodScheduled", "status": "True"}],
               "containerStatuses": [{"name": "trainer", "image": "i", "imageID": "sha256:abc", "ready": false,
                                      "restartCount": 0,
                                      "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                                                               "message": "killed"}}}]}
  })");
}

}  // namespace

TEST(CacheTransforms, PodKeepsWhatReconcileReadsAndDropsTheSpec) {
  const json slim = slim_pod(failed_pod());
  EXPECT_EQ(slim["spec"], (json{{"nodeName", "node-2"}})) << "of the spec, only the node (lost nodes)";
  EXPECT_FALSE(slim["metadata"].contains("annotations"));
  EXPECT_FALSE(slim["metadata"].contains("ownerReferences"));
  EXPECT_EQ(slim["metadata"]["name"], "j-r0-a0-trainer-1");
  EXPECT_EQ(slim["metadata"]["namespace"], "ns");
  EXPECT_EQ(slim["metadata"]["resourceVersion"], "42");
  EXPECT_EQ(slim["metadata"]["labels"]["trainbench.dev/run"], "0");
  EXPECT_EQ(slim["metadata"]["deletionTimestamp"], "2026-11-22T10:00:00Z");
  EXPECT_EQ(slim["status"]["phase"], "Failed");
  EXPECT_EQ(slim["status"]["reason"], "Evicted");
  EXPECT_EQ(slim["status"]["message"], "node lost");
  EXPECT_EQ(slim["status"]["conditions"][0]["type"], "PodScheduled");
  const json& cs = slim["status"]["containerStatuses"][0];
  EXPECT_EQ(cs["name"], "trainer");
  EXPECT_EQ(cs["state"]["terminated"]["exitCode"], 137);
  EXPECT_EQ(cs["state"]["terminated"]["message"], "killed");
  EXPECT_FALSE(cs.contains("imageID"));
  EXPECT_LT(slim.dump().size(), failed_pod().dump().size() * 3 / 4);
}

TEST(CacheTransforms, ConfigMapKeepsDataOthersOnlyMetadata) {
  const json cm = {{"metadata", {{"name", "j-r0-result"}, {"namespace", "ns"}, {"resourceVersion", "7"},
                                 {"managedFields", json::array({{{"manager", "x"}}})}}},
                   {"data", {{"result", "{}"}}}};
  const json slim_cm = slim_config_map(cm);
  EXPECT_EQ(slim_cm["data"]["result"], "{}");
  EXPECT_FALSE(slim_cm["metadata"].contains("managedFields"));
  const json svc = {{"metadata", {{"name", "j-r0"}, {"namespace", "ns"}}}, {"spec", {{"clusterIP", "None"}}}};
  const json slim_svc = slim_object(svc);
  EXPECT_EQ(slim_svc["metadata"]["name"], "j-r0");
  EXPECT_FALSE(slim_svc.contains("spec"));
}

TEST(CacheTransforms, NodeKeepsOnlyItsReadyCondition) {
  const json node = {
      {"metadata", {{"name", "n1"}, {"resourceVersion", "7"}, {"annotations", {{"a", "b"}}}}},
      {"spec", {{"podCIDR", "10.0.0.0/24"}}},
      {"status",
       {{"conditions", json::array({{{"type", "MemoryPressure"}, {"status", "False"}},
                                    {{"type", "Ready"}, {"status", "Unknown"}, {"reason", "NodeStatusUnknown"}}})},
        {"images", json::array({"a", "b"})}}}};
  const json slim = slim_node(node);
  EXPECT_EQ(slim["metadata"]["name"], "n1");
  EXPECT_FALSE(slim.contains("spec"));
  ASSERT_EQ(slim["status"]["conditions"].size(), 1u);
  EXPECT_EQ(slim["status"]["conditions"][0]["status"], "Unknown");
  EXPECT_FALSE(slim["status"].contains("images"));
  EXPECT_NO_THROW(slim_node({{"status", {{"conditions", 3}}}}));
}

TEST(CacheTransforms, MalformedObjectsDoNotThrow) {
  EXPECT_NO_THROW(slim_pod(json()));
  EXPECT_NO_THROW(slim_pod(json::array()));
  EXPECT_NO_THROW(slim_pod({{"metadata", 3}, {"status", "x"}}));
  EXPECT_NO_THROW(slim_config_map({{"data", nullptr}}));
  EXPECT_TRUE(slim_object(json("text"))["metadata"].empty());
}
