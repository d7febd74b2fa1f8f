// Garbage collection through ownerReferences: deleting an owner (a custom resource) with
// kubectl deletes its pods, services and config maps; Orphan keeps them.

#include <gtest/gtest.h>

#include <thread>

#include "harness.hpp"

using namespace kubesim_test;

namespace {

std::string dependents_yaml(const std::string& owner_uid, const std::string& suffix) {
  std::string ref = "  ownerReferences:\n  - {apiVersion: example.dev/v1alpha1, kind: Widget, name: owner, uid: " +
                    owner_uid + ", controller: true, blockOwnerDeletion: true}\n";
  return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-" + suffix + "\n  labels: {owner: w}\n" + ref +
         "data: {a: '1'}\n---\n"
         "apiVersion: v1\nkind: Service\nmetadata:\n  name: svc-" + suffix + "\n" + ref +
         "spec:\n  clusterIP: None\n  selector: {app: x}\n---\n"
         "apiVersion: v1\nkind: Pod\nmetadata:\n  name: pod-" + suffix + "\n  labels: {owner: w}\n" + ref +
         "spec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: c, image: x, command: [sleep, '30']}\n";
}

}  // namespace

TEST(KubesimGc, DeletingOwnerDeletesDependents) {
  Kubesim sim;
  ASSERT_EQ(sim.apply(widget_crd_yaml()).code, 0);
  ASSERT_EQ(sim.apply("apiVersion: example.dev/v1alpha1\nkind: Widget\nmetadata: {name: owner}\nspec: {size: 1}\n").code, 0);
  std::string uid = sim.get_json({"widget", "owner"})["metadata"]["uid"];
  CmdResult a = sim.apply(dependents_yaml(uid, "1"));
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_TRUE(wait_until(20, [&] { return sim.get_json({"pod", "pod-1"})["status"].value("phase", "") == "Running"; }));
  CmdResult d = sim.kubectl({"delete", "widget", "owner"});
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_TRUE(wait_until(20, [&] {
    return sim.kubectl({"get", "configmap", "cm-1"}).code != 0 && sim.kubectl({"get", "service", "svc-1"}).code != 0 &&
           sim.kubectl({"get", "pod", "pod-1"}).code != 0;
  }));
}

TEST(KubesimGc, OrphanKeepsDependentsAndForegroundWaits) {
  Kubesim sim;
  ASSERT_EQ(sim.apply(widget_crd_yaml()).code, 0);
  ASSERT_EQ(sim.apply("apiVersion: example.dev/v1alpha1\nkind: Widget\nmetadata: {name: owner}\nspec: {size: 1}\n").code, 0);
  std::string uid = sim.get_json({"widget", "owner"})["metadata"]["uid"];
  ASSERT_EQ(sim.apply(dependents_yaml(uid, "o")).code, 0);
  CmdResult d = sim.kubectl({"delete", "widget", "owner", "--cascade=orphan"});
  ASSERT_EQ(d.code, 0) << d.err;
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  json cm = sim.get_json({"configmap", "cm-o"});
  ASSERT_TRUE(cm.is_object());
  EXPECT_FALSE(cm["metadata"].contains("ownerReferences"));

  ASSERT_EQ(sim.apply("apiVersion: example.dev/v1alpha1\nkind: Widget\nmetadata: {name: owner}\nspec: {size: 1}\n").code, 0);
  uid = sim.get_json({"widget", "owner"})["metadata"]["uid"];
  ASSERT_EQ(sim.apply(dependents_yaml(uid, "f")).code, 0);
  CmdResult f = sim.kubectl({"delete", "widget", "owner", "--cascade=foreground", "--timeout=20s"});
  ASSERT_EQ(f.code, 0) << f.err;
  EXPECT_NE(sim.kubectl({"get", "configmap", "cm-f"}).code, 0) << "dependents are gone before the owner";
  EXPECT_NE(sim.kubectl({"get", "widget", "owner"}).code, 0);
}

TEST(KubesimGc, NamespaceDeletionDeletesContents) {
  Kubesim sim;
  ASSERT_EQ(sim.kubectl({"create", "namespace", "scratch"}).code, 0);
  ASSERT_EQ(sim.kubectl({"create", "configmap", "x", "-n", "scratch"}).code, 0);
  CmdResult d = sim.kubectl({"delete", "namespace", "scratch", "--timeout=20s"});
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_NE(sim.kubectl({"get", "namespace", "scratch"}).code, 0);
  EXPECT_EQ(sim.http("GET", "/api/v1/namespaces/scratch/configmaps/x").code, 404);
}
